"""Registry entries of the sysid family (drift_sysid, monotone_barrier, lmi_observer): data only, importing this imports nothing."""

KINDS = {
    "monotone_systems": {
        "noun": "monotone system",
        "contract": (
            "Nested in barrier_synthesis's `system:`: a black-box simulator, step(x) mapping a numpy batch (B, dim) "
            "to the next states (B, dim) inside [0, high]^dim, monotone (x <= y componentwise gives step(x) <= "
            "step(y)); attributes dim, high, init_high (the initial set [0, init_high]^dim) and unsafe_low (the "
            "unsafe set {max_i x_i >= unsafe_low}); components/sysid/monotone.py."),
    },
    "step_rules": {
        "noun": "step rule",
        "contract": (
            "Nested in online_identification's `learners:`: reset(streams, dim, radius) once, then per time "
            "step step_size(t) -> (streams,) numpy steps and observe(move, phi, residual, mask); `label` names it "
            "in metric keys; `proxy` (streams,) is its proxy of the local path variation and `indicator` (streams,) its "
            "residual proxy read as a health indicator, each or None."),
    },
    "dynamical_systems": {  # lmi_observer
        "noun": "dynamical system",
        "contract": (
            "A plant in Lur'e form dz/dt = A z + B phi(H z) + G u(t), y = C z + v, nested in observer_trajectories' "
            "`system:` (components/sysid/systems.py): state_dim, output_dim, names, float64 arrays A, B, G, H, C, "
            "slope_low/slope_high (phi's global slope bounds), phi(s), input(t), field(z, t), "
            "sample_states(rng, n), ranges (the initial-state box) and linearization(slope)."),
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
        "observer_trajectories": "components.sysid.observer_data:ObserverTrajectories",  # lmi_observer
    },
    "tasks": {
        "online_identification": "components.sysid.task:OnlineIdentification",
        "barrier_synthesis": "components.sysid.certify:BarrierSynthesis",  # monotone_barrier
        "neural_observer": "components.sysid.observer_task:NeuralObserverTraining",  # lmi_observer
    },
    # monotone_barrier
    "monotone_systems": {"freeway_ctm": "components.sysid.monotone:FreewayCTM"},
    "claim_functions": {"loglog_slopes_by_seed": "components.sysid.claims:loglog_slopes_by_seed"},
    # lmi_observer
    "dynamical_systems": {"disturbed_pendulum": "components.sysid.systems:DisturbedPendulum"},
    "models": {"nn_observer": "components.sysid.observer:NNObserver"},
}
