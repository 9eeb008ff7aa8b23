#!/usr/bin/env python3
"""`torchport analyze` next to ruff's parse-only check (issue 35 §4), on one tree, in paired rounds.

    python bench/ruff_e9_bench.py [--core .venv/.../torchport/_bin/torchport] [--ruff .venv/bin/ruff]
                                  [--tree DIR] [--target npu] [--jobs 2] [--repeat 5] [--also OLD_CORE]...

ruff is the anchor: `ruff check --isolated --no-cache --select E9` reads, tokenizes and parses every file and
reports syntax errors, nothing more. `torchport analyze TREE -t npu -q` parses, models and runs every rule,
and prints its findings (to /dev/null here). Both see the same files: ruff is given
`--extend-exclude '*.pyi'`, because torchport migrates .py files only; the script counts ruff's files
(`--show-files`) and torchport's (its report) and refuses to compare if they differ.

Each round runs both, one after the other, so the machine's drift hits both alike (with `--also`, older
builds of the core run in the same rounds, each round starting one further along the list). Measured per
run: CPU (user + system of the process, from os.wait4) and wall time. ruff uses a thread per core (rayon),
torchport `--jobs N`; CPU is the budget the issue sets (analyze's CPU <= ruff's), wall is printed for
reference.
The table gives the medians, the ranges, the analyze/ruff ratios of the medians, and the load average before
and after: a number taken on a loaded machine is not one to publish.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console_bench import spread, torch_tree  # the same tree and table cells as the console benchmark

ROOT = Path(__file__).resolve().parents[1]


def installed_core() -> Path:
    """The core that `pip install` put beside the torchport package (the Release build users run)."""
    import importlib.util

    spec = importlib.util.find_spec("torchport")
    if spec is None or not spec.submodule_search_locations:
        return ROOT / "build" / "ci" / "torchport"
    return Path(next(iter(spec.submodule_search_locations))) / "_bin" / "torchport"


def timed(cmd: list[str], ok: tuple[int, ...]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command, its waited-for children included."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {code}: {err.decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--core", type=Path, default=None, help="default: the core installed with torchport")
    ap.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        help="another core (an older build) run in the same rounds, in turn with the first: repeatable",
    )
    ap.add_argument("--ruff", default=str(Path(sys.executable).with_name("ruff")))
    ap.add_argument("--tree", type=Path, default=None, help="default: the installed torch package")
    ap.add_argument("--target", default="npu")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tree = (args.tree or torch_tree()).resolve()
    core = (args.core or installed_core()).resolve()
    ruff = [args.ruff, "check", "--isolated", "--no-cache", "--select", "E9", "--extend-exclude", "*.pyi"]
    analyze = [str(core), "analyze", str(tree), "-t", args.target, "-q", "--jobs", str(args.jobs)]

    # The same files on both sides, or no comparison.
    shown = subprocess.run([*ruff, "--show-files", str(tree)], capture_output=True, text=True, check=False)
    ruff_files = sum(1 for line in shown.stdout.splitlines() if line.strip().endswith(".py"))
    with tempfile.TemporaryDirectory(prefix="tp-ruff-bench-") as tmp:
        subprocess.run([*analyze, "-o", tmp], stdout=subprocess.DEVNULL, check=False)
        from torchport import report_json

        report = report_json.load(Path(tmp) / "report.json")
        ours = sum(1 for f in report["files"] if f.get("python") and str(f["file"]).endswith(".py"))
    if ruff_files != ours:
        raise SystemExit(f"not the same files: ruff checks {ruff_files} .py files, torchport {ours}")

    others = {f"also {i + 1}": [str(p.resolve()), *analyze[1:]] for i, p in enumerate(args.also)}
    runs = {"analyze": analyze, **others, "ruff": [*ruff, str(tree)]}
    load_before = os.getloadavg()[0]
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs)
    for k in range(args.repeat):
        # each round in the order of the last, turned by one: no build always runs first
        for name in order[k % len(order) :] + order[: k % len(order)]:
            c, w = timed(runs[name], (0, 1))
            cpu[name].append(c)
            wall[name].append(w)
    load_after = os.getloadavg()[0]
    print(f"tree: {tree}, {ours} .py files, target {args.target}, {args.repeat} paired rounds")
    version = subprocess.run([args.ruff, "--version"], capture_output=True, text=True, check=False).stdout
    print(f"torchport core: {core}; ruff: {version.strip()}")
    print("| run | CPU (median, range) | wall (median, range) |")
    print("|---|---|---|")
    ours_cmd = f"`torchport analyze -t {args.target} --jobs {args.jobs}`"
    print(f"| {ours_cmd} | {spread(cpu['analyze'])} | {spread(wall['analyze'])} |")
    for i, p in enumerate(args.also):
        name = f"also {i + 1}"
        print(f"| {ours_cmd}, {p} | {spread(cpu[name])} | {spread(wall[name])} |")
    print(f"| `ruff check --select E9` | {spread(cpu['ruff'])} | {spread(wall['ruff'])} |")
    c = statistics.median(cpu["analyze"]) / statistics.median(cpu["ruff"])
    w = statistics.median(wall["analyze"]) / statistics.median(wall["ruff"])
    print(f"analyze / ruff: CPU {c:.2f}x, wall {w:.2f}x (goal: CPU <= 1.0x)")
    for i, p in enumerate(args.also):
        name = f"also {i + 1}"
        ratio = statistics.median(cpu[name]) / statistics.median(cpu["ruff"])
        print(f"{p} / ruff: CPU {ratio:.2f}x")
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after")
    print(json.dumps({"cpu": cpu, "wall": wall}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
