#!/usr/bin/env python3
"""torchport migrate against a libcst pipeline and torch.utils.hipify, on the installed torch's .py tree.

The corpus is every .py file of the installed `torch` package (about 2,300 files, 50 MB), copied to a
temporary directory so that every contender reads the same files (use --limit N for a quick run).

Contenders, each timed by wall clock:
- torchport: `torchport migrate TREE -o OUT --target npu -q --jobs 1` and `--jobs 2`, the whole process.
- libcst: parse each file with libcst, run a small CSTTransformer doing the renames torchport does for
  npu (torch.cuda.X -> torch_npu.npu.X, .cuda( -> .npu(, "cuda[:N]" -> "npu[:N]", "nccl" -> "hccl",
  add `import torch_npu`), write the result to an output tree. One process and a Pool of 2.
  libcst is what Ascend's migration tool builds on; install it with `pip install libcst`.
- hipify: torch.utils.hipify.hipify_python.hipify over a copy of the tree (in place),
  extensions=(".py",), includes=["*"], is_pytorch_extension=True.
The Python contenders are timed in-process (no interpreter start-up or import cost); torchport's time
includes its process start-up.

With --repeat N (default 1) the contenders run N rounds, in the same order each round, and each row gives
the median and the range of its N times; the ratios are of medians.

Usage: python bench/migrate_vs_peers_bench.py [--limit N] [--core PATH] [--tmp DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

try:
    import libcst as cst
except ImportError:  # the contender is skipped, main() says how to install it
    cst = None  # type: ignore[assignment]

_DEVICE_STRING = re.compile(r"""^([rRuU]?)(["'])(cuda|nccl)(:\d+)?\2$""")


def _torch_npu_npu() -> Any:
    return cst.Attribute(value=cst.Name("torch_npu"), attr=cst.Name("npu"))


if cst is not None:

    class NpuRenamer(cst.CSTTransformer):
        """The renames torchport's npu target makes, in their simplest form."""

        def __init__(self) -> None:
            super().__init__()
            self.changed = False

        def leave_Attribute(
            self, original_node: cst.Attribute, updated_node: cst.Attribute
        ) -> cst.BaseExpression:
            value = updated_node.value
            if isinstance(value, cst.Name) and value.value == "torch" and updated_node.attr.value == "cuda":
                self.changed = True
                return _torch_npu_npu()
            return updated_node

        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
            func = updated_node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
                self.changed = True
                return updated_node.with_changes(func=func.with_changes(attr=cst.Name("npu")))
            return updated_node

        def leave_SimpleString(
            self, original_node: cst.SimpleString, updated_node: cst.SimpleString
        ) -> cst.BaseExpression:
            m = _DEVICE_STRING.match(updated_node.value)
            if m is None:
                return updated_node
            self.changed = True
            prefix, quote, name, index = m.group(1), m.group(2), m.group(3), m.group(4) or ""
            new = "npu" if name == "cuda" else "hccl"
            return updated_node.with_changes(value=f"{prefix}{quote}{new}{index}{quote}")

        def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
            if not self.changed:
                return updated_node
            imp = cst.parse_statement("import torch_npu\n")
            return updated_node.with_changes(body=[imp, *updated_node.body])


def libcst_one(job: tuple[str, str, str]) -> int:
    """Migrate one file with libcst; 1 if it was parsed and written, 0 if libcst rejected it."""
    src_root, out_root, rel = job
    data = Path(src_root, rel).read_bytes()
    try:
        module = cst.parse_module(data)
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        return 0
    result = module.visit(NpuRenamer())
    out = Path(out_root, rel)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(result.bytes)
    return 1


def run_libcst(src: Path, out: Path, rels: list[str], procs: int) -> int:
    jobs = [(str(src), str(out), r) for r in rels]
    if procs == 1:
        return sum(libcst_one(j) for j in jobs)
    with multiprocessing.get_context("fork").Pool(procs) as pool:
        return sum(pool.imap_unordered(libcst_one, jobs, chunksize=8))


def run_hipify(tree: Path) -> int:
    from torch.utils.hipify import hipify_python  # imported by main() before any timing

    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        results = hipify_python.hipify(
            project_directory=str(tree),
            output_directory=str(tree),
            extensions=(".py",),
            header_extensions=(),
            includes=["*"],
            is_pytorch_extension=True,
            show_detailed=False,
            show_progress=False,
        )
    return sum(1 for r in results.values() if "ignored" not in str(r.status))


def run_torchport(core: str, src: Path, out: Path, jobs: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(
        [core, "migrate", str(src), "-o", str(out), "--target", "npu", "-q", "--jobs", str(jobs)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if p.returncode not in (0, 1):
        raise SystemExit(f"torchport migrate exited {p.returncode}: {p.stderr.strip()[:500]}")
    return sum(1 for _ in out.rglob("*.py"))


def make_corpus(dest: Path, limit: int | None) -> tuple[list[str], int]:
    import torch

    root = Path(torch.__file__).parent
    rels = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if p.is_file())
    if limit is not None:
        rels = rels[:limit]
    size = 0
    for rel in rels:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, target)
        size += target.stat().st_size
    return rels, size


def timed(fn: Any) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = fn()
    return time.perf_counter() - t0, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="only the first N files (sorted by path)")
    ap.add_argument(
        "--core", help="the C++ torchport executable (default: $TORCHPORT_CORE or the installed one)"
    )
    ap.add_argument(
        "--tmp", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None, help="scratch dir"
    )
    ap.add_argument("--skip", action="append", default=[], help="skip a contender: libcst, libcst2, hipify")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every contender (median and range)")
    args = ap.parse_args()
    if "hipify" not in args.skip:
        from torch.utils.hipify import hipify_python  # noqa: F401 - imported here, outside the timed region
    core = args.core
    if core is None:
        from torchport._core import core_binary

        core = str(core_binary())
    work = Path(tempfile.mkdtemp(prefix="tp_mbench_", dir=args.tmp))
    try:
        src = work / "torch"
        rels, size = make_corpus(src, args.limit)
        mb = size / 1e6
        print(f"corpus: {len(rels)} .py files of the installed torch, {mb:.1f} MB; scratch {work}")
        print(f"core: {core}")
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; cpus {os.cpu_count()}")
        times: dict[str, list[float]] = {}
        files: dict[str, int] = {}

        def measure(name: str, fn: Any) -> None:
            secs, n = timed(fn)
            times.setdefault(name, []).append(secs)
            files[name] = n
            print(f"  {name}: {n} files in {secs:.2f} s", flush=True)

        for rnd in range(args.repeat):
            if args.repeat > 1:
                print(f"round {rnd + 1} of {args.repeat}", flush=True)
            for jobs in (1, 2):
                out = work / f"tp{jobs}"
                measure(
                    f"torchport migrate --jobs {jobs}",
                    lambda out=out, jobs=jobs: run_torchport(core, src, out, jobs),
                )
                shutil.rmtree(out, ignore_errors=True)
            if cst is None:
                if rnd == 0:
                    print("libcst is not installed: `pip install libcst` to time it; skipped")
            else:
                for procs in (1, 2):
                    key = "libcst" if procs == 1 else "libcst2"
                    if key in args.skip:
                        continue
                    out = work / f"cst{procs}"
                    label = "libcst transformer, 1 process" if procs == 1 else "libcst transformer, Pool(2)"
                    measure(label, lambda out=out, procs=procs: run_libcst(src, out, rels, procs))
                    shutil.rmtree(out, ignore_errors=True)
            if "hipify" not in args.skip:
                copy = work / "hip"
                shutil.copytree(src, copy)
                measure("torch.utils.hipify (in place)", lambda copy=copy: run_hipify(copy))
                shutil.rmtree(copy, ignore_errors=True)

        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        med = {name: statistics.median(ts) for name, ts in times.items()}
        tp1 = med["torchport migrate --jobs 1"]
        tp2 = med["torchport migrate --jobs 2"]
        head = f"{'contender':34} {'files':>6} {'MB':>6} {'median s':>9} {'range s':>13} {'files/s':>9}"
        head += f" {'MB/s':>8} {'tp-j1 x':>8} {'tp-j2 x':>8}"
        print()
        print(head)
        print("-" * len(head))
        for name, ts in times.items():
            secs = med[name]
            spread = f"{min(ts):.2f}-{max(ts):.2f}"
            print(
                f"{name:34} {files[name]:6d} {mb:6.1f} {secs:9.2f} {spread:>13} {len(rels) / secs:9.1f}"
                f" {mb / secs:8.2f} {secs / tp1:8.1f} {secs / tp2:8.1f}"
            )
        print("files = files the contender actually processed (written / hipified);")
        print("files/s and MB/s are over the whole corpus;")
        print("tp-jN x = contender median seconds / torchport --jobs N median seconds (torchport's speedup)")
        print("goals (issue 3): >= 50x over libcst and >= 10x over hipify on 2 cores")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
