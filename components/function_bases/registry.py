"""Registry entries of the function_bases family (lie_bases): data only, importing this imports nothing."""

KINDS = {
    "reference_bases": {
        "noun": "reference basis",
        "contract": (
            "A fixed orthonormal basis of M functions on the torus [0, 1)^dim, nested in a basis model's "
            "`reference:`: an nn.Module with size, dim and evaluate(points (n, dim), derivatives) -> "
            "(values (n, M), gradients (n, M, dim) or None)."),
    },
    "skew_generators": {
        "noun": "skew generator",
        "contract": (
            "The vector field of a flow on the orthogonal group, nested in `lie_basis`'s `generator:`: an "
            "nn.Module with dim, points (its quadrature grid) and matrix(t, reference_values) -> a skew M x M "
            "matrix, the generator on the reference span."),
    },
    "integrators": {
        "noun": "integrator",
        "contract": (
            "A fixed-step scheme for a linear matrix ODE dY/dt = A(t) Y, nested in an `integrator:`: "
            "integrate(field, y0, t0, t1) -> Y(t1) with field(t) -> A(t); preserves_orthogonality says whether "
            "Y stays orthogonal when A is skew."),
    },
    "basis_objectives": {
        "noun": "basis objective",
        "contract": (
            "What a basis is learned for, nested in the basis_learning task's `objective:`: loss(basis, batch) -> "
            "scalar to minimize, report(basis, batch) -> {name: float} test metrics on the batch's grid."),
    },
}

ENTRIES = {
    "reference_bases": {"fourier_basis": "components.function_bases.bases:FourierBasis"},
    "skew_generators": {"skew_finite_rank_nn": "components.function_bases.generators:SkewFiniteRankNN"},
    "integrators": {
        "cayley": "components.function_bases.integrators:Cayley",
        "matrix_exp": "components.function_bases.integrators:MatrixExp",
        "rk4": "components.function_bases.integrators:RK4",
    },
    "basis_objectives": {
        "captured_variance": "components.function_bases.objectives:CapturedVariance",
        "rayleigh_quotient": "components.function_bases.objectives:RayleighQuotient",
    },
    "models": {
        "lie_basis": "components.function_bases.models:LieBasis",
        "fixed_basis": "components.function_bases.models:FixedBasis",
    },
    "data": {
        "gp_functions": "components.function_bases.data:GaussianProcessFunctions",
        "sturm_liouville": "components.function_bases.data:SturmLiouville",
    },
    "tasks": {"basis_learning": "components.function_bases.task:BasisLearning"},
}
