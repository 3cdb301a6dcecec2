"""Forward + backward time of the CvM dependence penalty vs the HSIC baseline, per batch size.

Reproduces the cost claim of "group fairness via the Cramer-von-Mises sensitivity index",
NeurIPS 2026 (see specs/cvm_fairness/README.md): O(B log B) for CvM against O(B^2) for HSIC.
One CPU thread, best of `--repeats` runs after one warm-up. HSIC at B = 16384 needs a 1 GiB kernel
matrix and is skipped unless --hsic-max allows it.

    python benchmarks/penalty_cost.py [--sizes 1024 4096 16384] [--repeats 5] [--hsic-max 4096]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from components.fairness.losses import HSIC, CvMDependence  # noqa: E402


def best_time(loss: torch.nn.Module, size: int, repeats: int) -> float:
    """Best wall time (s) of loss(outputs, batch).backward() on a random (B, 2) batch."""
    generator = torch.Generator().manual_seed(size)
    group = torch.randint(0, 2, (size,), generator=generator)
    logits = torch.randn(size, 2, generator=generator)
    logits[:, 1] += group
    batch = {"y": torch.zeros(size, dtype=torch.long), "group": group}
    times = []
    for _ in range(repeats + 1):
        outputs = logits.clone().requires_grad_(True)
        start = time.perf_counter()
        loss(outputs, batch).backward()
        times.append(time.perf_counter() - start)
    return min(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hsic-max", type=int, default=4096, help="largest B at which HSIC is timed")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, best of {args.repeats}, forward+backward")
    print(f"{'B':>6} | {'CvM (ms)':>9} | {'HSIC (ms)':>9} | {'HSIC/CvM':>8}")
    for size in args.sizes:
        cvm = best_time(CvMDependence(), size, args.repeats)
        if size <= args.hsic_max:
            hsic = best_time(HSIC(), size, args.repeats)
            print(f"{size:>6} | {cvm * 1e3:>9.2f} | {hsic * 1e3:>9.1f} | {hsic / cvm:>7.1f}x")
        else:
            print(f"{size:>6} | {cvm * 1e3:>9.2f} | {'not run':>9} | {'-':>8}")


if __name__ == "__main__":
    main()
