"""Registry entries of the interpretability family (latent_debate): data only, importing this imports nothing."""

ENTRIES = {
    "data": {
        "true_false_kb": "components.interpretability.statements:TrueFalseKnowledgeBase",
        "true_false_statements": "components.interpretability.statements:TrueFalseStatementsFile",
    },
    "analyses": {"latent_debate": "components.interpretability.debate:LatentDebate"},
}
