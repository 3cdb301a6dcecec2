"""What does expspec cost on top of hand-written Lightning and of a raw PyTorch loop?

The same MLP (components.models.mlp.MLP, hidden --hidden) on the same data (SyntheticClassification:
--n-samples rows, 8 features, 2 classes, 70% train split, batch --batch), Adam lr 1e-3, cross-entropy,
--epochs epochs, so every variant takes the same optimizer steps; torch.set_num_threads(1), seed 0.

  expspec    framework.runner.run on a spec written to a temp dir, MLflow tracking into a temp
             sqlite db (MLFLOW_TRACKING_URI), Lightning files into a temp EXPSPEC_RUNS_DIR. Does
             what `exp run` does: validate, fit with a val pass and accuracy metrics each epoch, a
             checkpoint per epoch, test at the end, metrics and params logged to MLflow.
  lightning  a hand-written LightningModule (model + F.cross_entropy, logs the loss) on the same
             data module's train DataLoader; bare L.Trainer(logger=False, enable_checkpointing=False,
             enable_progress_bar=False, enable_model_summary=False): no val, no test, no metrics.
  raw        a plain loop over datamodule.split("train") tensors, batches by randperm indexing.

Columns: total = the whole variant (data, model, trainer, fit, test, tracking); fit = trainer.fit()
wall; loop = on_train_start..on_train_end minus validation, i.e. the per-step cost (for expspec it
still holds per-step MLflow logging, train metrics and per-epoch checkpoint writes). Medians of
--repeats interleaved repeats, after one untimed warm-up of each variant that pays imports, sqlite
table creation and first calls (its expspec time is printed as "first run").

Where expspec's fixed cost comes from (breakdown table): `prepare` = YAML load + validation
against live signatures; `mlflow start` = MlflowClient, experiment lookup, run creation, git
subprocesses, package versions, params and resolved_spec.yaml in sqlite; `build` = components and
data generation; `fit` = Lightning setup, per-epoch validation, MLflow metric logging, checkpoints;
`test` = a test pass; `mlflow finish` = run status; `other` = seeding, Trainer construction.
Read `loop` ratios as per-step overhead (hooks, logging, metrics), `total` ratios as the end-to-end
cost of a short run. Wall-clock on a shared machine: compare ratios, not absolute values.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = """name: overhead-bench
paper: benchmarks
seed: {seed}
task: {{type: classification}}
data: {{type: synthetic_classification, n_samples: {n_samples}, n_features: 8, n_classes: 2, batch_size: {batch}}}
model: {{type: mlp, in_features: 8, hidden: {hidden}, out_features: 2}}
loss: {{type: cross_entropy}}
optimizer: {{type: adam, lr: 1.0e-3}}
metrics: [{{type: accuracy}}]
hardware: {{accelerator: cpu, devices: 1, threads: 1}}
trainer: {{max_epochs: {epochs}}}
"""


IMPORTS = [("torch", "import torch"), ("lightning (after torch)", "import lightning"),
           ("mlflow (after both)", "import mlflow"),
           ("framework + components (after all)", "import framework.runner, framework.builder, "
            "framework.tracking, components.data.synthetic, components.tasks.supervised")]


def patch(obj, name, times, key, before=None):
    """Wrap obj.name so each call's wall time accumulates into times[key]; returns an undo."""
    original = getattr(obj, name)

    def wrapper(*args, **kwargs):
        if before:
            before(*args)
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            times[key] += time.perf_counter() - t0
    setattr(obj, name, wrapper)
    return lambda: setattr(obj, name, original)


def loop_timer(times):
    """A callback: training loop time excluding validation, and the optimizer steps taken."""
    import lightning as L

    class LoopTimer(L.Callback):
        def on_train_start(self, trainer, module): self.t0 = time.perf_counter()
        def on_validation_start(self, trainer, module): self.v0 = time.perf_counter()
        def on_validation_end(self, trainer, module): times["val"] += time.perf_counter() - self.v0
        def on_train_end(self, trainer, module):
            times["loop"] += time.perf_counter() - self.t0 - times["val"]
            times["steps"] = trainer.global_step
    return LoopTimer()


def run_expspec(args, spec_path):
    import lightning as L
    import framework.runner as runner
    import framework.tracking as tracking
    from framework.builder import Builder
    times = defaultdict(float)
    add_timer = lambda trainer, *_: trainer.callbacks.append(loop_timer(times))  # noqa: E731
    undo = [patch(runner, "prepare", times, "prepare"), patch(tracking.Tracker, "start", times, "mlflow start"),
            patch(tracking.Tracker, "finish", times, "mlflow finish"), patch(Builder, "build", times, "build"),
            patch(L.Trainer, "fit", times, "fit", before=add_timer), patch(L.Trainer, "test", times, "test")]
    try:
        t0 = time.perf_counter()
        runner.run(spec_path)
        times["total"] = time.perf_counter() - t0
    finally:
        for restore in undo:
            restore()
    times["other"] = times["total"] - sum(times[k] for k in ("prepare", "mlflow start", "build", "fit", "test", "mlflow finish"))
    return times


def make_data(args):
    from components.data.synthetic import SyntheticClassification
    dm = SyntheticClassification(n_samples=args.n_samples, n_features=8, n_classes=2, batch_size=args.batch)
    dm.setup()
    return dm


def run_lightning(args):
    import lightning as L
    import torch
    import torch.nn.functional as F
    from components.models.mlp import MLP

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = MLP(8, 2, tuple(args.hidden))

        def training_step(self, batch, batch_idx):
            loss = F.cross_entropy(self.model(batch["x"]), batch["y"])
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    times = defaultdict(float)
    t0 = time.perf_counter()
    torch.set_num_threads(1), L.seed_everything(args.seed, workers=True, verbose=False)
    dm = make_data(args)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, logger=False, callbacks=[loop_timer(times)],
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    t1 = time.perf_counter()
    trainer.fit(Module(), train_dataloaders=dm.train_dataloader())
    times["fit"] = time.perf_counter() - t1
    times["total"] = time.perf_counter() - t0
    return times


def run_raw(args):
    import torch
    import torch.nn.functional as F
    from components.models.mlp import MLP
    times = defaultdict(float)
    t0 = time.perf_counter()
    torch.set_num_threads(1), torch.manual_seed(args.seed)
    train = make_data(args).split("train")
    x, y = train["x"], train["y"]
    model = MLP(8, 2, tuple(args.hidden)).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    t1 = time.perf_counter()
    for _ in range(args.epochs):
        for index in torch.randperm(len(x)).split(args.batch):
            loss = F.cross_entropy(model(x[index]), y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            times["steps"] += 1
    times["fit"] = times["loop"] = time.perf_counter() - t1
    times["total"] = time.perf_counter() - t0
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--n-samples", type=int, default=4000)
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3, help="interleaved repeats per variant; medians are reported")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    tmp = Path(tempfile.mkdtemp(prefix="expspec-overhead-"))
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'mlflow.db'}"
    os.environ["EXPSPEC_RUNS_DIR"] = str(tmp / "runs")
    spec_path = tmp / "overhead.yaml"
    spec_path.write_text(SPEC.format(seed=args.seed, n_samples=args.n_samples, batch=args.batch,
                                     hidden=list(args.hidden), epochs=args.epochs))

    print("one-off import times (this fresh process)")
    for label, statement in IMPORTS:
        t0 = time.perf_counter()
        exec(statement, {})
        print(f"  {label:38s} {(time.perf_counter() - t0) * 1e3:9.1f} ms")
    warnings.filterwarnings("ignore")
    for name in ("lightning.pytorch", "lightning.fabric", "mlflow"):
        logging.getLogger(name).setLevel(logging.WARNING)

    variants = {"expspec": lambda: run_expspec(args, spec_path), "lightning": lambda: run_lightning(args),
                "raw": lambda: run_raw(args)}
    first = {name: fn() for name, fn in variants.items()}  # warm-up, untimed in the results
    results = defaultdict(list)
    for _ in range(args.repeats):
        for name, fn in variants.items():
            results[name].append(fn())

    med = {name: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for name, runs in results.items()}
    n_train = len(make_data(args).split("train")["x"])
    print(f"\n{args.epochs} epochs x {-(-n_train // args.batch)} steps ({n_train} train rows, batch {args.batch}), "
          f"hidden {args.hidden}; medians of {args.repeats} (first expspec run, incl. sqlite setup: "
          f"{first['expspec']['total']:.2f} s); tracking db {tmp / 'mlflow.db'}")
    print(f"\n{'variant':10s} {'steps':>6s} {'total s':>9s} {'fit s':>9s} {'loop s':>9s} {'ms/step':>9s}"
          f" {'total/raw':>10s} {'total/L':>8s} {'loop/raw':>9s} {'loop/L':>7s}")
    raw, lit = med["raw"], med["lightning"]
    for name, m in med.items():
        print(f"{name:10s} {int(m['steps']):6d} {m['total']:9.3f} {m['fit']:9.3f} {m['loop']:9.3f}"
              f" {m['loop'] / m['steps'] * 1e3:9.3f} {m['total'] / raw['total']:9.1f}x {m['total'] / lit['total']:7.2f}x"
              f" {m['loop'] / raw['loop']:8.1f}x {m['loop'] / lit['loop']:6.2f}x")
    e = med["expspec"]
    print("\nexpspec breakdown (median s; 'val' is inside fit)")
    for key in ("prepare", "mlflow start", "build", "fit", "val", "loop", "test", "mlflow finish", "other", "total"):
        print(f"  {key:14s} {e[key]:8.3f}")
    print(f"  fixed cost (total - loop - val) {e['total'] - e['loop'] - e['val']:.3f} s")


if __name__ == "__main__":
    main()
