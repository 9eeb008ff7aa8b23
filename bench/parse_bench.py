"""Parser throughput: torchport's C++ parser against CPython's `ast.parse`, in one run.

Corpus: the standard library plus the installed torch package's .py files (by default).
Prints MB/s, files/s and the ratio for: ours on one thread, ours on all cores, and ast.parse
on one thread; and our peak memory (max RSS of the child process).

    python bench/parse_bench.py [--repeat 3] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
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
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs for each contender")
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
        t_ast = min(time_ast(files) for _ in range(args.repeat))
        runs1 = [time_ours(binary, listfile, 1) for _ in range(args.repeat)]
        runsn = [time_ours(binary, listfile, jobs) for _ in range(args.repeat)]
    finally:
        os.unlink(listfile)
    t1, rss = min(r[0] for r in runs1), max(r[1] for r in runs1 + runsn)
    tn = min(r[0] for r in runsn)
    print(f"corpus: {n} files, {mb:.1f} MB ({', '.join(paths)})")
    print(f"{'parser':<28}{'seconds':>9}{'MB/s':>9}{'files/s':>10}{'vs ast':>9}")
    rows = [
        ("ast.parse (1 thread)", t_ast),
        ("torchport (1 thread)", t1),
        (f"torchport ({jobs} threads)", tn),
    ]
    for name, t in rows:
        print(f"{name:<28}{t:>9.2f}{mb / t:>9.1f}{n / t:>10.0f}{t_ast / t:>8.2f}x")
    if rss > 0:
        print(f"torchport peak memory (max RSS, GNU time): {rss / 1024:.1f} MiB")
    else:
        print("torchport peak memory: not measured (needs GNU time: apt-get install time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
