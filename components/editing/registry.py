"""Registry entries of the editing family (minchange_edit): data only, importing this imports nothing."""

KINDS = {
    "edit_rewards": {
        "noun": "edit reward",
        "contract": ("Nested in an editing task's `reward:`: called as reward(implemented, unintended) -> (B,) "
                     "rewards, from the judge's (B,) scores in [0, 1] (components/editing/rewards.py)."),
    },
}

ENTRIES = {
    "data": {"shapes_attributes": "components.editing.shapes:ShapesAttributes"},
    "models": {
        "factor_oracle": "components.editing.oracle:FactorOracle",
        "editing_world": "components.editing.world:EditingWorld",
    },
    "tasks": {
        "world_pretraining": "components.editing.world:WorldPretraining",
        "latent_edit_rl": "components.editing.task:LatentEditRL",
    },
    "edit_rewards": {
        "minimal_change": "components.editing.rewards:MinimalChange",
        "edit_only": "components.editing.rewards:EditOnly",
    },
}
