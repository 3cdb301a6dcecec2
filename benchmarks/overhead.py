"""What does expspec cost per training step, and per run, on top of a hand-written LightningModule
and a raw PyTorch loop doing the same work?

Same work in all three variants: the MLP of components.models.mlp (hidden --hidden) on the same
data (SyntheticClassification: --n-samples rows, 8 features, 2 classes, 70/15/15 split, batch
--batch), Adam lr 1e-3, cross-entropy, --epochs epochs (the same optimizer steps); a validation
pass after every epoch and a test pass at the end, each with loss and accuracy; accuracy on the
training batches too; a checkpoint per epoch; metrics into an MLflow sqlite store in a temp
folder; torch.set_num_threads(1), seed 0.

  expspec    framework.runner.run of the equivalent spec (the default spec: no trainer options
             but max_epochs), i.e. what `exp run` does: validate, MLflow run with params and
             resolved spec, fit, test, cache of the final weights.
  lightning  a hand-written LightningModule logging the same keys (train/loss each step,
             train|val|test/loss and /accuracy per epoch; torchmetrics' MulticlassAccuracy),
             Lightning's MLFlowLogger on the same store, Lightning's defaults otherwise (a
             checkpoint per epoch, log_every_n_steps=50), no sanity validation, no progress bar.
  raw        a plain loop over the split tensors (randperm batches), the same evaluation cadence,
             train/loss written with MlflowClient.log_batch every 50 steps, epoch metrics at
             epoch end, torch.save of the weights per epoch.

Columns: total = the whole variant (data, model, trainer, fit, test, tracking); loop = training
(on_train_start..on_train_end, or the raw loop) minus the validation passes: steps, logging,
checkpoints. `loop/L` is the per-step ratio against hand-written Lightning (start-up excluded),
`total/L` the end-to-end ratio of a short run. Medians of --repeats interleaved repeats, after one
untimed warm-up of each variant (imports, sqlite tables, first calls).

The last lines are machine-readable `BENCH {json}` rows for benchmarks/run_all.py. Wall-clock on
a shared machine: compare ratios within one run, not absolute values across runs.

    python benchmarks/overhead.py [--epochs 10] [--n-samples 20000] [--repeats 3]
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

from bench_result import bench_line, cached_bytecode

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
BASELINE_LOG_EVERY = 50  # Lightning's default log_every_n_steps, which the hand-written variants keep
PER_STEP_GOAL = 1.05  # issue 13: `exp run` per training step <= 1.05x hand-written Lightning


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
    from components.callbacks.resume import ResumeCheckpoint
    from framework.builder import Builder
    times = defaultdict(float)
    add_timer = lambda trainer, *_: trainer.callbacks.append(loop_timer(times))  # noqa: E731
    undo = [patch(runner, "prepare", times, "prepare"), patch(tracking.Tracker, "start", times, "mlflow start"),
            patch(tracking.Tracker, "finish", times, "mlflow finish"), patch(Builder, "build", times, "build"),
            patch(L.Trainer, "fit", times, "fit", before=add_timer), patch(L.Trainer, "test", times, "test"),
            patch(ResumeCheckpoint, "_save", times, "resume saves"),
            patch(L.Trainer, "save_checkpoint", times, "ckpt writes")]
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


def lightning_module(args):
    """The hand-written module: what a Lightning user writes for this experiment."""
    import lightning as L
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torchmetrics.classification import MulticlassAccuracy
    from components.models.mlp import MLP

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = MLP(8, 2, tuple(args.hidden))
            self.accuracy = nn.ModuleDict({s: MulticlassAccuracy(num_classes=2, average="micro")
                                           for s in ("fit", "validate", "test")})

        def step(self, batch, split, key):
            logits = self.model(batch["x"])
            loss = F.cross_entropy(logits, batch["y"])
            self.accuracy[key].update(logits.detach(), batch["y"])
            self.log(f"{split}/loss", loss, on_step=split == "train", on_epoch=split != "train", batch_size=len(logits))
            self.log(f"{split}/accuracy", self.accuracy[key], on_step=False, on_epoch=True, batch_size=len(logits))
            return loss

        def training_step(self, batch, batch_idx): return self.step(batch, "train", "fit")
        def validation_step(self, batch, batch_idx): self.step(batch, "val", "validate")
        def test_step(self, batch, batch_idx): self.step(batch, "test", "test")
        def configure_optimizers(self): return torch.optim.Adam(self.parameters(), lr=1e-3)

    return Module()


def run_lightning(args, tmp):
    import lightning as L
    import torch
    from lightning.pytorch.loggers import MLFlowLogger
    times = defaultdict(float)
    t0 = time.perf_counter()
    torch.set_num_threads(1), L.seed_everything(args.seed, workers=True, verbose=False)
    dm = make_data(args)
    logger = MLFlowLogger(experiment_name="baseline-lightning", tracking_uri=os.environ["MLFLOW_TRACKING_URI"])
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, logger=logger, callbacks=[loop_timer(times)],
                        default_root_dir=str(tmp / "lightning"), num_sanity_val_steps=0,
                        enable_progress_bar=False, enable_model_summary=False)
    module = lightning_module(args)
    undo = patch(L.Trainer, "save_checkpoint", times, "ckpt writes")  # Lightning's ModelCheckpoint, each epoch
    t1 = time.perf_counter()
    trainer.fit(module, datamodule=dm)
    times["fit"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    trainer.test(module, datamodule=dm, verbose=False)
    times["test"] = time.perf_counter() - t1
    times["total"] = time.perf_counter() - t0
    undo()
    return times


def run_raw(args, tmp):
    import torch
    import torch.nn.functional as F
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient
    from components.models.mlp import MLP
    times = defaultdict(float)
    t0 = time.perf_counter()
    torch.set_num_threads(1), torch.manual_seed(args.seed)
    dm = make_data(args)
    train, val, test = (dm.split(s) for s in ("train", "val", "test"))
    client = MlflowClient(os.environ["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name("baseline-raw")
    run_id = client.create_run(experiment.experiment_id if experiment else client.create_experiment("baseline-raw")).info.run_id
    model = MLP(8, 2, tuple(args.hidden))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def log(metrics, step):
        now = int(time.time() * 1000)
        client.log_batch(run_id, metrics=[Metric(k, float(v), now, step) for k, v in metrics.items()])

    def evaluate(data, split):
        model.eval()
        with torch.no_grad():
            losses, correct = [], 0
            for start in range(0, len(data["x"]), args.batch):
                x, y = data["x"][start:start + args.batch], data["y"][start:start + args.batch]
                logits = model(x)
                losses.append(F.cross_entropy(logits, y, reduction="sum"))
                correct += int((logits.argmax(1) == y).sum())
        model.train()
        return {f"{split}/loss": float(sum(losses)) / len(data["y"]), f"{split}/accuracy": correct / len(data["y"])}

    x, y = train["x"], train["y"]
    steps = 0
    t1 = time.perf_counter()
    for epoch in range(args.epochs):
        correct = 0
        for index in torch.randperm(len(x)).split(args.batch):
            logits = model(x[index])
            loss = F.cross_entropy(logits, y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            correct += int((logits.detach().argmax(1) == y[index]).sum())
            steps += 1
            if steps % BASELINE_LOG_EVERY == 0:
                log({"train/loss": loss.item()}, steps)
        v0 = time.perf_counter()
        metrics = evaluate(val, "val")
        times["val"] += time.perf_counter() - v0
        log({**metrics, "train/accuracy": correct / len(y), "epoch": epoch}, steps)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, tmp / "raw.ckpt")
    times["loop"] = time.perf_counter() - t1 - times["val"]
    times["fit"], times["steps"] = time.perf_counter() - t1, steps
    t1 = time.perf_counter()
    log(evaluate(test, "test"), steps)
    times["test"] = time.perf_counter() - t1
    client.set_terminated(run_id)
    times["total"] = time.perf_counter() - t0
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--n-samples", type=int, default=20000)
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3, help="interleaved repeats per variant; medians are reported")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    cached_bytecode()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    tmp = Path(tempfile.mkdtemp(prefix="expspec-overhead-"))
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'mlflow.db'}"
    os.environ["EXPSPEC_RUNS_DIR"] = str(tmp / "runs")
    os.environ["EXPSPEC_CACHE_DIR"] = str(tmp / "cache")
    spec_path = tmp / "overhead.yaml"
    spec_path.write_text(SPEC.format(seed=args.seed, n_samples=args.n_samples, batch=args.batch,
                                     hidden=list(args.hidden), epochs=args.epochs))
    import framework.runner  # noqa: F401  (imports torch, Lightning; MLflow below)
    import mlflow  # noqa: F401
    warnings.filterwarnings("ignore")
    for name in ("lightning.pytorch", "lightning.fabric", "lightning", "mlflow"):
        logging.getLogger(name).setLevel(logging.WARNING)

    variants = {"expspec": lambda: run_expspec(args, spec_path), "lightning": lambda: run_lightning(args, tmp),
                "raw": lambda: run_raw(args, tmp)}
    first = {name: fn() for name, fn in variants.items()}  # warm-up, untimed in the results
    results = defaultdict(list)
    for _ in range(args.repeats):
        for name, fn in variants.items():
            results[name].append(fn())

    med = {name: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for name, runs in results.items()}
    n_train = len(make_data(args).split("train")["x"])
    print(f"{args.epochs} epochs x {-(-n_train // args.batch)} steps ({n_train} train rows, batch {args.batch}), "
          f"hidden {args.hidden}; medians of {args.repeats} (first expspec run, incl. sqlite setup: "
          f"{first['expspec']['total']:.2f} s)")
    print(f"\n{'variant':10s} {'steps':>6s} {'total s':>9s} {'loop s':>9s} {'ms/step':>9s}"
          f" {'total/raw':>10s} {'total/L':>8s} {'loop/raw':>9s} {'loop/L':>7s}")
    raw, lit = med["raw"], med["lightning"]
    for name, m in med.items():
        print(f"{name:10s} {int(m['steps']):6d} {m['total']:9.3f} {m['loop']:9.3f}"
              f" {m['loop'] / m['steps'] * 1e3:9.3f} {m['total'] / raw['total']:9.2f}x {m['total'] / lit['total']:7.2f}x"
              f" {m['loop'] / raw['loop']:8.2f}x {m['loop'] / lit['loop']:6.2f}x")
    e = med["expspec"]
    print("\nexpspec breakdown (median s; 'val' and 'loop' are inside fit)")
    for key in ("prepare", "mlflow start", "build", "fit", "val", "loop", "test", "mlflow finish", "other", "total"):
        print(f"  {key:14s} {e[key]:8.3f}")
    print(f"checkpoint writes inside fit (median s): expspec {e.get('ckpt writes', 0):.3f} (its resume.ckpt saves, "
          f"logger flushes included: {e.get('resume saves', 0):.3f}); lightning {lit.get('ckpt writes', 0):.3f} "
          "(ModelCheckpoint's default, each epoch)")
    per_step = {name: m["loop"] / m["steps"] * 1e3 for name, m in med.items()}
    ratio = per_step["expspec"] / per_step["lightning"]
    bench_line("per training step vs hand-written Lightning", per_step["expspec"], per_step["lightning"], "ms/step",
               f"<= {PER_STEP_GOAL}x", ratio <= PER_STEP_GOAL)
    bench_line("per training step vs raw PyTorch loop", per_step["expspec"], per_step["raw"], "ms/step")
    bench_line(f"whole run ({int(e['steps'])} steps) vs hand-written Lightning", e["total"], lit["total"], "s")
    bench_line(f"whole run ({int(e['steps'])} steps) vs raw PyTorch loop", e["total"], raw["total"], "s")

if __name__ == "__main__":
    main()
