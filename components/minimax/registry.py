"""Registry entries of the minimax family (perturbed_eg): data only, importing this imports nothing."""

KINDS = {
    "problems": {
        "noun": "problem",
        "contract": (
            "A game for algorithm studies, nested in a task's `problem:`: an nn.Module of float64 buffers with "
            "dim_x, dim_y, project_x(x), project_y(y), grad(x, y, generator) -> (gx, gy) (noisy oracle: exact "
            "gradient + sigma * N(0, I)), gap(x, y) (exact primal-dual gap), center(), sample(batch, generator)."),
    },
    "minimax_algorithms": {
        "noun": "minimax algorithm",
        "contract": (
            "Nested in a minimax task's `algorithm:`: reset(problem, x, y, horizon) once, then "
            "step(problem, x, y, t, generator) -> (x, y) per iteration; step_size(t), regularization(t) and "
            "oracle_calls_per_step describe it."),
    },
}

ENTRIES = {
    "problems": {
        "bilinear_game": "components.minimax.games:BilinearGame",
        "quadratic_bilinear_game": "components.minimax.games:QuadraticGame",
    },
    "minimax_algorithms": {
        "seg": "components.minimax.algorithms:StochasticExtragradient",
        "sogda": "components.minimax.algorithms:StochasticOptimisticGDA",
        "perturbed_seg": "components.minimax.algorithms:PerturbedExtragradient",
        "perturbed_sogda": "components.minimax.algorithms:PerturbedOptimisticGDA",
    },
    "data": {"oracle_steps": "components.minimax.oracle:OracleSteps"},
    "tasks": {"minimax": "components.minimax.task:Minimax"},
}
