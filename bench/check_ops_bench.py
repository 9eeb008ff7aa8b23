"""check-ops overhead: the time of a traced training step against the same step untraced, in one run.

Models: the test models (CNN, LSTM, transformer block with SDPA) and a wider MLP/CNN at a batch size where
kernels, not Python, dominate. For each: the untraced step, the traced step (the whole `trace()` call:
TorchDispatchMode + profiler, with the profiler's start and stop and the join of its events) and the traced
step plus classifying for five targets (what `check_ops()` costs end to end). Goal: traced / untraced <= 3x.

    python bench/check_ops_bench.py [--repeat 25] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python" / "fixtures" / "check_ops"))

import torch  # noqa: E402
from models import example  # noqa: E402
from torch import nn  # noqa: E402

from torchport.check_ops._trace import trace  # noqa: E402
from torchport.check_ops.classify import Classifier  # noqa: E402
from torchport.check_ops.opdb import DB_TARGETS, load  # noqa: E402


def wide(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    if name == "mlp-1024":
        m = nn.Sequential(
            nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
        )
        return m, (torch.randn(256, 1024),)
    m = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip
    return m, (torch.randn(32, 3, 64, 64),)


def make_step(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Callable[[], None]:
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> None:
        out = model(*inputs)
        loss = (out[0] if isinstance(out, tuple) else out).float().sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: steadier)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dbs = [load(t, "2.13") for t in DB_TARGETS]
    print(f"torch {torch.__version__}, {args.threads} thread(s); best of {args.repeat} alternating runs")
    head = f"{'model':<10} {'untraced ms':>12} {'traced ms':>10} {'ratio':>6}"
    print(head + f" {'+classify ms':>13} {'ratio':>6} {'ops':>5}")
    ratios = []
    paired: dict[str, list[float]] = {}  # per model: traced / untraced of each alternating pair
    for name in ("cnn", "lstm", "block", "mlp-1024", "cnn-64px"):
        model, inputs = example(name) if name in ("cnn", "lstm", "block") else wide(name)
        step = make_step(model, inputs)
        for _ in range(3):  # warm up allocator, oneDNN primitives, autograd
            step()
        trace(step)
        plain_runs, traced_runs, full_runs, n_ops = [], [], [], 0
        for _ in range(args.repeat):  # alternate, so that load from other processes hits both alike
            plain_runs.append(timed(step))
            t0 = time.perf_counter()
            tr = trace(step)
            t1 = time.perf_counter()
            for db in dbs:
                Classifier(db).run(tr)
            full_runs.append(time.perf_counter() - t0)
            # the whole trace() call: the profiler's start and stop and the join of its events count
            traced_runs.append(t1 - t0)
            n_ops = len(tr.calls)
        plain, traced, full = min(plain_runs), min(traced_runs), min(full_runs)
        ratios.append(traced / plain)
        paired[name] = sorted(t / p for p, t in zip(plain_runs, traced_runs))
        print(
            f"{name:<10} {plain * 1e3:>12.2f} {traced * 1e3:>10.2f} {traced / plain:>5.2f}x "
            f"{full * 1e3:>13.2f} {full / plain:>5.2f}x {n_ops:>5}"
        )
    print(f"traced/untraced: max {max(ratios):.2f}x over these models (goal <= 3x)")
    print(f"traced/untraced of each of the {args.repeat} alternating pairs: median (min..max)")
    for name, rs in paired.items():
        print(f"  {name:<10} {statistics.median(rs):5.2f}x ({rs[0]:.2f}..{rs[-1]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
