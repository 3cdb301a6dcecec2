"""Binarized networks: binarization-aware layers (sign with STE or a stochastic mask), binary MLP and
ResNet, and the progressive binarization schedule (StoMPP).

Paper: specs/stompp/README.md.
"""
