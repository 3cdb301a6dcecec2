"""Unsupervised anomaly detection (lpr_anomaly): AD data, reconstruction scoring, score metrics, detectors."""
