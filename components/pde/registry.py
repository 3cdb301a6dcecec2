"""Registry entries of the PDE family (lgs_pde): trajectory data from spectral solvers, the latent
next-step transformer and its training / rollout task; data only, importing this imports nothing."""

ENTRIES = {
    "data": {
        "pde_trajectories": "components.pde.data:PDETrajectories",
        "the_well": "components.pde.well:TheWell",
    },
    "models": {"latent_transformer": "components.pde.model:LatentTransformer"},
    "tasks": {"latent_dynamics": "components.pde.task:LatentDynamics"},
}
