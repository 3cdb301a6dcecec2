"""Registry entries of the shared building blocks (data only: importing this imports nothing).

A piece lives here when more than one family uses it, or clearly could; a family's own pieces are
declared in components/<family>/registry.py. Kinds and their build contracts: registry.py.
"""

# Kinds of the shared sequence blocks (components/sequence/), used by the LM papers.
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
    "models": {
        "mlp": "components.models.mlp:MLP",
        "mlp_mixer": "components.models.mixer:MLPMixer",
        "small_cnn": "components.models.cnn:SmallCNN",
        "transformer_lm": "components.models.transformer_lm:TransformerLM",
        "pretrained_causal_lm": "components.models.pretrained_lm:PretrainedCausalLM",
        "precision_reduced": "components.models.precision:PrecisionReduced",
        "causal_lm": "components.sequence.lm:CausalLM",
        "velocity_mlp": "components.generative.flow_matching:VelocityMLP",
        "conv_vae": "components.generative.vae:ConvVAE",
    },
    "data": {
        "synthetic_classification": "components.data.synthetic:SyntheticClassification",
        "synthetic_regression": "components.data.synthetic:SyntheticRegression",
        "sklearn_dataset": "components.data.sklearn:SklearnDataset",
        "csv_table": "components.data.csv:CSVTable",
        "fashion_mnist": "components.data.images:FashionMNIST",
        "cifar": "components.data.images:CIFAR",
        "image_folder": "components.data.images:ImageFolder",
        "char_text": "components.data.text:CharText",
        "token_file": "components.data.text:TokenFile",
        "mqar": "components.data.recall:MQAR",
        "corrupted_facts": "components.data.facts:CorruptedFacts",
        "spike_adding": "components.data.spike_adding:SpikeAdding",
        "instruction_jsonl": "components.data.instructions:InstructionJSONL",
    },
    "losses": {
        "cross_entropy": "components.losses.basic:CrossEntropy",
        "mse": "components.losses.basic:MSE",
        "bce": "components.losses.basic:BCE",
        "weighted_sum": "components.losses.basic:WeightedSum",
    },
    "optimizers": {
        "sgd": "components.optim.optimizers:SGD",
        "adam": "components.optim.optimizers:Adam",
        "adamw": "components.optim.optimizers:AdamW",
    },
    "schedulers": {
        "cosine": "components.optim.schedulers:cosine_with_warmup",
        "step": "components.optim.schedulers:step_decay",
    },
    "metrics": {
        "accuracy": "components.metrics.standard:Accuracy",
        "auroc": "components.metrics.standard:AUROC",
        "f1": "components.metrics.standard:F1",
        "mse": "components.metrics.standard:MeanSquaredError",
        "mae": "components.metrics.standard:MeanAbsoluteError",
        "rmse": "components.metrics.standard:RootMeanSquaredError",
        "r2": "components.metrics.standard:R2Score",
        "masked_accuracy": "components.metrics.recall:MaskedAccuracy",
    },
    "callbacks": {
        "checkpoint": "lightning.pytorch.callbacks:ModelCheckpoint",
        "early_stopping": "lightning.pytorch.callbacks:EarlyStopping",
        "lr_monitor": "components.callbacks.lr_monitor:LearningRateMonitor",
        "progress_bar": "components.callbacks.progress:progress_bar",
        "progress_lines": "components.callbacks.progress:ProgressLines",
        "parameter_count": "components.callbacks.parameter_count:ParameterCount",
        "resume_checkpoint": "components.callbacks.resume:ResumeCheckpoint",
    },
    "tasks": {
        "classification": "components.tasks.supervised:Classification",
        "regression": "components.tasks.supervised:Regression",
        "loss_profile": "components.tasks.profiling:LossProfile",
        "posthoc_analysis": "components.tasks.posthoc:PosthocAnalysis",
        "language_modeling": "components.tasks.language_modeling:LanguageModeling",
        "autoencoding": "components.generative.task:Autoencoding",
    },
    "claim_functions": {
        "slope": "components.claim_functions.curves:slope",
        "loglog_slope": "components.claim_functions.curves:loglog_slope",
        "r2": "components.claim_functions.curves:r2",
        "non_increasing": "components.claim_functions.curves:non_increasing",
        "non_decreasing": "components.claim_functions.curves:non_decreasing",
        "interpolate": "components.claim_functions.curves:interpolate",
        "spread": "components.claim_functions.selection:spread",
        "value_at": "components.claim_functions.selection:value_at",
        "argmax_param": "components.claim_functions.selection:argmax_param",
        "argmin_param": "components.claim_functions.selection:argmin_param",
    },
}
