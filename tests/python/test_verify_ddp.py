"""`torchport verify` on a torchrun-style DDP script: both sides run under torchrun with 2 CPU ranks,
rank 0 is compared, and every rank's parameters must equal rank 0's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "verify"


def test_a_torchrun_ddp_script_verifies_on_two_cpu_ranks(tmp_path: Path) -> None:
    script = tmp_path / "ddp_torchrun.py"
    shutil.copy(FIXTURES / script.name, script)
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "verify", str(script), "--target", "cpu", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
        timeout=600,
    )
    rep = json.loads(p.stdout)
    assert (p.returncode, rep["verdict"]) == (0, "identical"), (rep["reason"], rep.get("traceback"))
    assert rep["ranks_launched"] == 2
    assert "torch.distributed.run" in rep["original"]["command"]
    for side in ("original", "migrated"):
        assert rep["cross_rank"][side] == {
            "ranks": 2,
            "equal": True,
            "detail": "2 ranks hold equal parameters",
        }
        # torchrun's agent, and the two workers: rank 0 is the one compared
        assert rep[side]["processes"] == 2
    assert len(rep["steps"]) == 3


def test_ranks_that_stop_agreeing_are_caught(tmp_path: Path) -> None:
    # A wrong migration that drops the DDP wrapper (`DDP(model)` becomes `model`): each rank trains
    # on its own data, gradients are no longer averaged, and the ranks' parameters drift apart.
    orig = tmp_path / "orig"
    orig.mkdir()
    shutil.copy(FIXTURES / "ddp_torchrun.py", orig / "ddp_torchrun.py")
    m = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "migrate",
            str(orig),
            "-o",
            str(tmp_path / "out"),
            "-t",
            "cpu",
            "-q",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert m.returncode == 0, m.stderr
    migrated = tmp_path / "out" / "orig_cpu" / "ddp_torchrun.py"
    text = migrated.read_text()
    assert text.count("ddp = DDP(model)") == 1
    migrated.write_text(text.replace("ddp = DDP(model)", "ddp = model"))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchport",
            "verify",
            str(orig),
            str(migrated.parent),
            "--target",
            "cpu",
            "--entry",
            "ddp_torchrun.py",
            "--steps",
            "2",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
        timeout=600,
    )
    rep = json.loads(p.stdout)
    assert (p.returncode, rep["verdict"]) == (1, "diverged"), (rep["reason"], rep.get("traceback"))
    assert rep["first_divergence"]["step"] == 0
    assert rep["first_divergence"]["why"].startswith("gradient norm")  # no longer averaged over ranks
    assert rep["cross_rank"]["original"]["equal"] is True
    assert rep["cross_rank"]["migrated"]["equal"] is False
    assert rep["cross_rank"]["migrated"]["detail"].startswith("rank 1 differs from rank 0 after step 0")
