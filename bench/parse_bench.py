"""Parser throughput: torchport's C++ parser against CPython's `ast.parse`, in one run.

Corpus: the standard library plus the installed torch package's .py files (by default).
Prints MB/s, files/s and the ratio for: ours on one thread, ours on all cores, and ast.parse
on one thread; and our peak memory (max RSS of the child process).

    python bench/parse_bench.py [--repeat 5] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path
from typing import List, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from torchport._core import core_binary  # noqa: E402

GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else shutil.which("gtime")


def corpus(paths: Sequence[str]) -> List[str]:
    files: List[str] = []
    for root in paths:
        for dirpath, dirnames, names in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            files.extend(os.path.join(dirpath, n) for n in names if n.endswith(".py"))
    files.sort()
    return files


def accepted_by_ast(files: Sequence[str]) -> Tuple[List[str], List[bytes]]:
    keep, data = [], []
    for f in files:
        b = Path(f).read_bytes()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(b)
        except (SyntaxError, ValueError, RecursionError):
            continue
        keep.append(f)
        data.append(b)
    return keep, data


def time_ast(files: Sequence[str]) -> float:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in files:
            with open(f, "rb") as fh:
                ast.parse(fh.read())
    return time.perf_counter() - t0


def time_ours(binary: str, listfile: str, jobs: int) -> Tuple[float, int]:
    """Wall time of one `torchport dev parse` run, and its peak RSS in KiB.

    The peak comes from GNU time (/usr/bin/time), which starts the parser from a small process:
    getrusage(RUSAGE_CHILDREN) from here would count this Python process's memory, which a
    forked child carries until it execs.
    """
    cmd = [binary, "dev", "parse", "--stdin-list", "--quiet", "--jobs", str(jobs)]
    with tempfile.NamedTemporaryFile("r", suffix=".rss", encoding="utf-8") as rss_file:
        if GNU_TIME:
            cmd = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *cmd]
        t0 = time.perf_counter()
        with open(listfile, encoding="utf-8") as stdin:
            proc = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - t0
        if proc.returncode not in (0, 1):
            raise SystemExit(f"torchport dev parse failed ({proc.returncode}): {proc.stderr[-2000:]}")
        text = rss_file.read().strip().splitlines()
    rss = int(text[-1]) if text and text[-1].isdigit() else -1
    return elapsed, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved runs per contender (median, range)")
    args = ap.parse_args()
    paths = args.paths
    if not paths:
        paths = [sysconfig.get_paths()["stdlib"]]
        try:
            import importlib.util

            spec = importlib.util.find_spec("torch")
            if spec and spec.origin:
                paths.append(str(Path(spec.origin).parent))
        except ImportError:
            pass
    binary = core_binary()
    files, data = accepted_by_ast(corpus(paths))
    mb = sum(len(b) for b in data) / 1e6
    n = len(files)
    jobs = os.cpu_count() or 1
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as tmp:
        tmp.write("\n".join(files) + "\n")
        listfile = tmp.name
    try:
        # Interleaved, so that drift in the machine's load hits every contender alike.
        t_asts: list[float] = []
        runs1: list[tuple[float, int]] = []
        runsn: list[tuple[float, int]] = []
        for _ in range(args.repeat):
            t_asts.append(time_ast(files))
            runs1.append(time_ours(binary, listfile, 1))
            runsn.append(time_ours(binary, listfile, jobs))
    finally:
        os.unlink(listfile)
    rss = max(r[1] for r in runs1 + runsn)
    times = {
        "ast.parse (1 thread)": t_asts,
        "torchport (1 thread)": [r[0] for r in runs1],
        f"torchport ({jobs} threads)": [r[0] for r in runsn],
    }
    t_ast = statistics.median(t_asts)
    print(f"corpus: {n} files, {mb:.1f} MB ({', '.join(paths)}); {args.repeat} interleaved runs")
    print(
        f"{'parser':<28}{'median s':>9}{'min-max s':>15}{'MB/s':>8}{'files/s':>9}{'vs ast':>9}"
        f"{'ratio per run min-max':>24}"
    )
    for name, ts in times.items():
        t = statistics.median(ts)
        per_run = [a / b for a, b in zip(t_asts, ts)]
        print(
            f"{name:<28}{t:>9.2f}{f'{min(ts):.2f}-{max(ts):.2f}':>15}{mb / t:>8.1f}{n / t:>9.0f}"
            f"{t_ast / t:>8.2f}x{f'{min(per_run):.2f}-{max(per_run):.2f}x':>24}"
        )
    if rss > 0:
        print(f"torchport peak memory (max RSS, GNU time): {rss / 1024:.1f} MiB")
    else:
        print("torchport peak memory: not measured (needs GNU time: apt-get install time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
