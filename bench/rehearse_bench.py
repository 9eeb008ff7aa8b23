"""Benchmark: a training step of a small CNN and of a transformer block under `torchport rehearse` (the
rehearsal device, registered as npu) against the same step on plain CPU, in one run; and the memory
overhead (peak RSS growth of the step, in a fresh process per mode).

    python bench/rehearse_bench.py [--runs 7] [--steps 20]

Each run is a fresh process per mode (cpu, rehearse) and model; the step time is the median of --steps
timed steps after 3 warm-up steps. Prints median and spread (min..max) over the runs and the ratios.
Goals (issue 12): step time <= 1.3x plain CPU, memory overhead <= 10%.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, os, resource, sys, time
import torch
mode, model_name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.manual_seed(0)
torch.set_num_threads(1)
if mode == "rehearse":
    from torchport.rehearse import runtime
    t0 = time.perf_counter()
    runtime.activate("npu")
    startup = time.perf_counter() - t0
    dev = "npu"
else:
    startup = 0.0
    dev = "cpu"

class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = torch.nn.Conv2d(32, 64, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(64)
        self.fc = torch.nn.Linear(64 * 8 * 8, 10)
    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.c2(x))), 2)
        return self.fc(x.flatten(1))

def make():
    if model_name == "cnn":
        m = CNN()
        x = torch.randn(32, 3, 32, 32)
        y = torch.randint(0, 10, (32,))
        loss_fn = lambda out: torch.nn.functional.cross_entropy(out, y.to(dev))
    else:
        m = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
        x = torch.randn(16, 64, 256)
        loss_fn = lambda out: out.pow(2).mean()
    return m.to(dev), x.to(dev), loss_fn

m, x, loss_fn = make()
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(m(x))
    loss.backward()
    opt.step()
    return loss.item()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(3):
    step()
times = []
for _ in range(steps):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"step_s": sorted(times)[len(times)//2], "rss_growth_kib": rss1 - rss0,
                  "rss_kib": rss1, "startup_s": startup}))
"""


def run_child(mode: str, model: str, steps: int) -> dict[str, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(
        [sys.executable, "-c", CHILD, mode, model, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if p.returncode != 0:
        raise SystemExit(f"{mode} {model} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.4g} ({min(xs):.4g}..{max(xs):.4g})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    from torchport.rehearse import _build

    t0 = time.perf_counter()
    _build.load(quiet=True)
    print(f"extension load (cached build): {time.perf_counter() - t0:.2f} s")
    for model in ("cnn", "transformer"):
        res: dict[str, list[dict[str, float]]] = {"cpu": [], "rehearse": []}
        for _ in range(args.runs):
            for mode in ("cpu", "rehearse"):  # interleaved, so both see the same load
                res[mode].append(run_child(mode, model, args.steps))
        cpu_t = [r["step_s"] * 1e3 for r in res["cpu"]]
        reh_t = [r["step_s"] * 1e3 for r in res["rehearse"]]
        ratios = [b / a for a, b in zip(cpu_t, reh_t)]
        cpu_m = [r["rss_kib"] / 1024 for r in res["cpu"]]
        reh_m = [r["rss_kib"] / 1024 for r in res["rehearse"]]
        mem = [b / a - 1 for a, b in zip(cpu_m, reh_m)]
        startup = [r["startup_s"] for r in res["rehearse"]]
        print(
            f"{model}: step ms cpu {spread(cpu_t)}, rehearse {spread(reh_t)}; "
            f"ratio {spread(ratios)} (goal <= 1.3)"
        )
        print(
            f"{model}: peak RSS MiB cpu {spread(cpu_m)}, rehearse {spread(reh_m)}; "
            f"overhead {spread([100 * x for x in mem])} % (goal <= 10)"
        )
        print(f"{model}: rehearsal start-up (activate, cached build) s {spread(startup)}")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
