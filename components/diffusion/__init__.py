"""Diffusion components: denoisers (a tiny token-conditioned UNet; SD2.1/SDXL/FLUX pipelines from
diffusers), attention recording, defect localization, masked re-noising, samplers (LoTTS,
Best-of-N) and verifiers. diffusers and transformers are imported lazily (the `diffusion` extra),
so these modules import without them; building a component that needs them says so.

Paper: LoTTS, "Scale Where It Matters: Localized Test-Time Scaling for diffusion" (arXiv
2511.19917); see specs/lotts/README.md.
"""
