"""Registry entries of the merging family (lmc_dual_merge): data only, importing this imports nothing.

Where it lives: the function-preserving symmetry transforms of a ReLU MLP (hidden-unit
permutations, hard or relaxed through Sinkhorn, and positive per-unit scalings), weight matching
(Git Re-Basin, scipy's linear_sum_assignment) and the learned alignments (one-sided, dual) are
components/merging/symmetry.py; the loss barrier along the linear path between two endpoints is
the analysis `lmc_barrier` (components/merging/lmc.py), run as a `posthoc_analysis` on the model
`endpoint_pair` (two independently initialized members trained in two stages). The transformer
symmetries (head permutation, residual rotation, norm absorption) of the paper would go here too.
"""

ENTRIES = {
    "models": {"endpoint_pair": "components.merging.pair:EndpointPair"},
    "analyses": {"lmc_barrier": "components.merging.lmc:LMCBarrier"},
}
