"""Registry entries of the sparse-autoencoder family (sae_replay, brain_sae): data only, importing this imports nothing."""

ENTRIES = {
    "models": {
        "topk_sae": "components.sae.models:TopKSAE",
        "batchtopk_sae": "components.sae.models:BatchTopKSAE",
    },
    "data": {
        "activation_buffer": "components.sae.activations:ActivationBuffer",
        "synthetic_semantic_brain": "components.sae.brain_data:SyntheticSemanticBrain",
        "story_fmri": "components.sae.brain_data:StoryFMRI",
    },
    "metrics": {"fvu": "components.sae.metrics:FractionOfVarianceUnexplained"},
    "tasks": {
        "sae_training": "components.sae.task:SAETraining",
        "coupled_encoding": "components.sae.brain:CoupledEncoding",
        "ridge_encoding": "components.sae.brain:RidgeEncoding",
    },
    "claim_functions": {
        "data_constrained_r2": "components.sae.laws:data_constrained_r2",
        "data_constrained_held_out_ratio": "components.sae.laws:data_constrained_held_out_ratio",
    },
}
