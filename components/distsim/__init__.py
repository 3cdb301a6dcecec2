"""Simulated distributed SGD on a clock: n workers with computation times h_i, a server linked to
each of them at kappa seconds per coordinate, compressed and uncompressed methods, and the task
that measures the simulated time to an epsilon-stationary point.

Paper: specs/inkheart_m4/README.md.
"""
