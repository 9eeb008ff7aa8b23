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
