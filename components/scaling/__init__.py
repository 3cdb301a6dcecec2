"""Width scaling: parametrizations (SP, muP) that set init, output multiplier and per-group learning
rates, the coordinate check, and the optimal-learning-rate functions of LR-transfer claims
(hybrid_mup, see specs/hybrid_mup/)."""
