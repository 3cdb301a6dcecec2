"""Sequence blocks and tiny causal LMs: attention kernels (softmax, linear attention with pluggable
feature maps), a causal LM whose block takes its mixer by name, and the kernel-approximation
study of llops (see specs/llops/). Shared by the LM papers that follow."""
