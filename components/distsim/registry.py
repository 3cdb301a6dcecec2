"""Registry entries of the distsim family (inkheart_m4): data only, importing this imports nothing."""

KINDS = {
    "distsim_problems": {
        "noun": "distributed-time problem",
        "contract": (
            "Nested in distributed_time's `problem:`: an nn.Module with dim, smoothness (L), grad(x), value(x), "
            "noisy_grad(x, count, generator) (the mean of `count` unbiased stochastic gradients, variance "
            "sigma^2 / count) and start(); batched over leading dimensions."),
    },
    "distributed_methods": {
        "noun": "distributed method",
        "contract": (
            "Nested in distributed_time's `method:`: reset(sim, x) once, then round(sim, x) -> (direction, seconds) "
            "per round (the server steps x - gamma direction; seconds a per-row tensor of simulated time); sim "
            "carries the problem, n, the workers' computation times h, kappa and the generator."),
    },
}

ENTRIES = {
    "distsim_problems": {"separable_valley": "components.distsim.problems:SeparableValley"},
    "distributed_methods": {
        "sgd": "components.distsim.methods:SGD",
        "sync_sgd": "components.distsim.methods:SyncSGD",
        "randk_sgd": "components.distsim.methods:RandKSGD",
        "m4": "components.distsim.methods:M4",
        "inkheart": "components.distsim.methods:Inkheart",
    },
    "tasks": {"distributed_time": "components.distsim.task:DistributedTime"},
    "claim_functions": {"interior_grid": "components.distsim.claims:interior_grid"},
}
