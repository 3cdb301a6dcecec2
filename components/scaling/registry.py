"""Registry entries of the scaling family (width parametrizations from a table, hybrid_mup; from
the traced program, autop; coordinate check, optimal learning rates): data only, importing this
imports nothing."""

KINDS = {
    "parametrizations": {
        "noun": "parametrization",
        "contract": (
            "Built with the spec's arguments; a model calls apply(model) after its init (rescales it, "
            "returns the logit multiplier) and groups(model) for its parameter_groups(); "
            "components/scaling/parametrization.py."),
    },
}

ENTRIES = {
    "parametrizations": {
        "sp": "components.scaling.parametrization:StandardParametrization",
        "mup": "components.scaling.parametrization:MuP",
    },
    "models": {"autop": "components.scaling.autop:AutoParametrized"},
    "analyses": {"scaling_exponents": "components.scaling.known:ExponentCheck"},
    "callbacks": {"coordinate_check": "components.scaling.coordinate_check:CoordinateCheck"},
    "claim_functions": {
        "basin_centre_lr": "components.scaling.optimal_lr:basin_centre_lr",
        "lr_shift_octaves": "components.scaling.optimal_lr:lr_shift_octaves",
        "lr_shift": "components.scaling.known:lr_shift",
    },
}
