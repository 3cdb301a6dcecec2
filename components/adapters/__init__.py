"""Low-rank adapters on any model's Linear layers: through `peft` (LoRA, rsLoRA, DoRA, PiSSA,
OLoRA, ...; MiLoRA's minor-component init here), PoLAR (orthonormal factors, the landing step of
`landing_adam`; polar.py), the effective rank of their updates (rank.py), the digits transfer task
that fine-tunes them, and multiple-choice data for an LLM backbone (choice.py).

Papers: specs/lora_reeval/README.md, specs/polar_vbll/README.md.
"""
