"""Registry entries of the ELM family (elm_budget): data only, importing this imports nothing."""

ENTRIES = {
    "models": {
        "elm_network": "components.elm.network:ELMNetwork",
        "elm_budget_network": "components.elm.network:ELMBudgetNetwork",
    },
    "data": {"shd_adding": "components.elm.shd:SHDAdding"},
}
