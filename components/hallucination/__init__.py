"""Hallucination detection (tokenhd): token-level detectors and their baselines."""
