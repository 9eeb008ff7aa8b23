"""Collectives: nccl becomes the target's backend (per-target data), a real gloo process group in-process, and
the unchanged 2-rank DDP script whose losses equal the hand-written gloo/CPU script's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from runtime_testlib import FIXTURES, child_env, enabled, free_port, sites
from torchport.runtime._dist import translate_backend
from torchport.targets import TARGETS


@pytest.mark.parametrize(
    ("target", "backend"),
    [("npu", "hccl"), ("mlu", "cncl"), ("musa", "mccl"), ("xpu", "xccl"), ("hpu", "hccl"), ("mps", "gloo"),
     ("cpu", "gloo")],
)  # fmt: skip
def test_nccl_maps_to_the_target_backend(target: str, backend: str) -> None:
    t = TARGETS[target]
    assert translate_backend("nccl", t) == backend
    assert translate_backend("NCCL", t) == backend
    assert translate_backend("gloo", t) == "gloo"
    assert translate_backend(None, t) is None


def test_per_device_backend_strings() -> None:
    assert translate_backend("cuda:nccl,cpu:gloo", TARGETS["npu"]) == "npu:hccl,cpu:gloo"
    # cuda:nccl becomes cpu:gloo, the same pair as the one already there: one pair remains
    assert translate_backend("cuda:nccl,cpu:gloo", TARGETS["cpu"]) == "cpu:gloo"
    assert translate_backend("cpu:gloo", TARGETS["xpu"]) == "cpu:gloo"


def test_real_process_group_world_size_one() -> None:
    with enabled("cpu") as s:
        assert dist.is_nccl_available() is True  # answers for gloo
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
        try:
            assert dist.get_backend() == "gloo"
            group = dist.new_group([0], backend="nccl")
            t = torch.ones(3, device="cuda")
            dist.all_reduce(t, group=group)
            assert t.tolist() == [1.0, 1.0, 1.0]
            model = torch.nn.Linear(2, 1).cuda()
            ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0], output_device=0)
            ddp(torch.ones(1, 2, device="cuda")).sum().backward()
            assert model.weight.grad is not None
            from torch.distributed.device_mesh import init_device_mesh

            mesh = init_device_mesh("cuda", (1,))
            assert mesh.device_type == "cpu"
        finally:
            dist.destroy_process_group()
        classes = {site.api: site.cls for site in sites(s)}
    assert classes["init_process_group"] == "match"
    assert classes["new_group"] == "match"
    assert classes["DistributedDataParallel"] == "modified"
    assert classes["is_nccl_available"] == "modified"


def _launch(script: Path, out: Path, redirected: bool) -> None:
    port = str(free_port())
    procs = []
    for rank in (0, 1):
        env = child_env(
            {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
             "MASTER_PORT": port}
        )  # fmt: skip
        cmd = (
            [sys.executable, "-m", "torchport", "run", "--target", "cpu", "--quiet"]
            if redirected
            else [sys.executable]
        )
        procs.append(
            subprocess.Popen([*cmd, str(script), str(out)], env=env, stderr=subprocess.PIPE, text=True)
        )
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err


def test_unchanged_ddp_script_on_two_gloo_ranks_matches_cpu(tmp_path: Path) -> None:
    _launch(FIXTURES / "train_ddp.py", tmp_path / "run.json", redirected=True)
    _launch(FIXTURES / "train_ddp_cpu.py", tmp_path / "cpu.json", redirected=False)
    got = json.loads((tmp_path / "run.json").read_text())
    want = json.loads((tmp_path / "cpu.json").read_text())
    assert got["backend"] == "gloo" and got["world"] == 2
    assert len(got["losses"]) == 6 and got["losses"] == want["losses"]
    assert got["losses"][-1] < got["losses"][0]


def test_fsdp_is_patched_when_imported_and_restored() -> None:
    with enabled("cpu"):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        wrapped = FSDP.__init__
        assert getattr(wrapped, "__wrapped__", None) is not None  # patched at its (first) import
    assert FSDP.__init__ is wrapped.__wrapped__  # the original is back


def test_nccl_options_high_priority_stream_are_passed_on_and_logged() -> None:
    # how large-model trainers (Megatron-LM's parallel_state, DeepSpeed) ask NCCL for high-priority streams
    before = getattr(dist, "ProcessGroupNCCL", None)
    with enabled("cpu") as s:
        opts = dist.ProcessGroupNCCL.Options()
        opts.is_high_priority_stream = True
        assert isinstance(opts, dist.ProcessGroupNCCL.Options)
        dist.init_process_group(
            "nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, pg_options=opts
        )
        try:
            group = dist.new_group([0], backend="nccl", pg_options=dist.ProcessGroupNCCL.Options(True))
            t = torch.full((2,), 3.0, device="cuda")
            dist.all_reduce(t, group=group)
            assert t.tolist() == [3.0, 3.0] and dist.get_backend() == "gloo"
        finally:
            dist.destroy_process_group()
        lines = [site for site in sites(s) if site.api == "pg_options"]
        made = [site for site in sites(s) if site.api == "ProcessGroupNCCL.Options"]
    assert len(lines) == 2  # init_process_group's line and new_group's line
    for line in lines:
        assert line.before == "pg_options=ProcessGroupNCCL.Options(is_high_priority_stream=True)"
        assert line.after == "pg_options=None"
        assert line.cls == "modified" and "not applied: is_high_priority_stream=True" in line.why
    assert made and made[0].cls == "modified"
    assert getattr(dist, "ProcessGroupNCCL", None) is before  # torch's own once disabled


def test_nccl_options_without_high_priority_pass_on_cleanly() -> None:
    with enabled("cpu") as s:
        opts = dist.ProcessGroupNCCL.Options()
        assert opts.is_high_priority_stream is False
        dist.init_process_group(
            "nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, pg_options=opts
        )
        dist.destroy_process_group()
        line = next(site for site in sites(s) if site.api == "pg_options")
    assert line.cls == "match" and line.after == "pg_options=None"
