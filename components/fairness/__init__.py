"""Group fairness: a Cramer-von-Mises dependence penalty on soft ranks (and HSIC for comparison),
demographic-parity / equal-opportunity gap metrics, biased synthetic tabular data and UCI Adult.

Paper: specs/cvm_fairness/README.md.
"""
