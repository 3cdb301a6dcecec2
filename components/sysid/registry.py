"""Registry entries of the sysid family (drift_sysid): data only, importing this imports nothing."""

KINDS = {
    "step_rules": {
        "noun": "step rule",
        "contract": (
            "Nested in online_identification's `learners:`: reset(streams, dim, radius) once, then per time "
            "step step_size(t) -> (streams,) numpy steps and observe(move, phi, residual, mask); `label` names it "
            "in metric keys; `proxy` (streams,) is its proxy of the local path variation and `indicator` (streams,) its "
            "residual proxy read as a health indicator, each or None."),
    },
}

ENTRIES = {
    "step_rules": {
        "fixed_step": "components.sysid.step_rules:FixedStep",
        "inv_sqrt_step": "components.sysid.step_rules:InverseSqrtStep",
        "residual_adaptive": "components.sysid.step_rules:ResidualAdaptiveStep",
    },
    "data": {
        "drifting_linear": "components.sysid.streams:DriftingLinear",
        "synthetic_degradation": "components.sysid.streams:SyntheticDegradation",
        "cmapss": "components.sysid.streams:CMAPSS",
    },
    "tasks": {"online_identification": "components.sysid.task:OnlineIdentification"},
}
