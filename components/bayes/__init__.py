"""Bayesian components: ReLU rescaling symmetries, full-GGN Laplace, invariance analyses
(gamma_laplace); Bayesian last layers (VBLL, post-hoc last-layer Laplace), calibration metrics and
the task that trains them (polar_vbll)."""
