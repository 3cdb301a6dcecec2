"""Orthonormal function bases learned as paths on the orthogonal group (a neural ODE on a Lie group):
reference bases on the torus, finite-rank skew generators, structure-preserving integrators, the
learned basis, functional data, basis objectives (PCA, operator eigenfunctions) and their task.

Paper: specs/lie_bases/README.md.
"""
