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
from framework.loader import load_spec
from framework.plan import expand_sweep
from framework.runner import run

SPECS = Path(__file__).resolve().parents[2] / "specs/elm_budget"
SHRINK = ["trainer.max_steps=2", "data.num_train=64", "data.num_test=64"]


@pytest.mark.parametrize("sweep", ["sweep_budget_small.yaml", "sweep_budget_large.yaml"])
def test_every_split_of_a_budget_sweep_spends_it_exactly(sweep: str) -> None:
    base = load_spec(SPECS / sweep).data
    splits = {trial.values["model.k_e"] for trial in expand_sweep(load_spec(SPECS / sweep))}
    assert len(splits) >= 3
    model = base["model"]
    for k_e in sorted(splits):
        args = {k: v for k, v in model.items() if k != "type"} | {"k_e": k_e}
        split = allocate(args["budget"], k_e, args["k_c"], args["in_features"], args["out_features"], 4)
        assert split.residual == 0, f"{sweep}: k_e={k_e} misses the budget by {split.residual}"
        torch.manual_seed(0)
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
