"""Time `torchport analyze --third-party` over a real site-packages tree.

    python bench/third_party_bench.py [--core PATH] [--site DIR] [--runs 5] [--target npu]
                                      [--corpus-project DIR] [--libraries transformers,accelerate]

Two workloads, each run --runs times (median, min and max wall time printed, with the load
average before and after and the peak RSS of the core):

1. corpus project: a copy of a real project (default ../shared/corpus/karpathy__llm.c) analysed
   against the whole site-packages directory: only what it calls is parsed.
2. whole libraries: a generated project that calls every public module-level function and class of
   every module of the given libraries (found with Python's ast, not with torchport), so that the
   analysis parses and follows those libraries entirely, as Ascend's `-m third_party` does on a
   library folder. torch itself is the framework boundary (its calls are leaves), as in Ascend.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def public_names(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in tree.body:
        if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ) and not node.name.startswith("_"):
            out.append(node.name)
    return out


def whole_library_project(site: Path, libraries: list[str], dest: Path) -> tuple[int, int]:
    """Writes dest/calls_<lib>.py calling every public def of every module; (modules, calls)."""
    dest.mkdir(parents=True)
    modules = calls = 0
    for lib in libraries:
        root = site / lib
        lines: list[str] = []
        for py in sorted(root.rglob("*.py")):
            rel = py.relative_to(site).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            if any(not p.isidentifier() for p in parts):
                continue
            names = public_names(py)
            if not names:
                continue
            mod = ".".join(parts)
            modules += 1
            alias = f"m{modules}"
            lines.append(f"import {mod} as {alias}")
            for n in names:
                lines.append(f"{alias}.{n}()")
                calls += 1
        (dest / f"calls_{lib}.py").write_text("\n".join(lines) + "\n")
    return modules, calls


def run_once(core: str, project: Path, site: Path, target: str) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the child: user + sys, its JSON report)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(
        [
            core,
            "analyze",
            str(project),
            "-t",
            target,
            "--third-party",
            "--env",
            str(site),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode not in (0, 1):
        raise SystemExit(f"torchport failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, cpu, json.loads(p.stdout)


def measure(name: str, core: str, project: Path, site: Path, target: str, runs: int) -> None:
    load0 = os.getloadavg()
    times = []
    cpus = []
    doc: dict = {}
    for _ in range(runs):
        dt, cpu, doc = run_once(core, project, site, target)
        times.append(dt)
        cpus.append(cpu)
    load1 = os.getloadavg()
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    s = doc["stats"]
    print(f"== {name}")
    print(
        f"   {runs} runs: median {statistics.median(times):.3f} s, min {min(times):.3f} s, "
        f"max {max(times):.3f} s, stdev {statistics.pstdev(times):.3f} s"
    )
    print(
        f"   CPU (user+sys): median {statistics.median(cpus):.3f} s, min {min(cpus):.3f} s, "
        f"max {max(cpus):.3f} s"
    )
    print(
        f"   modules parsed {s['modules_parsed']} ({s['bytes_parsed'] / 1e6:.1f} MB), functions followed "
        f"{s['functions_followed']}, library APIs reaching a leaf {s['library_apis_reaching']}, "
        f"project calls reaching one {len(doc['findings'])}, libraries {len(doc['libraries'])}"
    )
    print(
        f"   load average before {load0[0]:.2f}, after {load1[0]:.2f}; "
        f"peak RSS of the core so far {rss_mib:.1f} MiB"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--core", default=os.environ.get("TORCHPORT_CORE", str(REPO / "build" / "dev" / "torchport"))
    )
    ap.add_argument("--site", default=sysconfig.get_paths()["purelib"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--target", default="npu")
    ap.add_argument(
        "--corpus-project", default=str(REPO.parent.parent / "shared" / "corpus" / "karpathy__llm.c")
    )
    ap.add_argument("--libraries", default="transformers,accelerate")
    a = ap.parse_args()
    site = Path(a.site)
    print(f"core {a.core}; site-packages {site}; target {a.target}; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(a.corpus_project)
        if corpus.is_dir():
            project = Path(tmp) / corpus.name
            shutil.copytree(corpus, project, symlinks=True)
            measure(f"corpus project {corpus.name}", a.core, project, site, a.target, a.runs)
        libs = [x for x in a.libraries.split(",") if (site / x).is_dir()]
        if libs:
            gen = Path(tmp) / "whole"
            modules, calls = whole_library_project(site, libs, gen)
            size = sum(p.stat().st_size for lib in libs for p in (site / lib).rglob("*.py"))
            print(
                f"whole libraries {','.join(libs)}: {size / 1e6:.1f} MB of .py, {modules} modules, "
                f"{calls} calls generated"
            )
            measure(f"whole libraries {','.join(libs)}", a.core, gen, site, a.target, a.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
