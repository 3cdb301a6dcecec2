"""Low-rank adapters on any model's Linear layers through `peft` (LoRA, rsLoRA, DoRA, PiSSA,
OLoRA, ...; MiLoRA's minor-component init here), and the digits transfer task that fine-tunes them.

Paper: specs/lora_reeval/README.md.
"""
