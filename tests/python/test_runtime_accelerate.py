"""accelerate + transformers (real libraries that detect devices; both are in the [test] extra, so a missing
one is a failure, not a skip) run a tiny GPT-2 built from a config (no hub download) under `torchport run
--target cpu`, and choose their device and backend by themselves: no ACCELERATE_USE_CPU, no `accelerate
launch --cpu`.

- Default (torch.cuda.is_available() tells the truth): accelerate sees what it sees on any machine without an
  accelerator. One process: cpu, no distribution. Two torchrun-style ranks: its multi-process branch needs an
  accelerator (or --cpu), so it chooses no distributed backend and each rank trains alone on cpu
  (DistributedType.NO); it never tries nccl (it does start torch's default process group, backend=None).
- --cuda-available=target (what transfer_to_npu does): accelerate takes its CUDA path, MULTI_GPU with nccl
  (the accelerate#3020 situation); torchport redirects that path, so the process group really runs gloo on
  cpu, DDP averages the two ranks' gradients, and the losses equal the single-process ones.
These are the behaviours docs/runtime.md documents for the two modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import accelerate  # noqa: F401 - a test dependency: fail here when it is missing
import transformers  # noqa: F401

from runtime_testlib import FIXTURES, child_env, free_port

SCRIPT = str(FIXTURES / "hf_accelerate.py")


def _start(out: Path, *opts: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torchport", "run", "--target", "cpu", "--quiet", *opts, SCRIPT, str(out)]
    return subprocess.Popen(
        cmd, env=child_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        _, err = p.communicate(timeout=400)
        assert p.returncode == 0, err[-3000:]


def _two_ranks(out: Path, *opts: str) -> list[subprocess.Popen]:
    env = {
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    return [_start(out, *opts, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in (0, 1)]


def test_accelerate_and_transformers_choose_their_device_and_backend(tmp_path: Path) -> None:
    procs = [
        _start(tmp_path / "single.json"),
        *_two_ranks(tmp_path / "ranks"),  # each rank writes ranks (both are "main" without distribution)
        *_two_ranks(tmp_path / "target.json", "--cuda-available", "target"),
    ]
    _finish(procs)

    single = json.loads((tmp_path / "single.json").read_text())
    assert single["device"] == "cpu" and single["distributed_type"] == "DistributedType.NO"
    assert single["backend"] is None and single["pg_backend"] is None and single["pg_world"] == 0
    assert single["transformers_cuda"] is False and single["trainer_device"] == "cpu"
    assert single["param_device"] == "cpu" and single["x_device"] == "cpu"
    assert single["losses"][-1] < single["losses"][0]

    # two torchrun-style ranks, truthful default: accelerate's own detection finds no accelerator
    ranks = json.loads((tmp_path / "ranks").read_text())
    assert ranks["device"] == "cpu" and ranks["distributed_type"] == "DistributedType.NO"
    assert ranks["backend"] is None and ranks["num_processes"] == 1
    assert ranks["pg_world"] == 2 and ranks["pg_backend"] != "nccl"  # accelerate's init_process_group(None)
    assert ranks["losses"] == single["losses"]

    # the target mode: accelerate believes in CUDA, torchport makes its CUDA path run on cpu with gloo
    target = json.loads((tmp_path / "target.json").read_text())
    assert target["distributed_type"] == "DistributedType.MULTI_GPU" and target["num_processes"] == 2
    assert target["backend"] == "nccl" and target["pg_backend"] == "gloo" and target["pg_world"] == 2
    assert target["device"] == "cuda:0" and target["transformers_cuda"] is True
    assert target["param_device"] == "cpu" and target["x_device"] == "cpu"
    assert target["losses"] == single["losses"]  # same data on both ranks: DDP averages equal gradients
