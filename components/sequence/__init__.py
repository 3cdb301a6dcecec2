"""Sequence blocks and tiny causal LMs: attention kernels (softmax, linear attention with pluggable
feature maps), a Mamba-2 SSD mixer, a causal LM whose blocks take their mixers by name (hybrids
cycle a list of them), and the kernel-approximation
study of llops (see specs/llops/). Shared by the LM papers that follow."""
