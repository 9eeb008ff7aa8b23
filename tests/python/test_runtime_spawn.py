"""Children started with the multiprocessing `spawn` method are redirected like their parent in every install
mode (issue 11 §6): here the redirect is enabled from Python with no TORCHPORT_* variable and with the .pth
hook switched off (TORCHPORT_AUTOHOOK=0), as in an editable install or a source tree on PYTHONPATH."""

from __future__ import annotations

import re
from pathlib import Path

from runtime_testlib import NO_CUDA, run_python

SCRIPT = """
import sys
import torch
import torch.multiprocessing as mp
import torch.utils.data
import torchport.runtime as rt


def worker(rank, out):
    t = torch.zeros(2, device="cuda")
    with open(out, "w") as f:
        f.write(f"{t.device.type} {rt.is_enabled()}")


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.full((1,), float(i), device="cuda").cpu() + torch.ones(1, device="cuda:0")


if __name__ == "__main__":
    rt.enable("cpu")
    mp.spawn(worker, args=(sys.argv[1],), nprocs=1, join=True)
    loader = torch.utils.data.DataLoader(Data(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    print("batch", next(iter(loader)).flatten().tolist())
"""


def test_spawned_children_are_redirected_without_the_hook(tmp_path: Path) -> None:
    script = tmp_path / "spawner.py"
    script.write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / "child.txt"
    p = run_python([str(script), str(out)], {"TORCHPORT_AUTOHOOK": "0"}, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert out.read_text(encoding="utf-8") == "cpu True"
    assert "batch [1.0, 2.0]" in p.stdout


def test_spawned_children_not_redirected_after_disable(tmp_path: Path) -> None:
    script = tmp_path / "spawner.py"
    script.write_text(SCRIPT.replace('rt.enable("cpu")', 'rt.enable("cpu"); rt.disable()'), encoding="utf-8")
    out = tmp_path / "child.txt"
    p = run_python([str(script), str(out)], {"TORCHPORT_AUTOHOOK": "0"}, cwd=tmp_path)
    assert p.returncode != 0  # the child's torch.zeros(device="cuda") meets a torch without CUDA
    assert re.search(NO_CUDA, p.stderr), p.stderr[-2000:]
