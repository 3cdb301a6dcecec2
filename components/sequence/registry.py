"""Registry entries of the sequence family (sequence blocks, tiny LMs; llops): data only,
importing this imports nothing."""

KINDS = {
    "feature_maps": {
        "noun": "feature map",
        "contract": (
            "A factory: linear attention (or kernel_approximation) calls feature_map(head_dim=...) -> an "
            "nn.Module mapping (..., head_dim) -> (..., num_features) with phi(q) . phi(k) >= 0; attribute "
            "num_features, and degree when it approximates the polynomial kernel (q . k)^degree; "
            "components/sequence/feature_maps.py."),
        "runtime": ["head_dim"],
        "factory": True,
    },
    "sequence_mixers": {
        "noun": "sequence mixer",
        "contract": (
            "A factory: a sequence model calls mixer(d_model=...) once per layer -> an nn.Module mapping "
            "(B, L, d_model) -> (B, L, d_model) causally (position t reads positions <= t); "
            "components/sequence/attention.py."),
        "runtime": ["d_model"],
        "factory": True,
    },
}

ENTRIES = {
    "feature_maps": {
        "elu1": "components.sequence.feature_maps:Elu1",
        "polysketch_random": "components.sequence.feature_maps:PolySketchRandom",
        "llops_learned": "components.sequence.feature_maps:LLoPSLearned",
    },
    "sequence_mixers": {
        "softmax_attention": "components.sequence.attention:SoftmaxAttention",
        "linear_attention": "components.sequence.attention:LinearAttention",
        "ssd_mamba2": "components.sequence.ssm:SSDMixer",
    },
    "models": {"causal_lm": "components.sequence.lm:CausalLM"},
    "data": {
        "query_key_pairs": "components.sequence.kernels:QueryKeyPairs",
        "spike_adding": "components.sequence.spike_adding:SpikeAdding",
    },
    "tasks": {"kernel_approximation": "components.sequence.kernels:KernelApproximation"},
}
