"""Registry entries of the causal family (causim): data only, importing this imports nothing."""

ENTRIES = {
    "data": {"causal_queries": "components.causal.queries:CausalQueries"},
    "tasks": {"language_modeling_by_group": "components.causal.task:LanguageModelingByGroup"},
}
