"""Registry entries of the discrete-diffusion family (lhdlm): data only, importing this imports
nothing. Its objectives build on the shared masked diffusion (components/generative/masked_diffusion.py)."""

ENTRIES = {
    "data": {"hierarchical_language": "components.discrete_diffusion.data:HierarchicalLanguage"},
    "tasks": {"discrete_diffusion_lm": "components.discrete_diffusion.task:DiscreteDiffusionLM"},
}
