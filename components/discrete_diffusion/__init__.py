"""Discrete diffusion language models with a learnable token hierarchy (lhdlm)."""
