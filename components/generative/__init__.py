"""Generative building blocks shared by several papers."""
