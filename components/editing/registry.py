"""Registry entries of the editing family (minchange_edit): data only, importing this imports nothing."""

KINDS = {
    "edit_rewards": {
        "noun": "edit reward",
        "contract": ("Nested in an editing task's `reward:`: called as reward(implemented, unintended) -> (B,) "
                     "rewards, from the judge's (B,) scores in [0, 1] (components/editing/rewards.py)."),
    },
    "edit_judges": {
        "noun": "edit judge",
        "contract": ("Nested in an editing task's `judge:`: called as judge(source, edited, instructions) -> "
                     "{'implemented', 'unintended'} (B,) scores in [0, 1] (components/editing/paper.py)."),
    },
}

ENTRIES = {
    "data": {
        "shapes_attributes": "components.editing.shapes:ShapesAttributes",
        "edit_instructions": "components.editing.paper:EditInstructions",
    },
    "models": {
        "factor_oracle": "components.editing.oracle:FactorOracle",
        "editing_world": "components.editing.world:EditingWorld",
        "instruct_pix2pix_editor": "components.editing.paper:InstructPix2PixEditor",
    },
    "tasks": {
        "world_pretraining": "components.editing.world:WorldPretraining",
        "latent_edit_rl": "components.editing.task:LatentEditRL",
        "edit_evaluation": "components.editing.paper:EditEvaluation",
    },
    "edit_rewards": {
        "minimal_change": "components.editing.rewards:MinimalChange",
        "edit_only": "components.editing.rewards:EditOnly",
    },
    "edit_judges": {"agentic_vlm_judge": "components.editing.paper:AgenticVLMJudge"},
}
