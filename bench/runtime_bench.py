"""Overhead of `torchport run` / `import torchport.auto`, in one run:

1. the cost added per redirected call: `torch.zeros(16, device="cuda")` under the redirect against
   `torch.zeros(16, device="cpu")` with nothing patched (goal: <= 200 ns, torchada's claim); the same for
   `Tensor.to("cuda")`, `x.cuda()`, `x.cuda(non_blocking=True)`, `x.to(torch.device("cuda", 0))`,
   `model.cuda()` of a 10-layer MLP (per parameter), `torch.cuda.current_stream()` (issue 33 §4) and a
   patched call that needs no redirect (`device="cpu"`);
2. the import time of `torchport.auto` once torch is imported (goal: <= 30 ms), in fresh interpreters with
   bytecode caches warm (a pip-installed package has them);
3. a small training step (MLP, SGD, batch moved with .cuda()/.to("cpu")) with and without the shim
   (goal: < 1% difference).

usage: python bench/runtime_bench.py [--quick] [--calls-only] [--python-only]

The C extension torchport.runtime._speedups is used (an installed torchport has it; a source checkout's is
built from src/speedups/_speedups.c by tools/speedups.py, in a temporary directory); --python-only measures
the pure-Python fallback instead.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Optional

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

import torchport.runtime as rt  # noqa: E402
import torchport.runtime._args as rt_args  # noqa: E402

QUICK = "--quick" in sys.argv
CALLS_ONLY = "--calls-only" in sys.argv  # only the per-call figures (issue 33's)
# The C extension torchport.runtime._speedups is what an installed torchport runs; a source checkout has none,
# so it is built here from this tree's source (tools/speedups.py) unless --python-only asks for the
# pure-Python fallback.
PYTHON_ONLY = "--python-only" in sys.argv


def speedups_in_use() -> str:
    """Puts the C extension in place (built from this tree when the checkout has none); says which path
    runs."""
    if PYTHON_ONLY:
        rt_args.SPEEDUPS = None
        return "pure Python (--python-only)"
    if rt_args.SPEEDUPS is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("tools_speedups", HERE.parent / "tools" / "speedups.py")
        assert spec is not None and spec.loader is not None
        tool = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tool)
        out = Path(tempfile.mkdtemp(prefix="torchport-speedups-"))
        rt_args.SPEEDUPS = tool.load(tool.build(out))
    return f"C ({rt_args.SPEEDUPS.__file__})"


MLP_LAYERS = 10


def mlp() -> torch.nn.Module:
    """The 10-layer MLP of issue 33 §4 (20 parameters): model.cuda() is reported per parameter."""
    layers: list[torch.nn.Module] = []
    for _ in range(MLP_LAYERS):
        layers += [torch.nn.Linear(16, 16), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


MODEL = mlp()
N_PARAMS = len(list(MODEL.parameters()))


def per_call_ns(stmt: str, setup: str = "", number: int = 20000, repeat: int = 15) -> float:
    glb = {
        "torch": torch,
        "x": torch.ones(16),
        "model": MODEL,
        "dcuda": torch.device("cuda", 0),
        "dcpu": torch.device("cpu"),
    }
    t = timeit.Timer(stmt, setup=setup, globals=glb, timer=time.process_time)  # CPU time: robust to load
    return min(t.repeat(repeat=repeat, number=number)) / number * 1e9


# (label, the plain CPU torch statement, the CUDA statement under the redirect; None: the plain one, patched)
CALLS: tuple[tuple[str, str, Optional[str]], ...] = (
    ("torch.zeros(16, device=...)", 'torch.zeros(16, device="cpu")', 'torch.zeros(16, device="cuda")'),
    ("x.to(...)", 'x.to("cpu")', 'x.to("cuda")'),
    ("x.cuda() / x.to('cpu')", 'x.to("cpu")', "x.cuda()"),
    ("x.cuda(non_blocking=True)", 'x.to("cpu", non_blocking=True)', "x.cuda(non_blocking=True)"),
    ("x.to(torch.device('cuda', 0)) / x.to(torch.device('cpu'))", 'x.to(torch.device("cpu"))',
     'x.to(torch.device("cuda", 0))'),
    ("x.to(d), d = torch.device('cuda', 0) built once / the cpu device", "x.to(dcpu)", "x.to(dcuda)"),
    (f"model.cuda() / model.to('cpu'), per parameter ({N_PARAMS})", 'model.to("cpu")', "model.cuda()"),
    ("torch.cuda.current_stream() / torch.cpu.current_stream()", "torch.cpu.current_stream()",
     "torch.cuda.current_stream()"),
    ("torch.zeros(16, device='cpu') (patched, no redirect)", 'torch.zeros(16, device="cpu")', None),
)  # fmt: skip


def calls() -> list[tuple[str, float, float, float, list[float]]]:
    """(label, unpatched ns, redirected ns, redirected with the per-call log ns, the added ns of each run):
    best of alternating runs; each run is the best of `repeat` timings, unpatched and redirected back to back
    (so machine load hits both alike), and its added cost is their difference."""
    n = 5000 if QUICK else 20000
    rows = []
    for label, plain_stmt, cuda_stmt in CALLS:
        base, shim, logged = [], [], []
        number = max(n // 200, 20) if label.startswith("model.") else n  # model.cuda() costs ~150 us
        for _ in range(5 if QUICK else 7):  # alternate so machine load hits all alike
            base.append(per_call_ns(plain_stmt, number=number))
            for track, out in ((False, shim), (True, logged)):
                rt.enable("cpu", track_sites=track)
                try:
                    out.append(per_call_ns(cuda_stmt or plain_stmt, number=number))
                finally:
                    rt.disable()
        per = N_PARAMS if label.startswith("model.cuda()") else 1
        added = [(b2 - b1) / per for b1, b2 in zip(base, shim)]
        rows.append((label, min(base) / per, min(shim) / per, min(logged) / per, added))
    return rows


def import_ms() -> list[tuple[float, float]]:
    """(wall ms, CPU ms) of `import torchport.auto` per fresh interpreter."""
    code = (
        "import time, torch\nt, c = time.perf_counter(), time.process_time()\nimport torchport.auto\n"
        "print((time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHPORT_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["TORCHPORT_TARGET"] = "cpu"
    # The installed start-up hook (.pth) would import torchport.auto before the timed import.
    env["TORCHPORT_AUTOHOOK"] = "0"
    env["PYTHONPATH"] = str(HERE.parent / "python")
    with tempfile.TemporaryDirectory() as cache:
        env["PYTHONPYCACHEPREFIX"] = cache
        out = []
        for i in range(4 if QUICK else 8):
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            if i > 0:  # the first run writes the bytecode cache
                wall, cpu = done.stdout.strip().splitlines()[-1].split()
                out.append((float(wall), float(cpu)))
    return out


def train_step_ms() -> tuple[float, float, float]:
    """(plain ms, shim ms, median of the paired shim/plain ratios) of one training step, CPU time."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = torch.randn(64, 256)
    target = torch.randn(64, 32)

    def run(device: str, steps: int) -> float:
        import time

        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 32)).to(
            device
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        t = time.process_time()
        for _ in range(steps):
            xb, yb = data.to(device), target.to(device)
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return (time.process_time() - t) / steps * 1e3

    steps = 30 if QUICK else 100
    base, shim, ratios = [], [], []
    for i in range(5 if QUICK else 21):
        order = ("cpu", "cuda") if i % 2 == 0 else ("cuda", "cpu")  # alternate which goes first
        got = {}
        for dev in order:
            if dev == "cuda":
                rt.enable("cpu")
            try:
                got[dev] = run(dev, steps)
            finally:
                rt.disable()
        base.append(got["cpu"])
        shim.append(got["cuda"])
        ratios.append(got["cuda"] / got["cpu"])
    return min(base), min(shim), statistics.median(ratios)


def main() -> int:
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"torchport.runtime._speedups: {speedups_in_use()}")
    print(
        f"\n{'per call, CPU ns (best of runs)':<62} unpatched  redirected  added   with log  added"
        "   added per run: median [min, max]"
    )
    for label, base, shim, logged, added in calls():
        print(
            f"  {label:<60} {base:8.0f} {shim:10.0f} {shim - base:6.0f} {logged:10.0f} {logged - base:6.0f}"
            f"   {statistics.median(added):6.0f} [{min(added):.0f}, {max(added):.0f}] over {len(added)} runs"
        )
    print("  goal: <= 200 ns added per call (torchada's claim; issue 33 §4: every call above)")
    if CALLS_ONLY:
        load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        return 0
    runs = import_ms()
    wall = [w for w, _ in runs]
    cpu = [c for _, c in runs]
    print(
        "\nimport torchport.auto (torch already imported, warm bytecode), over "
        f"{len(runs)} runs: CPU median {statistics.median(cpu):.1f} ms (min {min(cpu):.1f}), "
        f"wall median {statistics.median(wall):.1f} ms (min {min(wall):.1f}); goal <= 30 ms"
    )
    base, shim, ratio = train_step_ms()
    print(
        f"\ntraining step, CPU ms, best of runs (MLP 256-512-32, batch 64, 1 thread): plain {base:.3f}, "
        f"shim {shim:.3f}, "
        f"difference of the best runs {100 * (shim - base) / base:+.2f}%, median paired difference "
        f"{100 * (ratio - 1):+.2f}% (goal < 1%)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
