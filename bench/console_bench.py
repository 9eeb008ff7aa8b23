#!/usr/bin/env python3
"""The command users run next to the core it starts (issue 35 §1): `torchport migrate` through the console
script that `pip install` gives, and the C++ core alone, on one tree, paired rounds.

    python bench/console_bench.py [--console .venv/bin/torchport] [--core build/ci/torchport]
                                  [--tree DIR] [--jobs 2] [--repeat 5]

The tree defaults to the installed torch package. Each round runs the console script, then the core, with
the same arguments (`migrate TREE -t npu -o OUT -q --jobs N`), so the machine's drift hits both alike. For
each the CPU time (user + system of the process and of every process it waited for, from os.wait4) and the
wall time are measured; the table gives the median and the range of the rounds and the console/core ratios
of the medians (goal: at most 1.2x in CPU). The size of what the run wrote (the result tree and, within it,
torchport-report/) is printed next to the size of the input. The load average before and after is printed:
a number taken on a loaded machine is not one to publish.
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

ROOT = Path(__file__).resolve().parents[1]


def torch_tree() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed: pass --tree")
    return Path(next(iter(spec.submodule_search_locations)))


def size(path: Path) -> int:
    """Bytes of the regular files under path (links not followed)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command, its waited-for children included."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):
        raise SystemExit(f"{cmd[0]} exited {code}: {err.decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--console", default=str(Path(sys.executable).with_name("torchport")))
    ap.add_argument("--core", default=str(ROOT / "build" / "ci" / "torchport"))
    ap.add_argument("--tree", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tree = (args.tree or torch_tree()).resolve()
    env = dict(os.environ, TORCHPORT_CORE=args.core)  # the console script starts this same core
    load_before = os.getloadavg()[0]
    cpu: dict[str, list[float]] = {"console": [], "core": []}
    wall: dict[str, list[float]] = {"console": [], "core": []}
    written = report = 0
    with tempfile.TemporaryDirectory(prefix="tp-console-bench-") as tmp:
        out = Path(tmp) / "out"
        for _ in range(args.repeat):
            for who, exe in (("console", args.console), ("core", args.core)):
                shutil.rmtree(out, ignore_errors=True)
                c, w = timed(
                    [exe, "migrate", str(tree), "-t", "npu", "-o", str(out), "-q", "--jobs", str(args.jobs)],
                    env,
                )
                cpu[who].append(c)
                wall[who].append(w)
                if who == "console":
                    result = next(out.iterdir())
                    written, report = size(result), size(result / "torchport-report")
        shutil.rmtree(out, ignore_errors=True)
    load_after = os.getloadavg()[0]
    print(
        f"tree: {tree} ({size(tree) / 1e6:.1f} MB), migrate -t npu --jobs {args.jobs}, "
        f"{args.repeat} paired rounds"
    )
    print("| run | CPU (median, range) | wall (median, range) |")
    print("|---|---|---|")
    for who in ("console", "core"):
        print(f"| {who} | {spread(cpu[who])} | {spread(wall[who])} |")
    c = statistics.median(cpu["console"]) / statistics.median(cpu["core"])
    w = statistics.median(wall["console"]) / statistics.median(wall["core"])
    print(f"console / core: CPU {c:.2f}x, wall {w:.2f}x (goal: CPU <= 1.2x)")
    print(f"written: {written / 1e6:.1f} MB, of which torchport-report/ {report / 1e6:.1f} MB")
    print(f"load average (1 min): {load_before:.1f} before, {load_after:.1f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
