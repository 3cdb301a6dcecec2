"""Registry entries of the width-scaling family (autop): data only, importing this imports nothing."""

ENTRIES = {
    "models": {"autop": "components.scaling.autop:AutoParametrized"},
    "analyses": {"scaling_exponents": "components.scaling.known:ExponentCheck"},
    "claim_functions": {"lr_shift": "components.scaling.known:lr_shift"},
}
