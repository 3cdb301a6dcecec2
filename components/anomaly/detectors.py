"""Classical outlier detectors from scikit-learn, the baselines of the anomaly family: each
function builds an unfitted estimator with fit(X) and score_samples(X) (higher = more normal),
typed so that a spec's arguments are checked like any component's.

Local Outlier Factor is not offered: with sklearn's novelty=True it may not score the rows it was
fitted on (the transductive protocol), and without it it has no score_samples.
"""

from __future__ import annotations

from typing import Literal

from sklearn.ensemble import IsolationForest
from sklearn.svm import OneClassSVM

from components.types import OpenFraction, PositiveFloat, PositiveInt


def isolation_forest(n_estimators: PositiveInt = 100, max_samples: PositiveInt | None = None,
                     seed: int = 0) -> IsolationForest:
    """Isolation Forest (Liu et al. 2008): rows isolated by few random splits are anomalous.

    Args:
        n_estimators: Trees in the forest.
        max_samples: Rows drawn per tree; null: min(256, N) (sklearn's "auto").
        seed: The forest's random_state.
    """
    return IsolationForest(n_estimators=n_estimators, max_samples="auto" if max_samples is None else max_samples,
                           random_state=seed)


def one_class_svm(nu: OpenFraction = 0.5, kernel: Literal["rbf", "linear", "poly", "sigmoid"] = "rbf",
                  gamma: PositiveFloat | None = None) -> OneClassSVM:
    """One-class SVM (Schoelkopf et al. 2001): distance outside a kernel support region.

    Args:
        nu: Upper bound on the share of training rows outside the region, in (0, 1).
        kernel: The kernel.
        gamma: Kernel coefficient; null: sklearn's "scale", 1 / (d * Var(X)).
    """
    return OneClassSVM(nu=nu, kernel=kernel, gamma="scale" if gamma is None else gamma)
