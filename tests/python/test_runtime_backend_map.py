"""`torch.distributed.Backend.default_device_backend_map["cuda"]` under the redirect: the target's backend,
as "nccl" in a backend string is. torchtitan picks its backend from it (`map.get(device_type)`,
torchtitan/distributed/utils.py:508); the entry used to be removed, and torch's `fake` backend, registered
when torch.distributed.fsdp._flat_param imports torch.testing._internal.distributed.fake_pg, then claimed it:
every rank got a fake process group ("Cannot init process group where rank (-1) >= world_size (-1)")."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist

from runtime_testlib import enabled, free_port, run_torchport, sites

SCRIPT = """
import os, sys
import torch
import torch.distributed as dist
import torch.distributed.fsdp._flat_param  # registers torch's `fake` backend for cpu, cuda, hpu, xpu
backend = dist.Backend.default_device_backend_map.get("cuda")  # what torchtitan asks for its CUDA device
dist.init_process_group(backend=backend)
t = torch.arange(4.0, device="cuda") * (dist.get_rank() + 1)
dist.all_reduce(t)
print("BACKEND", backend, dist.get_backend(), dist.get_world_size(), t.tolist())
dist.destroy_process_group()
"""


def test_the_cuda_entry_is_the_target_backend_logged_per_read_and_put_back() -> None:
    before = dist.Backend.default_device_backend_map
    with enabled("cpu") as s:
        assert not [x for x in sites(s) if x.api == "Backend.default_device_backend_map"]  # nothing read yet
        dmap = dist.Backend.default_device_backend_map
        assert dmap["cuda"] == "gloo" and dmap.get("cuda") == "gloo"
        assert dmap["cpu"] == "gloo" and dmap.get("cpu") == "gloo"  # other entries: torch's, not logged
        dist.Backend.register_backend("tp_test_backend", lambda *a: None, devices=["tp_test_device"])
    after = dist.Backend.default_device_backend_map
    assert after is before and after.get("cuda") == "nccl"
    assert after.pop("tp_test_device") == "tp_test_backend"  # registered while enabled: kept
    lines = [x for x in sites(s) if x.api == "Backend.default_device_backend_map"]
    assert len(lines) == 1 and lines[0].count == 2  # one call site (the line above), two reads
    line = lines[0]
    assert (line.before, line.after, line.cls) == (
        "Backend.default_device_backend_map['cuda'] ('nccl')",
        "'gloo'",
        "match",
    )
    assert line.filename == __file__


@pytest.mark.parametrize("target", ["xpu", "mps"])
def test_other_targets(target: str) -> None:
    with enabled(target, check=False):
        assert dist.Backend.default_device_backend_map["cuda"] == {"xpu": "xccl", "mps": "gloo"}[target]


def test_a_script_that_asks_the_map_gets_a_real_process_group(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text(SCRIPT)
    env = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    log = tmp_path / "run.log"
    done = run_torchport(
        ["run", "--target", "cpu", "--quiet", "--log", str(log), str(tmp_path / "s.py")], env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "BACKEND gloo gloo 1 [0.0, 1.0, 2.0, 3.0]" in done.stdout, done.stdout
    # the line that asks the map is logged, with its source line
    want = f"{tmp_path / 's.py'}:6: [match] Backend.default_device_backend_map['cuda'] ('nccl') -> 'gloo'"
    line = next((ln for ln in log.read_text().splitlines() if ln.startswith(want)), None)
    assert line is not None, log.read_text()
    source = SCRIPT.splitlines()[5].strip()  # line 6 of the script
    assert source.startswith("backend = dist.Backend") and line.endswith(f"| {source}")
