"""Distributed rehearsal: the migrated DDP scripts run with 2 ranks on the vendor's collective backend name
(hccl / cncl / mccl, on gloo underneath) and give the losses of the --target cpu output."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rehearse_testlib import env, free_port, losses, rehearsal_built, rehearse  # noqa: F401
from torchrun_testlib import run_ranks

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "rehearse"
E2E = HERE.parent / "fixtures" / "e2e_scripts"
BACKEND = {"npu": "hccl", "mlu": "cncl", "musa": "mccl"}


def migrate(src: Path, out: Path, target: str) -> Path:
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "migrate", str(src), "-o", str(out), "--target", target, "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return out / f"{src.name}_{target}"


def torchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_ranks(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            f"--master_port={free_port()}",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=env(),
    )


@pytest.mark.parametrize(
    ("target", "devices"),
    # npu as the README writes it: the node's size comes from torchrun (LOCAL_WORLD_SIZE), no --devices
    [("npu", []), ("mlu", ["--devices", "2"])],
)
def test_torchrun_two_ranks_on_the_vendor_backend(
    target: str,
    devices: list[str],
    rehearsal_built: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    src = tmp_path / "proj"
    src.mkdir()
    shutil.copy(FIX / "ddp_torchrun.py", src / "train.py")
    cpu = migrate(src, tmp_path / "out", "cpu")
    dev = migrate(src, tmp_path / "out", target)
    assert f'init_process_group("{BACKEND[target]}")' in (dev / "train.py").read_text()
    ref = torchrun(str(cpu / "train.py"), cwd=cpu)
    assert ref.returncode == 0, ref.stderr
    p = torchrun("--no-python", "torchport", "rehearse", "--target", target, *devices, "train.py", cwd=dev)
    assert p.returncode == 0, p.stderr
    got = losses(p.stdout)
    assert len(got) == 3
    assert got == pytest.approx(losses(ref.stdout), rel=1e-6)
    # each rank printed its own summary; the collectives ran on the vendor-named backend
    assert f"[rank 0] torchport rehearse --target {target}:" in p.stderr
    assert f"[rank 1] torchport rehearse --target {target}:" in p.stderr


def test_ddp_train_spawns_two_ranks_under_rehearsal(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    """tests/fixtures/e2e_scripts/ddp_train.py starts its 2 ranks itself (torch.multiprocessing.spawn):
    the spawned interpreters get the rehearsal device too."""
    src = tmp_path / "proj"
    src.mkdir()
    shutil.copy(E2E / "ddp_train.py", src / "ddp_train.py")
    cpu = migrate(src, tmp_path / "out", "cpu")
    # plain torch's gloo ranks can abort in their teardown under load (torchrun_testlib.py)
    ref = run_ranks(
        [sys.executable, "ddp_train.py"],
        cwd=cpu,
        capture_output=True,
        text=True,
        check=False,
        env=env(),
        timeout=300,
    )
    assert ref.returncode == 0, ref.stderr
    for target in ("npu", "musa"):
        dev = migrate(src, tmp_path / "out", target)
        assert f'"{BACKEND[target]}"' in (dev / "ddp_train.py").read_text()
        p = rehearse("--target", target, "--devices", "2", "ddp_train.py", cwd=dev, timeout=300)
        assert p.returncode == 0, p.stderr
        assert losses(p.stdout) == pytest.approx(losses(ref.stdout), rel=1e-6)


MESH = """\
import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
mesh = init_device_mesh("npu", (2,), mesh_dim_names=("dp",))
group = mesh.get_group("dp")
t = torch.ones(2, device="npu") * (dist.get_rank() + 1)
dist.all_reduce(t, group=group)
dt = distribute_tensor(torch.arange(4.0, device="npu"), mesh, [Shard(0)])
row = ["rank", dist.get_rank(), group.group_name != "", t.cpu().tolist(), dt.to_local().cpu().tolist(),
       dt.full_tensor().cpu().tolist(), dt.device_mesh.device_type]
# one file per rank: two ranks printing to one pipe interleave their writes
with open(f"rank{dist.get_rank()}.txt", "w") as f:
    f.write(" ".join(map(str, row)))
dist.destroy_process_group()
"""


def test_a_device_mesh_and_dtensors_on_the_rehearsed_backend(rehearsal_built: None, tmp_path: Path) -> None:  # noqa: F811
    """init_device_mesh reads its process groups' names (torchtitan, FSDP2 and DTensor code starts there): the
    vendor-named group has one, and a DTensor sharded over the mesh gathers back on the rehearsal device."""
    (tmp_path / "mesh.py").write_text(MESH)
    p = torchrun(
        "--no-python", "torchport", "rehearse", "--target", "npu", "--devices", "2", "mesh.py", cwd=tmp_path
    )
    assert p.returncode == 0, p.stderr
    rows = [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)]
    assert rows == [
        "rank 0 True [3.0, 3.0] [0.0, 1.0] [0.0, 1.0, 2.0, 3.0] npu",
        "rank 1 True [3.0, 3.0] [2.0, 3.0] [0.0, 1.0, 2.0, 3.0] npu",
    ]


def test_the_default_device_count_is_the_nodes_under_torchrun() -> None:
    from torchport.rehearse.cli import default_devices

    assert default_devices({}) == 1
    assert default_devices({"LOCAL_WORLD_SIZE": "2"}) == 8
    assert default_devices({"LOCAL_WORLD_SIZE": "16"}) == 16
    assert default_devices({"LOCAL_WORLD_SIZE": "zero"}) == 1
