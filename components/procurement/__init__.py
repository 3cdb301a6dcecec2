"""Budget-feasible procurement mechanisms learned against a simulator: random markets (additive
and coverage valuations), posted-price mechanisms (a learned menu network and classical ones),
Singer's proportional-share mechanism, verifiers (misreport grid, budget, IR) and the
mechanism-design task.

Paper: specs/bfmnet/README.md.
"""
