"""Benchmark for `torchport probe` / `torchport compare` (issue 6), printed in one run with ratios.

1. Probing overhead: the time of one training step of a small transformer-style model, plain and
   inside `torchport.probe(model, level="module")` (statistics mode). Goal: at most 1.5x.
2. Compare throughput: two full-tensor dumps written by `torchport.probe(..., full_tensors=True)`,
   compared with `compare_dumps`, against simply reading every tensor file of both dumps, from
   disk (cold page cache) and from the page cache (warm). Goal: within 2x of reading. The default
   is GB scale (two 1.1 GiB dumps, 2.25 GiB in all) and runs both parts in about 2-3 minutes on an
   idle 2-core machine; --gb 0.25 is quicker.

Usage: python bench/probe_bench.py [--gb 1] [--steps 10] [--jobs 2] [--keep DIR] [--part both]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import torchport
from torchport.probe.compare import compare_dumps


def _model() -> nn.Module:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    return nn.Sequential(nn.Linear(64, 256), nn.TransformerEncoder(layer, num_layers=4), nn.Linear(256, 64))


def _step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> None:
    loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def bench_overhead(steps: int, tmp: Path) -> tuple[tuple[float, float], tuple[float, float], int]:
    """Median (wall, process CPU) seconds of a plain and of a probed step."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(8, 64, 64)
    for _ in range(3):
        _step(model, opt, x)
    plain: list[tuple[float, float]] = []
    probed: list[tuple[float, float]] = []
    records = 0
    for _ in range(steps):  # interleave so that drift in machine load hits both alike
        t, c = time.perf_counter(), time.process_time()
        _step(model, opt, x)
        plain.append((time.perf_counter() - t, time.process_time() - c))
        with torchport.probe(model, out=tmp / "overhead") as p:
            t, c = time.perf_counter(), time.process_time()
            _step(model, opt, x)
            probed.append((time.perf_counter() - t, time.process_time() - c))
        records = p._seq
    med = lambda xs, i: float(np.median([v[i] for v in xs]))  # noqa: E731
    return (med(plain, 0), med(plain, 1)), (med(probed, 0), med(probed, 1)), records


def _write_dump(out: Path, gb: float, perturb: float) -> None:
    """Full-tensor dump of a forward pass through Linear layers, about `gb` GB in size."""
    torch.manual_seed(0)
    width, depth = 1024, 8
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
    if perturb:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * perturb)
    # each layer saves its input and output: 2 * depth tensors of batch x width float32
    batch = max(1, int(gb * 2**30 / (2 * depth * width * 4)))
    x = torch.randn(batch, width, generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), torchport.probe(model, out=out, full_tensors=True, max_tensor_bytes=None):
        model(x)


def _read_all(dumps: list[Path]) -> int:
    """The baseline: read every tensor file once, sequentially, into one reused 1 MiB buffer."""
    n = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    for d in dumps:
        for f in sorted((d / "tensors").iterdir()):
            with open(f, "rb", buffering=0) as fh:
                while k := fh.readinto(view):
                    n += k
    return n


Times = tuple[float, float]  # (wall, process CPU) seconds


def _evict(dumps: list[Path]) -> None:
    """Drop these files (only these) from the page cache: flush, then POSIX_FADV_DONTNEED."""
    for d in dumps:
        for f in (d / "tensors").iterdir():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def bench_compare(gb: float, jobs: int, tmp: Path) -> tuple[dict[str, tuple[Times, Times]], int, int]:
    """Best (wall, process CPU) seconds of reading both dumps' tensor files and of comparing them,
    "cold" (the dumps' pages evicted from the page cache first) and "warm" (read from the cache)."""
    a, b = tmp / "a", tmp / "b"
    _write_dump(a, gb, perturb=1e-3)
    _write_dump(b, gb, perturb=0.0)
    nbytes = _read_all([a, b])
    results = {}
    for mode in ("cold", "warm"):
        read_s = cmp_s = read_c = cmp_c = float("inf")
        for _ in range(3):  # alternate, keep the best of each: other processes' load hits both alike
            if mode == "cold":
                _evict([a, b])
            t, c = time.perf_counter(), time.process_time()
            _read_all([a, b])
            read_s, read_c = min(read_s, time.perf_counter() - t), min(read_c, time.process_time() - c)
            if mode == "cold":
                _evict([a, b])
            t, c = time.perf_counter(), time.process_time()
            res = compare_dumps(a, b, workers=jobs)
            cmp_s, cmp_c = min(cmp_s, time.perf_counter() - t), min(cmp_c, time.process_time() - c)
        results[mode] = ((read_s, read_c), (cmp_s, cmp_c))
    compared = sum(1 for r in res.rows if r.metrics)
    return results, nbytes, compared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="GiB per full-tensor dump (default 1)")
    ap.add_argument("--steps", type=int, default=10, help="timed training steps (default 10)")
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), help="compare threads")
    ap.add_argument("--keep", help="write the dumps here instead of a temporary directory")
    ap.add_argument("--part", choices=("both", "overhead", "compare"), default="both")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="probe_bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
        print(f"load average at start: {os.getloadavg()[0]:.1f}")
        if args.part in ("both", "overhead"):
            plain, probed, records = bench_overhead(args.steps, tmp)
            print(
                f"probe overhead (statistics, module level, {records} records/step): "
                f"plain step {plain[0] * 1e3:.1f} ms wall / {plain[1] * 1e3:.1f} ms CPU, "
                f"probed step {probed[0] * 1e3:.1f} ms wall / {probed[1] * 1e3:.1f} ms CPU, "
                f"ratio {probed[0] / plain[0]:.2f}x wall, {probed[1] / plain[1]:.2f}x CPU (goal <= 1.5x)"
            )
        if args.part == "overhead":
            return
        results, nbytes, compared = bench_compare(args.gb, args.jobs, tmp)
        gbs = nbytes / 2**30
        for mode, ((read_s, read_c), (cmp_s, cmp_c)) in results.items():
            print(
                f"compare, {mode} cache ({gbs:.2f} GiB in two dumps, {compared} tensor pairs, "
                f"{args.jobs} threads): read files {read_s:.2f} s wall ({gbs / read_s:.2f} GiB/s) / "
                f"{read_c:.2f} s CPU, compare {cmp_s:.2f} s wall ({gbs / cmp_s:.2f} GiB/s) / "
                f"{cmp_c:.2f} s CPU, ratio {cmp_s / read_s:.2f}x wall (goal <= 2x)"
            )
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
