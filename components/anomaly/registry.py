"""Registry entries of the anomaly family (lpr_anomaly): data only, importing this imports nothing.

The precision constraint LPR puts on an autoencoder's layers is the shared model wrapper
`precision_reduced` (components/models/precision.py); this family holds the anomaly-detection
side: data with anomaly labels, reconstruction scoring, score metrics and classical detectors.
"""

KINDS = {
    "detectors": {
        "noun": "detector",
        "contract": (
            "Nested in outlier_detector's `detector:`; built with the spec's arguments, an unfitted estimator with "
            "fit(X) and score_samples(X) -> (N,) scores, higher for normal rows (scikit-learn's outlier detectors)."),
    },
}

ENTRIES = {
    "detectors": {
        "isolation_forest": "components.anomaly.detectors:isolation_forest",
        "one_class_svm": "components.anomaly.detectors:one_class_svm",
    },
    "data": {
        "collective_manifold": "components.anomaly.data:CollectiveManifold",
        "sklearn_anomalies": "components.anomaly.data:SklearnAnomalies",
        "odds_file": "components.anomaly.data:ODDSFile",
    },
    "metrics": {
        "anomaly_auroc": "components.anomaly.metrics:AnomalyAUROC",
        "anomaly_average_precision": "components.anomaly.metrics:AnomalyAveragePrecision",
    },
    "tasks": {
        "reconstruction_anomaly": "components.anomaly.task:ReconstructionAnomaly",
        "outlier_detector": "components.anomaly.task:OutlierDetector",
    },
}
