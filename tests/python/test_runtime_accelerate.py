"""accelerate + transformers (real libraries that detect devices) under `torchport run --target cpu`: with the
default truthful torch.cuda.is_available() they choose the CPU and gloo, as on a plain CPU machine. With
--cuda-available=target (what transfer_to_npu does) accelerate takes its CUDA path: the accelerate#3020
failure mode, shown here so that the default stays justified. A tiny GPT-2 from a config, no hub download."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_testlib import FIXTURES, child_env, free_port

pytest.importorskip("accelerate")
pytest.importorskip("transformers")

SCRIPT = str(FIXTURES / "hf_accelerate.py")


def _start(out: Path, *opts: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torchport", "run", "--target", "cpu", "--quiet", *opts, SCRIPT, str(out)]
    return subprocess.Popen(
        cmd, env=child_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]


def test_accelerate_and_transformers_choose_cpu_and_gloo(tmp_path: Path) -> None:
    port = str(free_port())
    dist_env = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    dist_env["ACCELERATE_USE_CPU"] = "true"  # what `accelerate launch --cpu` sets on a CPU machine
    procs = [
        _start(tmp_path / "single.json"),
        _start(tmp_path / "target.json", "--cuda-available", "target"),
        *[
            _start(tmp_path / "ranks.json", env={**dist_env, "RANK": str(r), "LOCAL_RANK": str(r)})
            for r in (0, 1)
        ],
    ]
    _finish(procs)

    single = json.loads((tmp_path / "single.json").read_text())
    assert single["device"] == "cpu" and single["distributed_type"] == "DistributedType.NO"
    assert single["transformers_cuda"] is False and single["trainer_device"] == "cpu"
    assert single["param_device"] == "cpu" and single["x_device"] == "cpu"
    assert single["losses"][-1] < single["losses"][0]

    ranks = json.loads((tmp_path / "ranks.json").read_text())
    assert ranks["distributed_type"] == "DistributedType.MULTI_CPU"
    assert ranks["backend"] == "gloo" and ranks["num_processes"] == 2
    assert ranks["device"].startswith("cpu") and ranks["param_device"] == "cpu"
    assert ranks["losses"] == single["losses"]  # same data on both ranks: DDP averages equal gradients

    # the alternative: torch.cuda.is_available() answers True and accelerate picks CUDA (accelerate#3020)
    target = json.loads((tmp_path / "target.json").read_text())
    assert target["device"].startswith("cuda") and target["transformers_cuda"] is True
    assert target["param_device"] == "cpu"  # it still runs, because every CUDA call is redirected
