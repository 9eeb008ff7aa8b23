#!/usr/bin/env python3
"""torchport analyze / migrate against a Python-AST baseline, on one synthetic CUDA project.

The baseline is the least work any Python-based migration tool does per file: read it, build
CPython's `ast` (C-implemented, far faster than the libcst trees Ascend's GPU2Ascend builds) and
walk it looking for `.cuda` attributes. It rewrites nothing and writes no report, so the ratio is a
lower bound on our advantage over such tools.

Usage: python bench/migrate_bench.py [--files 400] [--repeat 3] [--jobs N] [--core PATH]
Prints CPU time (user+sys of the process or its children) and wall time, median and range of --repeat runs.
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

TEMPLATE = '''\
"""Module {i}: a training loop written for CUDA."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast


class Net{i}(torch.nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU())
        self.head = torch.nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.body(x))


def setup(rank: int) -> torch.device:
    if "RANK" in os.environ:
        dist.init_process_group("nccl", rank=rank)
    torch.cuda.set_device(rank)
    torch.backends.cudnn.benchmark = True
    return torch.device(f"cuda:{{rank}}")


def train(args) -> float:
    device = setup(args.rank)
    model = Net{i}().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = GradScaler()
    loss = torch.zeros(1, device="cuda")
    for step in range(args.steps):
        x = torch.randn(32, 64, device=device)
        y = torch.randint(0, 10, (32,)).cuda(non_blocking=True)
        with autocast():
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step % 10 == 0:
            torch.cuda.synchronize()
            print(step, loss.item(), torch.cuda.max_memory_allocated() / 2**20)
    torch.save(model.state_dict(), "ckpt{i}.pt")
    state = torch.load("ckpt{i}.pt", map_location="cuda:0")
    model.load_state_dict(state)
    return float(loss)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--steps", type=int, default=100)
    train(p.parse_args())


if __name__ == "__main__":
    main()
'''


def make_corpus(root: Path, files: int) -> int:
    lines = 0
    for i in range(files):
        d = root / f"pkg{i % 20}"
        d.mkdir(parents=True, exist_ok=True)
        text = TEMPLATE.format(i=i)
        (d / f"mod{i}.py").write_text(text)
        lines += text.count("\n")
    return lines


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(fn: Callable[[], None], cpu: Callable[[], float], repeat: int) -> tuple[list[float], list[float]]:
    """CPU and wall seconds of each of `repeat` runs."""
    cpus, walls = [], []
    for _ in range(repeat):
        c0, w0 = cpu(), time.perf_counter()
        fn()
        cpus.append(cpu() - c0)
        walls.append(time.perf_counter() - w0)
    return cpus, walls


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):8.3f} ({min(xs):.3f}-{max(xs):.3f})"


def baseline(root: Path) -> None:
    found = 0
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_bytes(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "cuda":
                found += 1
    if found == 0:
        raise SystemExit("baseline found nothing: corpus is wrong")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="torchport --jobs (1 = compare single-threaded)")
    ap.add_argument("--core", help="the C++ torchport executable (default: the installed one)")
    args = ap.parse_args()
    core = args.core
    if core is None:
        from torchport._core import core_binary

        core = core_binary()
    work = Path(tempfile.mkdtemp(prefix="tp_migrate_bench_"))
    try:
        proj = work / "proj"
        lines = make_corpus(proj, args.files)

        def analyze() -> None:
            p = subprocess.run(
                [core, "analyze", str(proj), "-t", "npu", "--format", "json", "-j", str(args.jobs)],
                stdout=subprocess.DEVNULL,
                check=False,
            )
            if p.returncode != 1:
                raise SystemExit(f"analyze exited {p.returncode}")

        def migrate() -> None:
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run(
                [core, "migrate", str(proj), "-o", str(out), "-t", "npu", "-q", "-j", str(args.jobs)],
                check=True,
            )

        base_cpu, base_wall = measure(lambda: baseline(proj), self_cpu, args.repeat)
        an_cpu, an_wall = measure(analyze, children_cpu, args.repeat)
        mi_cpu, mi_wall = measure(migrate, children_cpu, args.repeat)
        print(f"corpus: {args.files} files, {lines} lines; torchport --jobs {args.jobs}; core {core}")
        print(f"load average: {os.getloadavg()[0]:.1f}")
        rows = [
            ("baseline: python ast.parse + walk (no output)", base_cpu, base_wall),
            ("torchport analyze (all rules, JSON report)", an_cpu, an_wall),
            ("torchport migrate (rewrite + tree + reports)", mi_cpu, mi_wall),
        ]
        print(f"{'':46} {'CPU s median (min-max)':>24} {'wall s median (min-max)':>24} {'CPU ratio':>10}")
        base = statistics.median(base_cpu)
        for name, cpu, wall in rows:
            print(f"{name:46} {spread(cpu):>24} {spread(wall):>24} {base / statistics.median(cpu):10.2f}")
        print(
            f"CPU ratio = baseline CPU median / torchport CPU median over {args.repeat} runs "
            "(higher is better for torchport)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
