"""Registry entries of the Bayesian family (gamma_laplace, polar_vbll): data only, importing this imports nothing."""

ENTRIES = {
    "analyses": {"laplace_rescaling": "components.bayes.invariance:LaplaceRescaling"},
    "models": {
        "vbll_head": "components.bayes.heads:VBLLHead",
        "laplace_head": "components.bayes.heads:LaplaceHead",
        "with_head": "components.bayes.heads:with_head",
    },
    "tasks": {"bayesian_classification": "components.bayes.task:BayesianClassification"},
    "metrics": {
        "ece": "components.bayes.metrics:ExpectedCalibrationError",
        "nll": "components.bayes.metrics:NegativeLogLikelihood",
    },
}
