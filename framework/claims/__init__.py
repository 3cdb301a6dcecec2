"""Claims: a paper folder's qualitative results, stated declaratively and checked by `exp reproduce`.

`specs/<paper>/claims.yaml`:

    paper: cvm_fairness
    runs:                                   # alias -> a spec of this folder (+ overrides)
      base: {spec: sweep_seeds_unregularized.yaml}   # a spec with a sweep: the list of its trials
      cvm: {spec: sweep_seeds.yaml}         # sweep: {seeds: [0, 1, 2]}
      lam: {spec: sweep_lambda.yaml}
      big: {spec: paper_scale.yaml, tier: full}
    claims:
      - name: dp_gap_reduced
        kind: headline                      # headline | supporting | deviation
        over: mean                          # a headline: mean | every_seed, over >= 3 seeds
        text: CvM cuts the DP gap to <= 0.7x the unregularized run's (mean over 3 seeds)
        check: mean(column(cvm, 'test/demographic_parity_gap')) <= 0.7 * mean(column(base, 'test/demographic_parity_gap'))
        control: {text: the unregularized runs in place of CvM, replace: {cvm: base}}
      - name: gap_falls_with_lambda
        kind: supporting
        text: ...
        check: non_increasing(column(lam, 'test/demographic_parity_gap'), 0.02)
        control: {text: a flat curve, numbers: {lam: [{test/demographic_parity_gap: 0.3}, {test/demographic_parity_gap: 0.3}]}}

A check is an expression in a small, safe language (`framework.claims.expressions`): numbers and
strings; `+ - * / **`; comparisons; `and or not`; lists; `alias['metric']` (the run's final
metric; a staged spec's metrics are `'stage:split/name'`, e.g. `'laplace:test/nll'`); the
functions in `framework.claims.functions.FUNCTIONS`; `column(alias, 'metric')` and
`param(alias, 'key')`, a sweep's values in trial order; and `seed_mean`, `seed_sd`, `seed_param`,
the same per configuration (trials equal but for `seed`).

Kinds, seeds and controls: see `framework.claims.schema`. A claim whose negative control also
passes (or raises) fails; a deviation never passes nor fails, it reads NOT REPRODUCED.

Tiers (`framework.claims.schema`): runs and claims are `tier: default` unless marked
`tier: full`. `exp reproduce specs/<paper>/` obtains the default-tier runs (reusing finished runs
with the same operative-spec hash, unless --fresh) and checks the default-tier claims;
`--full` does every tier. It prints `headline reproduced: yes/NO/not run`, then a table
(full-tier claims it skipped read `full tier, not run`, neither pass nor fail), logs it to
MLflow, optionally rewrites the table in the folder's README.md between `<!-- claims:begin -->`
and `<!-- claims:end -->`, and exits non-zero when a headline or supporting claim fails.

Modules: `schema` (the file and its checks), `expressions` (the check language), `functions`
(what a check can call), `report` (the table and the README), `figures` (a figure per claim, linked
under the README's table), `reproduction` (obtaining the runs, checking, logging), `papers` (the repository README's table
of papers, read from the papers' generated tables).
"""

from framework.claims.expressions import ACCESSORS, Numbers, control_results, evaluate, parse_check, used_aliases
from framework.claims.outcome import Outcome
from framework.claims.functions import FUNCTIONS
from framework.claims.report import BEGIN, END, NOT_RUN, headline, readme_table, rewrite_readme, table, table_differences
from framework.claims.reproduction import TrialResult, obtain_all, readme_block, report, reproduce
from framework.claims.schema import (
    CLAIMS_FILE, DEFAULT_TIER, FULL_TIER, MIN_SEEDS, Claim, ClaimsFile, Control, RunRef, in_tier, load_claims,
)

__all__ = [
    "ACCESSORS", "BEGIN", "CLAIMS_FILE", "DEFAULT_TIER", "END", "FULL_TIER", "FUNCTIONS", "MIN_SEEDS", "NOT_RUN",
    "Claim", "ClaimsFile", "Control", "Numbers", "Outcome", "RunRef", "TrialResult", "control_results", "evaluate",
    "headline", "in_tier", "load_claims", "obtain_all", "parse_check", "readme_block", "readme_table", "report",
    "reproduce", "rewrite_readme", "table", "table_differences", "used_aliases",
]
