"""Bayesian post-hoc components: ReLU rescaling symmetries, full-GGN Laplace, invariance analyses."""
