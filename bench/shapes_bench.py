"""`run --shapes` overhead: a training step recorded by the shape recorder against the same step plain.

Models: check-ops' test models (CNN, LSTM, transformer block with SDPA), a wider MLP and CNN at a batch size
where kernels, not Python, dominate, and a variable-length LSTM classifier (embedding, LSTM 64->128, batch
16, sequence length cycling through 20/35/50). Plain and recorded steps alternate, so that load from other
processes hits both alike. A sample is K steps in a row, K chosen so that a plain sample takes at least 50 ms
(a millisecond step alone is mostly preemption noise on a loaded machine); the recorder is entered once per
sample, as a run enters it once. Reported per step: the medians of wall time and their ratio, and the
medians and spread (min-max) of process CPU time and their ratio (on a loaded machine the CPU time is the
steadier measure: time lost to other processes is not counted; torch runs on one thread).
Goal (the check-ops goal): recorded / plain <= 3x.

    python bench/shapes_bench.py [--repeat 7] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import os
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

from torchport.runtime._shapes import ShapeRecorder  # noqa: E402


class VarLen(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        self.lstm = nn.LSTM(64, 128, batch_first=True)
        self.head = nn.Linear(128, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out.mean(dim=1))


def build(name: str) -> tuple[nn.Module, Callable[[int], tuple[torch.Tensor, ...]]]:
    """The model and a function from the step number to that step's inputs."""
    torch.manual_seed(0)
    if name in ("cnn", "lstm", "block"):
        m, inputs = example(name)
        return m, lambda i: inputs
    if name == "mlp-1024":
        m = nn.Sequential(
            nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
        )
        x = torch.randn(256, 1024)
        return m, lambda i: (x,)
    if name == "cnn-64px":
        m = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
            nn.Flatten(), nn.Linear(64, 10),
        )  # fmt: skip
        x = torch.randn(32, 3, 64, 64)
        return m, lambda i: (x,)
    assert name == "varlen-lstm"
    batches = [torch.randint(0, 1000, (16, n)) for n in (20, 35, 50)]
    return VarLen(), lambda i: (batches[i % 3],)


def measure(name: str, repeat: int) -> tuple[dict[str, list[float]], int]:
    """Per-step wall and process-CPU times of each sample, plain and recorded, and the number of sites
    recorded. Sample i of each side gets the same inputs (the variable-length model cycles its lengths)."""
    model, inputs = build(name)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(i: int) -> None:
        out = model(*inputs(i))
        loss = (out[0] if isinstance(out, tuple) else out).float().sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    rec = ShapeRecorder()

    def plain_run(i: int, k: int) -> None:
        for j in range(k):
            step(i * k + j)

    def recorded_run(i: int, k: int) -> None:
        with rec:
            for j in range(k):
                step(i * k + j)

    for i in range(3):  # warm up the allocator, oneDNN primitives, autograd, the recorder's caches
        plain_run(i, 1)
        recorded_run(i, 1)
    t0 = time.process_time()
    plain_run(0, 3)
    k = max(1, math.ceil(0.05 / max(1e-6, (time.process_time() - t0) / 3)))
    runs: dict[str, list[float]] = {"plain": [], "recorded": [], "plain_cpu": [], "recorded_cpu": []}
    for i in range(repeat):
        for side, fn in (("plain", plain_run), ("recorded", recorded_run)):
            t0, c0 = time.perf_counter(), time.process_time()
            fn(i, k)
            runs[side].append((time.perf_counter() - t0) / k)
            runs[side + "_cpu"].append((time.process_time() - c0) / k)
    return runs, len(rec.sites)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: steadier)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load0 = os.getloadavg()
    print(f"torch {torch.__version__}, {args.threads} thread(s); {args.repeat} alternating samples each")
    print(f"load average at start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print("per-step medians in ms; CPU = process CPU time (preemption by other processes not counted)")
    print(
        f"{'model':<12} {'wall plain':>10} {'recorded':>9} {'ratio':>6} | {'CPU plain (min-max)':>22}"
        f" {'recorded (min-max)':>22} {'ratio':>6} {'sites':>6}"
    )
    wall_ratios, cpu_ratios = [], []
    med = statistics.median
    for name in ("cnn", "lstm", "block", "mlp-1024", "cnn-64px", "varlen-lstm"):
        r, n_sites = measure(name, args.repeat)
        w = med(r["recorded"]) / med(r["plain"])
        c = med(r["recorded_cpu"]) / med(r["plain_cpu"])
        wall_ratios.append(w)
        cpu_ratios.append(c)
        pc, rc = r["plain_cpu"], r["recorded_cpu"]
        print(
            f"{name:<12} {med(r['plain']) * 1e3:>10.2f} {med(r['recorded']) * 1e3:>9.2f} {w:>5.2f}x |"
            f" {med(pc) * 1e3:>8.2f} ({min(pc) * 1e3:.2f}-{max(pc) * 1e3:.2f})"
            f" {med(rc) * 1e3:>8.2f} ({min(rc) * 1e3:.2f}-{max(rc) * 1e3:.2f}) {c:>5.2f}x {n_sites:>6}"
        )
    load1 = os.getloadavg()
    print(f"load average at end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    print(
        f"recorded/plain, medians: wall max {max(wall_ratios):.2f}x, CPU max {max(cpu_ratios):.2f}x"
        " (goal <= 3x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
