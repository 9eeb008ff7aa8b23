"""Cost of `torchport verify` over running the two scripts plainly for the same N steps.

In one run, alternating so that machine load hits all alike, each repetition times:
- plain: `torchport run --target cpu train.py --steps N` (the original) plus `python train.py
  --steps N` in the migrated tree (the two runs verify makes, without it);
- verify: `torchport verify ORIGINAL MIGRATED --target cpu --steps N --level module` (both runs with
  the recorder and the probe, then the comparison).

Goal: verify <= 1.5x the sum of the two plain runs, at module level. The training script is a
small CNN + MLP on random data (CUDA version), migrated once with `torchport migrate --target cpu`
before timing (the migration is not part of either side).

usage: python bench/verify_bench.py [--steps N] [--repeat R] [--level module|op]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAIN = """
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn = nn.BatchNorm2d(32)
        self.fc1 = nn.Linear(32 * 8 * 8, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()
torch.manual_seed(0)
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randn(64, 3, 32, 32).cuda()
labels = torch.randint(0, 10, (64,)).cuda()
for step in range(args.steps):
    opt.zero_grad()
    loss = F.cross_entropy(model(data), labels)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
"""


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if p.returncode not in (0,):
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--level", default="module")
    ns = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(root / "python"))
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="verify-bench-"))
    try:
        orig = work / "proj"
        orig.mkdir()
        (orig / "train.py").write_text(TRAIN)
        p = subprocess.run(
            [py, "-m", "torchport", "migrate", str(orig), "-o", str(work / "out"), "--target", "cpu", "-q"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if p.returncode != 0:
            sys.exit(p.stderr)
        migrated = work / "out" / "proj_cpu"
        steps = ["--steps", str(ns.steps)]
        plain, verify = [], []
        for _ in range(ns.repeat):
            a = timed(
                [py, "-m", "torchport", "run", "--target", "cpu", "--quiet", "train.py", *steps], orig, env
            )
            b = timed([py, "train.py", *steps], migrated, env)
            plain.append(a + b)
            v = timed(
                [
                    py,
                    "-m",
                    "torchport",
                    "verify",
                    str(orig),
                    str(migrated),
                    "--target",
                    "cpu",
                    "--level",
                    ns.level,
                    *steps,
                    "--",
                    *steps,
                ],
                work,
                env,
            )
            verify.append(v)
        ratios = [v / p for v, p in zip(verify, plain)]
        load = os.getloadavg()

        def fmt(xs: list[float]) -> str:
            return f"median {statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f})"

        print(
            f"steps {ns.steps}, level {ns.level}, {ns.repeat} repetitions, load average "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        )
        print(f"plain original + migrated: {fmt(plain)}")
        print(f"torchport verify:          {fmt(verify)}")
        print(
            f"ratio verify / plain:      median {statistics.median(ratios):.2f}x "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f}); goal <= 1.5x"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
