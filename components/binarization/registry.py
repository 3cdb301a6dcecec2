"""Registry entries of the binarization family (stompp): data only, importing this imports nothing."""

ENTRIES = {
    "models": {
        "binary_mlp": "components.binarization.models:BinaryMLP",
        "binary_resnet": "components.binarization.models:BinaryResNet",
    },
    "callbacks": {
        "progressive_binarization": "components.binarization.schedule:ProgressiveBinarization",
    },
}
