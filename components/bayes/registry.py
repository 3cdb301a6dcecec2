"""Registry entries of the Bayesian family (gamma_laplace): data only, importing this imports nothing."""

ENTRIES = {
    "analyses": {"laplace_rescaling": "components.bayes.invariance:LaplaceRescaling"},
}
