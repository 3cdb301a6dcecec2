"""Generative building blocks shared by several papers: flow matching and its ODE sampler
(flowgda, lgs_pde), a small conv VAE (lgs_pde, minchange_edit), the masked discrete-diffusion LM
objective (lhdlm). Declared in components/registry.py."""
