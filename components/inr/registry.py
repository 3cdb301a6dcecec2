"""Registry entries of the INR-hypernetwork family (attn_hypernet_inr): data only, importing this
imports nothing. Models are called as model(x), x (B, P, coords + values) -> values (B, P, C)."""

ENTRIES = {
    "models": {
        "attn_rollout_hypernet": "components.inr.hypernets:AttnRolloutHypernet",
        "trans_inr_hypernet": "components.inr.hypernets:TransINRHypernet",
        "mlp_rollout_hypernet": "components.inr.hypernets:MLPRolloutHypernet",
        "learned_init_k_steps": "components.inr.hypernets:LearnedInitKSteps",
        "per_signal_fit": "components.inr.hypernets:PerSignalFit",
    },
    "data": {"coord_signal": "components.inr.data:CoordSignal"},
    "metrics": {"psnr": "components.inr.metrics:PSNR"},
}
