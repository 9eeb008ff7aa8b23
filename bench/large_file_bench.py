"""Cost of one large file (issue 21 §5): time and peak memory of `torchport migrate --jobs 1` on a single
generated file of 1, 10 and 50 MB, against the per-MB rate on the installed torch tree, in one run.

Two kinds of generated file:
- `torch`: the installed torch's own .py files concatenated (their `from __future__` lines dropped, so that
  the whole stays one valid module), so the density of names, calls and CUDA APIs is the torch tree's;
- `dense`: one `.cuda()` call and one `device="cuda"` keyword per line, the worst case (every line is a
  finding and a rewrite).

Goal: time and peak memory per MB of one file stay within 1.5x of the torch tree's per-MB rate, at every
size (linear cost). Median and spread of --repeat runs (default 5); the load average is printed.

Two baselines: the installed tree as it is (its 46 MB of .py come with ~650 MB of shared libraries and
data that migrate copies, which is part of its wall time and of its spread), and a copy of the tree with
its .py files only (the per-MB rate of the Python alone). Each file's time is given against both. Peak
memory is also given net of the process's own (a run on a one-line file): "net MB per MB".

    python bench/large_file_bench.py [--repeat 5] [--sizes 1 10 50] [--kinds torch dense]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from torchport._core import core_binary  # noqa: E402


def torch_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec and spec.origin
    return Path(spec.origin).parent


def torch_sources() -> list[str]:
    out = []
    for p in sorted(torch_dir().rglob("*.py")):
        try:
            text = p.read_text(encoding="utf-8")
            compile(text, str(p), "exec")
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        out.append(text)
    return out


def generate(kind: str, mb: float, path: Path, sources: list[str]) -> None:
    target = int(mb * 1_000_000)
    with path.open("w", encoding="utf-8") as f:
        size = 0
        if kind == "dense":
            f.write("import torch\n\n\ndef f(x):\n")
            line = "    x = x.cuda()\n    y = torch.zeros(3, device='cuda')\n"
            while size < target:
                f.write(line * 1000)
                size += len(line) * 1000
            f.write("    return x\n")
            return
        i = 0
        while size < target:
            # modules one after the other: valid Python once `from __future__` lines (top only) are dropped
            text = sources[i % len(sources)]
            body = "".join(ln for ln in text.splitlines(True) if not ln.startswith("from __future__")) + "\n"
            f.write(body)
            size += len(body.encode())
            i += 1


def measure(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run of the core, from GNU time (the child's own, not the forked
    Python's)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%e %M", "-o", t.name, *args], capture_output=True, text=True
        )
        if p.returncode != 0:  # the generated files must migrate completely
            raise SystemExit(f"{' '.join(args)}: exit status {p.returncode}\n{p.stderr[-2000:]}")
        wall, kb = t.read().split()[-2:]
    return float(wall), int(kb) / 1024


def runs(args: list[str], repeat: int) -> tuple[list[float], list[float]]:
    times, mems = [], []
    for _ in range(repeat):
        t, m = measure(args)
        times.append(t)
        mems.append(m)
    return times, mems


def tree_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*.py")) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 50])
    ap.add_argument("--kinds", nargs="+", default=["torch", "dense"], choices=["torch", "dense"])
    a = ap.parse_args()
    core = core_binary()
    print(f"load average before: {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="tp_large_"))
    try:
        tree = torch_dir()
        mb = tree_mb(tree)
        out = work / "out"

        def migrate(src: Path) -> list[str]:
            return [core, "migrate", str(src), "-o", str(out), "-t", "npu", "--jobs", "1", "-f", "-q"]

        one = work / "one"
        one.mkdir()
        (one / "a.py").write_text("x = 1\n")
        _, base_mems = runs(migrate(one), a.repeat)
        base = statistics.median(base_mems)
        print(f"the process on a one-line file: peak {base:.1f} MB")
        py_only = work / "torch"
        for p in tree.rglob("*.py"):
            dest = py_only / p.relative_to(tree)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
        rates = {}
        for name, src in (("installed", tree), (".py only", py_only)):
            times, mems = runs(migrate(src), a.repeat)
            rates[name] = statistics.median(times) / mb
            print(f"torch tree ({name}) {src}: {mb:.1f} MB of .py, --jobs 1: "
                  f"median {statistics.median(times):.2f} s "
                  f"(min {min(times):.2f}, max {max(times):.2f}) = {rates[name] * 1000:.1f} ms/MB; "
                  f"peak {statistics.median(mems):.0f} MB = {statistics.median(mems) / mb:.1f} MB per MB, "
                  f"net {(statistics.median(mems) - base) / mb:.1f}")  # fmt: skip
        shutil.rmtree(py_only)
        sources = torch_sources() if "torch" in a.kinds else []
        print(
            "\n| file | size MB | median s (min-max) | ms/MB | x tree rate (installed) "
            "| x tree rate (.py only) | peak MB | MB per MB | net MB per MB |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for kind in a.kinds:
            for size in a.sizes:
                d = work / f"{kind}{size:g}"
                d.mkdir()
                f = d / "big.py"
                generate(kind, size, f, sources)
                real = f.stat().st_size / 1e6
                times, mems = runs(migrate(d), a.repeat)
                med = statistics.median(times)
                peak = statistics.median(mems)
                spread = f"{min(times):.2f}-{max(times):.2f}"
                print(f"| {kind} | {real:.1f} | {med:.2f} ({spread}) | "
                      f"{med / real * 1000:.1f} | {med / real / rates['installed']:.2f} | "
                      f"{med / real / rates['.py only']:.2f} | {peak:.0f} | "
                      f"{peak / real:.1f} | {(peak - base) / real:.1f} |",
                      flush=True)  # fmt: skip
                shutil.rmtree(d)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
