"""Registry entries of the fairness family (cvm_fairness): data only, importing this imports nothing."""

ENTRIES = {
    "data": {
        "synthetic_fair_tabular": "components.fairness.data:SyntheticFairTabular",
        "uci_adult": "components.fairness.data:UCIAdult",
    },
    "losses": {
        "cvm_dependence": "components.fairness.losses:CvMDependence",
        "hsic": "components.fairness.losses:HSIC",
    },
    "metrics": {
        "demographic_parity_gap": "components.fairness.metrics:DemographicParityGap",
        "equal_opportunity_gap": "components.fairness.metrics:EqualOpportunityGap",
    },
}
