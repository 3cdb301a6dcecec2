"""Registry entries of the hallucination-detection family (tokenhd): data only, importing this
imports nothing. Its synthetic data engine, `corrupted_facts`, is shared (components/registry.py)."""

ENTRIES = {
    "data": {"token_label_file": "components.hallucination.data:TokenLabelFile"},
    "tasks": {"token_hallucination_detection": "components.hallucination.task:TokenHallucinationDetection"},
}
