"""Gradual domain adaptation (flowgda): domain sequences, an encoder-classifier, and the task with
FlowGDA and its baselines (source-only, gradual and direct self-training)."""
