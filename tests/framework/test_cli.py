"""framework/cli.py: commands, exit codes, and `exp validate` never importing torch."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from framework.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_validate_imports_no_torch() -> None:
    code = (
        "import sys\nfrom framework.cli import main\n"
        "rc = main(['validate', '-q', 'specs'])\n"
        "heavy = sorted(m for m in ('torch', 'lightning', 'mlflow', 'torchmetrics', 'matplotlib') if m in sys.modules)\n"
        "print('heavy:', heavy)\nsys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "heavy: []" in out.stdout


def test_validate_reports_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\npaper: p\ntask: {type: classification}\ndata: {type: nope}\nmodel: {type: mlp, in_features: 2, out_features: 2}\n")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4:14: data.type: unknown data module 'nope'." in err
    assert "0 of 1 spec(s) valid" in err


def test_validate_empty_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path)]) == 2
    assert "no spec files found" in capsys.readouterr().err


def test_validate_of_a_folder_checks_specs_and_claims_not_fragments_or_recorded_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A paper folder holds specs, its claims file, fragments and its recorded results; `exp
    validate` of the folder checks the first two only (one list: framework/discovery.py)."""
    import shutil

    shutil.copytree(ROOT / "specs" / "lie_bases", tmp_path / "lie_bases")
    folder = tmp_path / "lie_bases"
    assert (folder / "results.lock.yaml").is_file() and (folder / "claims.yaml").is_file()
    (folder / "_part.yaml").write_text("optimizer: {type: adamw}\n")
    assert main(["validate", "--format", "json", str(folder)]) == 0
    checked = {Path(r["file"]).name for r in json.loads(capsys.readouterr().out)["files"]}
    specs = {p.name for p in folder.iterdir() if p.name not in ("README.md", "results.lock.yaml") and p.name[0] != "_"}
    assert checked == specs and "claims.yaml" in checked


def test_show_prints_operative_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(ROOT / "specs/cvm_fairness/tiny.yaml"), "optimizer.lr=0.5"]) == 0
    out = capsys.readouterr().out
    assert "lr: 0.5" in out and "threads: 1" in out and "# operative spec of" in out


def test_list_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "optimizer"]) == 0
    assert "adamw" in capsys.readouterr().out
    assert main(["explain", "mlp"]) == 0
    out = capsys.readouterr().out
    assert "model 'mlp'  ->  components.models.mlp:MLP" in out
    assert "in_features" in out and "[required]" in out and "mlp.py:" in out
    assert main(["explain", "mpl"]) == 2
    assert "Did you mean 'mlp'?" in capsys.readouterr().err


def test_explain_shows_arguments_taken_through_kwargs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "uci_adult"]) == 0
    out = capsys.readouterr().out
    assert "    split_seed                 an integer  [default 0]" in out
    assert "    val_fraction               a number >= 0 and < 1  [default 0.1]" in out
    assert ("  split_seed, standardize, num_workers, standardize_target: from components.data.base:ArrayDataModule"
            " (**kwargs)") in out
    assert "    num_workers                an integer >= 0  [default 0]\n      DataLoader worker processes" in out  # from the base's docstring
    assert main(["explain", "fvu"]) == 0
    assert "(any other keyword: a **kwargs that cannot be followed into a base class)" in capsys.readouterr().out


def test_schema_check(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert main(["schema", "-o", str(out)]) == 0
    assert main(["schema", "--check", "-o", str(out)]) == 0
    out.write_text("{}")
    assert main(["schema", "--check", "-o", str(out)]) == 1


OLD_TERMS = ("name: x\npaper: p\ntask: {type: classification}\nloss:\n  type: weighted_sum\n  terms:\n"
             "    - {type: cross_entropy}\n    - {type: cvm_dependence, weight: 10.0}\n")


@pytest.mark.parametrize(
    "argv, error",
    [
        (["validate", "OLD"],
         "OLD:7:5: loss.terms: terms are named, not listed, so that a key path such as "
         "loss.terms.cvm_dependence.weight stays on its term when terms are reordered; write terms: "
         "{cross_entropy: {type: cross_entropy}, cvm_dependence: {type: cvm_dependence, weight: 10.0}}"),
        (["show", str(ROOT / "specs/cvm_fairness/tiny.yaml"), "loss.terms.1.weight=3"],
         "override 'loss.terms.1.weight=3': loss.terms.1: terms are named, not numbered: write "
         "loss.terms.<name>.weight with <name> one of: ce, cvm"),
        (["show", str(ROOT / "specs/cvm_fairness/tiny.yaml"), "loss={type: hsic, weight: 2.0}"],
         "override 'loss={type: hsic, weight: 2.0}': loss.weight: hsic has no argument 'weight'; a weight "
         "belongs to a term of weighted_sum: {type: weighted_sum, terms: {hsic: {type: hsic, weight: 2.0}}}"),
    ],
    ids=["validate: terms as a list", "show: index override", "show: weight on a lone loss"],
)
def test_old_spellings_answered_in_the_new_one(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               argv: list[str], error: str) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(OLD_TERMS)
    assert main([a.replace("OLD", str(old)) for a in argv]) == 2
    assert f"  {error.replace('OLD', str(old))}\n" in capsys.readouterr().err


def test_show_spells_term_paths_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(ROOT / "specs/cvm_fairness/tiny.yaml"), "loss.terms.cvm.weight=3.0"]) == 0
    out = capsys.readouterr().out
    assert "    cvm: {type: cvm_dependence, weight: 3.0, regularization: 0.02, 'on': logit, standardize: true}\n" in out
    assert "    ce: {type: cross_entropy, weight: 1.0, label_smoothing: 0.0}\n" in out


@pytest.mark.parametrize(
    "args, message",
    [(["run", "specs/cvm_fairness/tiny.yaml", "optimizer.lrr=0.1"],
      "optimizer.lrr: adam has no argument 'lrr'. Did you mean 'lr'?"),
     (["sweep", "specs/cvm_fairness/sweep_lambda.yaml", "trainer.max_stepz=5"],
      "trainer.max_stepz: section 'trainer' has no key 'max_stepz'. Did you mean 'max_steps'?"),
     (["sweep", "specs/cvm_fairness/sweep_lambda.yaml", "model.hiden=[8]"],
      "model.hiden: mlp has no argument 'hiden'. Did you mean 'hidden'?")],
    ids=["run", "sweep-section", "sweep-component"],
)
def test_run_and_sweep_report_spec_errors_before_importing_torch(args: list[str], message: str, tmp_path: Path) -> None:
    """A mistake in a spec or override is answered from the committed schema, as `exp validate`
    does, before the seconds torch takes to import (it used to come after them)."""
    code = (
        "import sys\nfrom framework.cli import main\n"
        f"rc = main({args!r})\n"
        "heavy = sorted(m for m in ('torch', 'lightning', 'mlflow') if m in sys.modules)\n"
        "print('heavy:', heavy)\nsys.exit(rc)\n"
    )
    # a store of its own, should the check ever let a run start
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "EXPSPEC_RUNS_DIR": str(tmp_path / "runs"), "EXPSPEC_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr
    assert out.stdout.splitlines()[-1] == "heavy: []"


@pytest.mark.parametrize(
    "args, message",
    [(["list", "lossess"], "error: unknown kind 'lossess'. Did you mean 'losses'?"),
     (["list", "zzz"], "error: unknown kind 'zzz'. Kinds: models, data, losses,"),
     (["explain", "mpl"], "error: no component named 'mpl'. Did you mean 'mlp'?")],
)
def test_unknown_names_exit_2_with_a_hint(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The same kind of mistake (a name that is not there) gets the same exit code, 2."""
    try:
        code = main(args)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_validate_in_forked_shares_reports_what_one_process_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Past PARALLEL_FILES files `exp validate` checks shares of them in forked processes: the same
    verdict per file, in the same order, as one process gives (a broken spec among valid ones)."""
    import shutil

    from framework import forked_shares
    from framework.discovery import spec_files
    from framework.spec_check import check_files

    for name in ("drift_sysid", "lie_bases"):
        shutil.copytree(Path("specs") / name, tmp_path / name)
    broken = tmp_path / "lie_bases" / "broken.yaml"
    broken.write_text("extends: tiny_pca.yaml\noptimizer:\n  type: adamw\n  lrr: 0.1\n")
    files = spec_files([str(tmp_path)])
    collection = gc.get_threshold(), gc.get_freeze_count()
    one = [None if e is None else str(e) for e in check_files(files)]
    assert [i for i, e in enumerate(one) if e] == [files.index(broken)] and "lrr" in one[files.index(broken)]
    assert (gc.get_threshold(), gc.get_freeze_count()) == collection, "garbage collection is put back as it was"
    monkeypatch.setattr(forked_shares, "PARALLEL_FILES", 2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    assert [None if e is None else str(e) for e in check_files(files)] == one
    assert len(forks) == 2  # three shares: this process and two forked children
    assert main(["validate", "-q", str(tmp_path)]) == 2
    assert f"{len(files) - 1} of {len(files)} spec(s) valid" in capsys.readouterr().err


@pytest.mark.parametrize("failure, said", [("raise", "ValueError: a bug in a check"), ("die", "exit status 3"),
                                           ("kill", "killed by signal 9")])
def test_a_forked_share_that_fails_or_dies_is_an_error_not_a_missing_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str, said: str) -> None:
    """A child checking a share that raises, exits or is killed makes `check_files` raise, saying
    how it ended; the parent's own share is checked as usual meanwhile."""
    import signal

    from framework import forked_shares, spec_check

    files = [tmp_path / f"s{i}.yaml" for i in range(4)]
    parent = os.getpid()

    def share(part: list[Path], store: object, schemas: object) -> list[None]:
        if os.getpid() != parent:
            if failure == "raise":
                raise ValueError("a bug in a check")
            if failure == "die":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        return [None] * len(part)

    monkeypatch.setattr(spec_check, "check_share", share)
    monkeypatch.setattr(forked_shares, "PARALLEL_FILES", 2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with pytest.raises(RuntimeError, match=said):
        spec_check.check_files(files)


def test_explain_shows_a_third_party_summary_and_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """Lightning's and torch's docstrings run to pages: their summary, and each argument's own line."""
    assert main(["explain", "early_stopping"]) == 0
    out = capsys.readouterr().out
    assert "    monitor                    a string  [required]\n      quantity to be monitored.\n" in out
    assert "\n  Monitor a metric and stop training when it stops improving.\n  (the full docstring: the source file above)\n" in out
    assert ".. note::" not in out and "Example::" not in out and "Args:" not in out
    assert main(["explain", "mlp"]) == 0
    out = capsys.readouterr().out  # ours: the whole docstring, its arguments listed once
    assert "      Width of the input rows (N, in_features).\n" in out and "Args:" not in out
    assert "The output is always (N, out_features)" in out


def test_show_sources_names_where_each_value_comes_from(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "specs/cvm_fairness/sweep_lambda.yaml"
    assert main(["show", str(ROOT / spec), "optimizer.lr=0.01", "--sources"]) == 0
    rows = {line.split()[0]: line.split(None, 2)[2] for line in capsys.readouterr().out.splitlines()
            if not line.startswith("#")}
    assert rows["name"].endswith("specs/cvm_fairness/sweep_lambda.yaml:6:7")  # the spec itself
    assert rows["model.hidden"].endswith("specs/cvm_fairness/tiny.yaml:18:11")  # the file it extends
    assert rows["optimizer.lr"] == "override 'optimizer.lr=0.01'"
    assert rows["model.dropout"] == rows["trainer.log_every_n_steps"] == "default"
    assert rows["loss.terms.cvm.weight"].endswith(
        "specs/cvm_fairness/tiny.yaml:25:41; swept by sweep.grid at specs/cvm_fairness/sweep_lambda.yaml:9:5 (6 values)")


def test_show_sources_follows_a_reference_to_a_whole_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from framework.loader import load_spec
    from framework.provenance import source_of

    (tmp_path / "s.yaml").write_text("a: {x: 1, y: [1, 2]}\nb: ${a}\nc: {x: 2}\n")
    loaded = load_spec(tmp_path / "s.yaml")
    assert source_of(loaded, ("b", "x")) == f"{tmp_path / 's.yaml'}:2:4 (through a reference)"
    assert source_of(loaded, ("a", "x")) == f"{tmp_path / 's.yaml'}:1:8"
    assert source_of(loaded, ("c", "z")) == "default"


def test_validate_and_list_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\npaper: p\ntask: {type: classification}\nmodel: {type: mlp, in_features: 2, "
                   "out_features: 2, hiden: [3]}\n")
    assert main(["validate", "--format", "json", str(bad), str(ROOT / "specs/cvm_fairness/tiny.yaml")]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] == 1 and report["total"] == 2
    assert report["files"][1] == {"file": str(ROOT / "specs/cvm_fairness/tiny.yaml"), "valid": True, "problems": []}
    assert report["files"][0]["problems"] == [{
        "file": str(bad), "line": 4, "column": 53, "key": "model.hiden", "path": ["model", "hiden"],
        "message": "mlp has no argument 'hiden'. Did you mean 'hidden'?", "suggestions": ["hidden"]}]
    assert main(["list", "optimizers", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [k["kind"] for k in listed] == ["optimizers"]
    assert {"name": "adamw", "target": "components.optim.optimizers:AdamW", "origin": "components"} in listed[0]["components"]


def test_run_of_a_sweep_spec_says_it_runs_the_base_spec_only(capsys: pytest.CaptureFixture[str]) -> None:
    from framework.commands.runs import note_base_only
    from framework.invocation import RunContext
    from framework.spec_check import check_spec

    spec = "specs/cvm_fairness/sweep_lambda.yaml"
    note_base_only(spec, check_spec(ROOT / spec, []), RunContext())
    assert capsys.readouterr().err == (f"note: {spec} has a sweep; exp run runs its base spec only (the values "
                                       f"written, no trial). To run the trials: exp sweep {spec}\n")
    note_base_only("tiny.yaml", check_spec(ROOT / "specs/cvm_fairness/tiny.yaml", []), RunContext())
    assert capsys.readouterr().err == ""
    trial = RunContext.from_environ({"EXPSPEC_PARENT_RUN_ID": "0123"})  # a trial of `exp sweep` is not told
    note_base_only(spec, check_spec(ROOT / spec, []), trial)
    assert capsys.readouterr().err == ""


_AFTER_RUN = """
import atexit, sys, tempfile
from pathlib import Path
import framework.cli as cli
out = Path(sys.argv.pop(1))

real_main = cli._main

def main_then_leave_things(args):
    code = real_main(args)
    left = tempfile.TemporaryDirectory(dir=out)  # never cleaned up: its finalizer must remove it at exit
    (out / "left").write_text(left.name)
    atexit.register(lambda: (out / "exit-handler").write_text("ran"))  # a library's, registered late
    print("last line, block-buffered")
    return code

cli._main = main_then_leave_things
cli.entry()
"""


def test_a_finished_run_ends_after_every_exit_handler(tracked: str, tmp_path: Path) -> None:
    """`exp run` through the console script, which ends the process in the last exit handler
    instead of tearing the interpreter down (benchmarks/exit_time.py: 0.45 s -> 0.11 s): every
    other exit handler still runs (here a temporary folder's finalizer, and a handler registered
    during the command, as a library would), and the command's status, every line it printed to a
    pipe and the run's store are complete."""
    from mlflow.tracking import MlflowClient

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output to a pipe is buffered
    done = subprocess.run([sys.executable, "-c", _AFTER_RUN, str(tmp_path), "run", "specs/cvm_fairness/tiny.yaml",
                           "trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.endswith("last line, block-buffered\n"), done.stdout[-500:]
    finished = [line for line in done.stdout.splitlines() if line.startswith("run ") and " finished" in line]
    run = MlflowClient(tracked).get_run(finished[-1].split()[1])
    assert run.info.status == "FINISHED" and "test/accuracy" in run.data.metrics
    assert (tmp_path / "exit-handler").read_text() == "ran"
    # ... every one: importing framework.cli registers no exit handler, so the last one is entry's
    imported = subprocess.run([sys.executable, "-c", "import atexit, framework.cli; print(atexit._ncallbacks())"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert imported.stdout.strip() == "0", imported.stderr
    assert not Path((tmp_path / "left").read_text()).exists()


def test_the_console_script_ends_validate_at_once_with_every_line_and_result_kept(tmp_path: Path) -> None:
    """`exp validate` through the console script's entry (which skips the interpreter's shut-down
    for it) still gives its exit status, every line it printed to a pipe, and the stored results."""
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("extends: " + str(Path("specs/cvm_fairness/tiny.yaml").resolve()) + "\noptimizer: {type: adam, lrr: 1}\n")
    good = Path("specs/cvm_fairness/tiny.yaml")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output to a pipe is buffered
    env.update(EXPSPEC_CACHE_DIR=str(tmp_path / "cache"), EXPSPEC_VALIDATE_CACHE="1")
    done = subprocess.run([sys.executable, "-c", "from framework.cli import entry; entry()", "validate", str(good),
                           str(bad)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stdout == f"ok  {good}\n"
    assert "adam has no argument 'lrr'" in done.stderr and done.stderr.endswith("1 of 2 spec(s) valid\n")
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


_EARLY_HANDLER = """
import atexit, sys
from pathlib import Path
marker = Path(sys.argv[1])
atexit.register(lambda: marker.write_text("saved"))  # as coverage.py's, registered before entry
sys.argv = ["exp", "validate", "specs/cvm_fairness/tiny.yaml"]
from framework.cli import entry
entry()
"""


@pytest.mark.parametrize(("setting", "saved"), [(None, False), ("0", True)])
def test_the_quick_exit_can_be_turned_off_for_an_earlier_exit_handler(tmp_path: Path, setting: str | None, saved: bool) -> None:
    """The quick exit of `exp validate` skips exit handlers registered before `entry` (a coverage
    tool's); EXPSPEC_QUICK_EXIT=0 exits the usual way, and they run."""
    env = {k: v for k, v in os.environ.items() if k != "EXPSPEC_QUICK_EXIT"}
    if setting is not None:
        env["EXPSPEC_QUICK_EXIT"] = setting
    marker = tmp_path / "saved"
    done = subprocess.run([sys.executable, "-c", _EARLY_HANDLER, str(marker)], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0 and "1 of 1 spec(s) valid" in done.stdout, done.stderr[-2000:]
    assert marker.exists() == saved
