"""Sequence blocks and tiny causal LMs: attention kernels (softmax, linear attention with pluggable
feature maps), a Mamba-2 SSD mixer, a causal LM whose blocks take their mixers by name (hybrids
cycle a list of them). Shared building blocks of the LM papers (autop, causim, hybrid_mup,
latent_debate, lhdlm, llops, tokenhd) and of lgs_pde's latent transformer; declared in
components/registry.py."""
