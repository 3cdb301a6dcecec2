"""Registry entries of the adapters family (lora_reeval, polar_vbll): data only, importing this imports nothing."""

ENTRIES = {
    "models": {
        "peft_lora": "components.adapters.lora:peft_lora",
        "polar_adapter": "components.adapters.polar:polar_adapter",
        "lm_last_token_classifier": "components.adapters.choice:LastTokenClassifier",
    },
    "data": {
        "digits_transfer": "components.adapters.data:DigitsTransfer",
        "multiple_choice_jsonl": "components.adapters.choice:MultipleChoiceJSONL",
    },
    "optimizers": {"landing_adam": "components.adapters.polar:LandingAdam"},
    "callbacks": {"update_rank": "components.adapters.rank:UpdateRank"},
    "claim_functions": {"column_at": "components.adapters.claims:column_at"},
}
