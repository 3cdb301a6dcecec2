"""Registry entries of the adapters family (lora_reeval): data only, importing this imports nothing."""

ENTRIES = {
    "models": {"peft_lora": "components.adapters.lora:peft_lora"},
    "data": {
        "digits_transfer": "components.adapters.data:DigitsTransfer",
    },
    "claim_functions": {"column_at": "components.adapters.claims:column_at"},
}
