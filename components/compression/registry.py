"""Registry entries of the compression family (scalebits): data only, importing this imports nothing.

Where it lives: the quantizer (round-to-nearest, groups, symmetric or with a zero point) is the
shared model piece `components.models.precision` (lpr_anomaly's `precision_reduced` uses it for
training under a precision constraint); this family holds what post-training compression adds on
top of it: hardware-aligned tiles with channel reordering, calibration sensitivities and bit
allocation, run as a `posthoc_analysis` on a trained model. Pruning or low-rank compression of a
later paper would go here too.
"""

ENTRIES = {
    "analyses": {"mixed_precision_ptq": "components.compression.allocation:MixedPrecisionPTQ"},
}
