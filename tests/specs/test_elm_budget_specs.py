"""elm_budget's specs: every split of the budget sweeps spends its budget exactly (the allocation
and the built model agree); a run logs its parameter count; the paper-scale specs stop at once
without their data, naming what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from components.callbacks.parameter_count import trainable_parameters
from components.elm.budget import allocate
from components.elm.network import ELMBudgetNetwork
from framework.claims.expressions import Numbers, evaluate
from framework.claims.schema import load_claims
from framework.loader import load_spec
from framework.plan import expand_sweep
from framework.runner import run

SPECS = Path(__file__).resolve().parents[2] / "specs/elm_budget"
SHRINK = ["trainer.max_steps=2", "data.num_train=64", "data.num_test=64"]


@pytest.mark.parametrize("sweep", ["sweep_budget_small.yaml", "sweep_budget_large.yaml", "sweep_lr_budget_small.yaml",
                                   "sweep_lr_budget_large.yaml"])
def test_every_split_of_a_budget_sweep_spends_it_exactly(sweep: str) -> None:
    """Not a claim (issue 33: the allocator makes it true by construction), a test of the allocator on
    every split the claims read: the default tier's k_e sweeps and the full tier's per-split rate sweeps."""
    base = load_spec(SPECS / sweep).data
    trials = expand_sweep(load_spec(SPECS / sweep))
    splits = {trial.values.get("model.k_e") for trial in trials} - {None} or {1, 4, 16}  # claims.yaml's overrides
    assert len(splits) >= 3
    model = base["model"]
    for k_e in sorted(splits):
        args = {k: v for k, v in model.items() if k != "type"} | {"k_e": k_e}
        split = allocate(args["budget"], k_e, args["k_c"], args["in_features"], args["out_features"], 4)
        assert split.residual == 0, f"{sweep}: k_e={k_e} misses the budget by {split.residual}"
        for seed in (0, 1):  # the seed redraws the wiring, not the count
            torch.manual_seed(seed)
            assert trainable_parameters(ELMBudgetNetwork(**args)) == args["budget"]


def test_a_run_logs_its_trainable_parameters(tracked: str) -> None:
    result = run(SPECS / "tiny.yaml", SHRINK)
    assert result.metrics["model/trainable_parameters"] == 2665   # parameter_count(16, 8, 128, 4, 9)


def test_shd_adding_without_the_files_stops_at_start(tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_SHD", raising=False)
    with pytest.raises(FileNotFoundError, match=r"shd_adding: SHD files not found \(\$EXPSPEC_SHD = \(unset\); "
                                                r"missing shd_train.h5, shd_test.h5\).* Nothing is downloaded"):
        run(SPECS / "shd_adding.yaml", SHRINK)


def test_enwik8_without_the_file_stops_at_start(tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_ENWIK8", raising=False)
    with pytest.raises(FileNotFoundError, match=r"token_file: token ids not found \(\$EXPSPEC_ENWIK8 = \(unset\)\)"):
        run(SPECS / "enwik8.yaml", ["trainer.max_steps=2"])


def test_enwik8_runs_on_a_local_byte_file(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "enwik8"
    data.write_bytes(b"<page><title>Anarchism</title> the quick brown fox jumps over the lazy dog. " * 40)
    monkeypatch.setenv("EXPSPEC_ENWIK8", str(data))
    result = run(SPECS / "enwik8.yaml", ["model.budget=20000", "data.seq_len=16", "data.batch_size=4",
                                         "data.val_fraction=0.1", "data.test_fraction=0.1", "trainer.max_steps=2",
                                         "trainer.val_check_interval=2", "trainer.limit_val_batches=1",
                                         "scheduler.warmup_steps=1", "hardware.accelerator=cpu",
                                         "hardware.precision=32-true"])
    assert result.metrics["model/trainable_parameters"] == 20000
    assert 6 < result.metrics["test/bits_per_token"] < 10    # ~ log2(256) = 8 bits after 2 steps


# The claims on results shaped like the paper's (not measured): at each budget the middle split wins
# by more than the seeds' noise, complexity pays more at the larger budget, each axis alone helps.
def split_sweep(key: str, curve: dict[float, list[float]]) -> list[Numbers]:
    """A sweep of `key` over the settings of `curve`, one trial per seed (seed i is item i)."""
    return [Numbers({"test/accuracy": value}, {key: setting, "seed": seed})
            for setting, values in curve.items() for seed, value in enumerate(values)]


def shifted(values: list[float], by: float) -> list[float]:
    return [v + by for v in values]


NOISE = [0.0, 0.006, -0.004, 0.003, -0.002]   # seed i's offset, shared by the splits of one seed
SMALL = {1: 0.30, 4: 0.36, 16: 0.32}    # P = 1502: complex neurons cost 0.04 against the middle
LARGE = {1: 0.40, 4: 0.47, 16: 0.45}    # P = 6007: they cost 0.02 only, and gain 0.05 over simple ones


def budget_sweep(curve: dict[int, float], seeds: int = 3) -> list[Numbers]:
    return split_sweep("model.k_e", {k: shifted(NOISE[:seeds], v) for k, v in curve.items()})


def rate_sweep(accuracy: float) -> list[Numbers]:
    """One split at lr 3e-3, 1e-2, 3e-2 over seeds 0-4, best at 1e-2 (inside the grid)."""
    return split_sweep("optimizer.lr", {3e-3: shifted(NOISE, accuracy - 0.05), 1e-2: shifted(NOISE, accuracy),
                                        3e-2: shifted(NOISE, accuracy - 0.08)})


def axis_sweep(key: str, settings: list[float], accuracies: list[float]) -> list[Numbers]:
    return split_sweep(key, {s: shifted(NOISE[:3], a) for s, a in zip(settings, accuracies)})


PAPER_SHAPED = {
    "budget_small_seeds": budget_sweep(SMALL), "budget_large_seeds": budget_sweep(LARGE),
    **{f"small_k{k}": rate_sweep(v) for k, v in SMALL.items()},
    **{f"large_k{k}": rate_sweep(v) for k, v in LARGE.items()},
    "neurons": split_sweep("model.num_neurons", {8: [0.30], 16: [0.34], 32: [0.38]}),
    "axes_neurons": axis_sweep("model.num_neurons", [8, 16, 32], [0.40, 0.45, 0.50]),
    "axes_complexity": axis_sweep("model.k_e", [1, 4, 16], [0.38, 0.44, 0.47]),
    "axes_connectivity": axis_sweep("model.k_c", [2, 8, 32], [0.39, 0.43, 0.46]),
    # untrained (one step): chance, with seed noise that is not shared along the axis
    "budget_small_untrained": split_sweep("model.k_e", {1: [0.20, 0.22, 0.19], 4: [0.21, 0.19, 0.2], 16: [0.19, 0.21, 0.2]}),
    "budget_large_untrained": split_sweep("model.k_e", {1: [0.21, 0.19, 0.2], 4: [0.20, 0.22, 0.19], 16: [0.19, 0.2, 0.21]}),
    "axes_neurons_untrained": split_sweep("model.num_neurons", {8: [0.20, 0.22, 0.19], 16: [0.21, 0.19, 0.2],
                                                                32: [0.19, 0.21, 0.2]}),
    "axes_complexity_untrained": split_sweep("model.k_e", {1: [0.20, 0.22, 0.19], 4: [0.21, 0.19, 0.2],
                                                           16: [0.19, 0.21, 0.2]}),
    "axes_connectivity_untrained": split_sweep("model.k_c", {2: [0.20, 0.22, 0.19], 8: [0.21, 0.19, 0.2],
                                                             32: [0.19, 0.21, 0.2]}),
}


def test_claims_hold_on_paper_shaped_results_and_their_controls_do_not() -> None:
    """Every claim but the deviation passes on paper-shaped results; every run control is false (the
    untrained axes and budget sweeps: not true, a flat curve decides nothing)."""
    claims, _ = load_claims(SPECS)
    for claim in claims.claims:
        outcome = evaluate(claim, PAPER_SHAPED)
        if claim.kind == "deviation":
            continue
        assert outcome.passed and not outcome.error and not outcome.undecided, (claim.name, outcome.undecided)
        assert not outcome.control_passed and not outcome.control_error, claim.name
        if claim.control.is_run and claim.name not in ("each_axis_alone_improves", "interior_optimum_at_fixed_budget"):
            assert outcome.control_passed is False, claim.name


def test_the_headline_is_inconclusive_within_seed_noise_and_false_when_complexity_pays_less() -> None:
    claims, _ = load_claims(SPECS)
    headline = next(c for c in claims.claims if c.kind == "headline")
    noisy = dict(PAPER_SHAPED, budget_large_seeds=split_sweep("model.k_e", {
        1: [0.40, 0.46, 0.38], 4: [0.47, 0.48, 0.46], 16: [0.45, 0.40, 0.47]}))
    outcome = evaluate(headline, noisy)
    assert not outcome.passed and not outcome.refuted and outcome.undecided
    flat = dict(PAPER_SHAPED, budget_large_seeds=budget_sweep({1: 0.40, 4: 0.47, 16: 0.38}))
    outcome = evaluate(headline, flat)
    assert not outcome.passed and outcome.refuted


def test_an_edge_rate_makes_the_tuned_optimum_inconclusive() -> None:
    claims, _ = load_claims(SPECS)
    chosen = next(c for c in claims.claims if c.name == "interior_optimum_with_tuned_rates_small")
    edge = split_sweep("optimizer.lr", {3e-3: shifted(NOISE, 0.30), 1e-2: shifted(NOISE, 0.33), 3e-2: shifted(NOISE, 0.36)})
    outcome = evaluate(chosen, dict(PAPER_SHAPED, small_k4=edge))
    assert not outcome.passed and not outcome.refuted and "grid's last point" in outcome.undecided


def test_a_flat_axis_does_not_pass() -> None:
    """Issue 33: non-decreasing with slack alone let a flat curve pass; the end-to-end margin does not."""
    claims, _ = load_claims(SPECS)
    chosen = next(c for c in claims.claims if c.name == "each_axis_alone_improves")
    flat = axis_sweep("model.k_c", [2, 8, 32], [0.43, 0.43, 0.43])
    outcome = evaluate(chosen, dict(PAPER_SHAPED, axes_connectivity=flat))
    assert not outcome.passed
