"""Sparse autoencoders on a language model's activations: TopK / BatchTopK SAEs, a replay activation
buffer, FVU, the SAE training task and the data-constrained scaling law fitted over a sweep.

Paper: specs/sae_replay/README.md.
"""
