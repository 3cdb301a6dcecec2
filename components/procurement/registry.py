"""Registry entries of the procurement family (bfmnet): data only, importing this imports nothing."""

KINDS = {
    "mechanisms": {
        "noun": "mechanism",
        "contract": (
            "A procurement mechanism, nested in a task's `mechanism:` or `baselines:`: an nn.Module called as "
            "mechanism(market, bids, relaxed=False) -> (accept, payments), each (N, n), accept 0/1 (soft in [0, 1] "
            "when relaxed, for training); `label` names it in metric keys. Market: dict of weights (N, m), cover "
            "(N, n, m), costs (N, n), budget (N,) (components.procurement.markets)."),
    },
    # Not the diffusion family's `verifiers` (image scorers): these check a mechanism's guarantees.
    "mechanism_verifiers": {
        "noun": "mechanism verifier",
        "contract": (
            "Called at test time as verifier(mechanism, market) -> dict[str, float], where mechanism(market, bids) "
            "-> (accept, payments) and market holds the true `costs` (N, n) and `budget` (N,); the task logs each "
            "key as 'test/<key>'."),
    },
}

ENTRIES = {
    "mechanisms": {
        "menu_net": "components.procurement.mechanisms:MenuNet",
        "uniform_posted": "components.procurement.mechanisms:UniformPosted",
        "proportional_posted": "components.procurement.mechanisms:ProportionalPosted",
        "sequential_proportional_share": "components.procurement.mechanisms:SequentialProportionalShare",
        "proportional_share": "components.procurement.mechanisms:ProportionalShare",
    },
    "mechanism_verifiers": {
        "misreport_grid": "components.procurement.verifiers:MisreportGrid",
        "budget_check": "components.procurement.verifiers:BudgetCheck",
        "ir_check": "components.procurement.verifiers:IRCheck",
    },
    "data": {"random_markets": "components.procurement.markets:RandomMarkets"},
    "tasks": {"mechanism_design": "components.procurement.task:MechanismDesign"},
}
