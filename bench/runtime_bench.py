"""Overhead of `torchport run` / `import torchport.auto`, in one run:

1. the cost added per redirected call: `torch.zeros(16, device="cuda")` under the redirect against
   `torch.zeros(16, device="cpu")` with nothing patched (goal: <= 200 ns, torchada's claim); the same for
   `Tensor.to("cuda")` and for a patched call that needs no redirect (`device="cpu"`);
2. the import time of `torchport.auto` once torch is imported (goal: <= 30 ms), in fresh interpreters with
   bytecode caches warm (a pip-installed package has them);
3. a small training step (MLP, SGD, batch moved with .cuda()/.to("cpu")) with and without the shim
   (goal: < 1% difference).

usage: python bench/runtime_bench.py [--quick]
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

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

import torchport.runtime as rt  # noqa: E402

QUICK = "--quick" in sys.argv


def per_call_ns(stmt: str, setup: str = "", number: int = 20000, repeat: int = 15) -> float:
    glb = {"torch": torch, "x": torch.ones(16)}
    t = timeit.Timer(stmt, setup=setup, globals=glb, timer=time.process_time)  # CPU time: robust to load
    return min(t.repeat(repeat=repeat, number=number)) / number * 1e9


def calls() -> list[tuple[str, float, float, float]]:
    """(label, unpatched ns, redirected ns, redirected with the per-call log ns), best of alternating runs."""
    n = 5000 if QUICK else 20000
    rows = []
    for label, plain_stmt, cuda_stmt in (
        ("torch.zeros(16, device=...)", 'torch.zeros(16, device="cpu")', 'torch.zeros(16, device="cuda")'),
        ("x.to(...)", 'x.to("cpu")', 'x.to("cuda")'),
        ("torch.zeros(16, device='cpu') (patched, no redirect)", 'torch.zeros(16, device="cpu")', None),
    ):
        base, shim, logged = [], [], []
        for _ in range(3 if QUICK else 7):  # alternate so machine load hits all alike
            base.append(per_call_ns(plain_stmt, number=n))
            for track, out in ((False, shim), (True, logged)):
                rt.enable("cpu", track_sites=track)
                try:
                    out.append(per_call_ns(cuda_stmt or plain_stmt, number=n))
                finally:
                    rt.disable()
        rows.append((label, min(base), min(shim), min(logged)))
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
    print(f"\n{'per call, CPU ns (best of runs)':<54} unpatched  redirected  added   with log  added")
    for label, base, shim, logged in calls():
        print(
            f"  {label:<52} {base:8.0f} {shim:10.0f} {shim - base:6.0f} {logged:10.0f} {logged - base:6.0f}"
        )
    print("  goal: <= 200 ns added per call (torchada's claim)")
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
