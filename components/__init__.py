"""Registered building blocks, by kind. Plain typed classes; nothing here imports `framework`."""
