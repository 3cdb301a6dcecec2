"""Stochastic minimax optimization: games with exact gap (bilinear, quadratic-bilinear), extragradient
and optimistic GDA with and without perturbation, an oracle-step data module and the minimax task.

Paper: specs/perturbed_eg/README.md.
"""
