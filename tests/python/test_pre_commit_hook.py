"""`.pre-commit-hooks.yaml`: the hook's command, run as pre-commit runs it (entry + args, no file
names, from the project root), stops a commit with CUDA-specific code and lets a clean one pass."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def hook() -> dict:
    (only,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return only


def run_hook(project: Path) -> subprocess.CompletedProcess[str]:
    h = hook()
    argv = shlex.split(h["entry"]) + list(h.get("args", []))
    assert argv[0] == "torchport"
    # the console script of the installed package, as pre-commit's environment has it
    return subprocess.run(
        [sys.executable, "-m", "torchport", *argv[1:]],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )


def test_hook_manifest_is_what_pre_commit_needs():
    h = hook()
    assert {"id", "name", "entry", "language"} <= h.keys()
    assert h["id"] == "torchport-analyze" and h["language"] == "python"
    assert h["pass_filenames"] is False  # analyze takes one tree, not a list of files


def test_hook_stops_cuda_code_and_passes_clean_code(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    proc = run_hook(tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "train.py:2:" in proc.stdout and "TP301" in proc.stdout
    (tmp_path / "train.py").write_text(
        "import torch\ndevice = torch.accelerator.current_accelerator() or 'cpu'\n"
        "model = torch.nn.Linear(2, 2).to(device)\n"
    )
    proc = run_hook(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hook_follows_the_project_configuration(tmp_path):
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["legacy"]\n')
    proc = run_hook(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
