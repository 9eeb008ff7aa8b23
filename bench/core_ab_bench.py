#!/usr/bin/env python3
"""Two builds of the core side by side: `migrate --jobs 1` on one tree, paired runs, wall time and
peak memory, with CPython's `ast.parse` of the same files as the baseline.

    python bench/core_ab_bench.py --before OLD_CORE --after NEW_CORE [--tree DIR] [--repeat 5]

The tree defaults to the installed torch package (2,285 files). Each round runs before, after and
the ast baseline once, in that order, so the machine's drift hits all three alike; the table gives
the median and the range of the rounds, and the after/before ratios of the medians. Peak memory is
the child's maximum resident set (os.wait4). The goal of issue "Fix, don't flag": after within 1.2x
of before, in time and in memory.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def torch_tree() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed: pass --tree")
    return Path(next(iter(spec.submodule_search_locations)))


def run_core(core: str, tree: Path, work: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one `migrate --jobs 1`."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [core, "migrate", "-q", "--jobs", "1", "-t", "npu", "-o", str(out), str(tree)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):
        raise SystemExit(f"{core} exited {code}")
    shutil.rmtree(out, ignore_errors=True)
    return wall, usage.ru_maxrss / 1024.0


def run_ast(files: list[Path]) -> float:
    t0 = time.perf_counter()
    for f in files:
        try:
            ast.parse(f.read_bytes())
        except (SyntaxError, ValueError):
            pass
    return time.perf_counter() - t0


def fmt(xs: list[float], unit: str) -> str:
    return f"{statistics.median(xs):.2f} {unit} ({min(xs):.2f}-{max(xs):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the core before the change")
    ap.add_argument("--after", required=True, help="the core after the change")
    ap.add_argument("--tree", type=Path, default=None, help="default: the installed torch package")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tree = args.tree or torch_tree()
    files = sorted(p for p in tree.rglob("*.py") if p.is_file())
    print(f"tree: {tree} ({len(files)} .py files); load average {os.getloadavg()}", flush=True)
    rows: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in ("before", "after", "ast")}
    with tempfile.TemporaryDirectory(prefix="core-ab-") as tmp:
        work = Path(tmp)
        for i in range(args.repeat):
            for name, core in (("before", args.before), ("after", args.after)):
                wall, rss = run_core(core, tree, work)
                rows[name][0].append(wall)
                rows[name][1].append(rss)
            rows["ast"][0].append(run_ast(files))
            print(
                f"round {i + 1}: before {rows['before'][0][-1]:.2f} s {rows['before'][1][-1]:.0f} MB, "
                f"after {rows['after'][0][-1]:.2f} s {rows['after'][1][-1]:.0f} MB, "
                f"ast.parse {rows['ast'][0][-1]:.2f} s",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")
    print("| contender | wall | peak memory |")
    print("|---|---:|---:|")
    print(f"| before `migrate --jobs 1` | {fmt(rows['before'][0], 's')} | {fmt(rows['before'][1], 'MB')} |")
    print(f"| after `migrate --jobs 1` | {fmt(rows['after'][0], 's')} | {fmt(rows['after'][1], 'MB')} |")
    print(f"| `ast.parse` of every file (in process) | {fmt(rows['ast'][0], 's')} | |")
    t = statistics.median(rows["after"][0]) / statistics.median(rows["before"][0])
    m = statistics.median(rows["after"][1]) / statistics.median(rows["before"][1])
    a = statistics.median(rows["after"][0]) / statistics.median(rows["ast"][0])
    print(f"after/before: time {t:.3f}x, memory {m:.3f}x (goal <= 1.2x each); after/ast.parse {a:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
