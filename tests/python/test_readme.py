"""The README is executed: every command of its `sh` blocks runs exactly as written (in a copy of the
examples), with the exit status the README states, so the README cannot drift from the code. The two
set-up commands (`bash tools/quickstart.sh`, `bash .ci/run`) install and test everything: CI runs them
itself, so they are left out here."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from torchrun_testlib import run_ranks

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    lines = [ln.strip() for block in blocks for ln in block.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#") and not ln.startswith("bash ")]


def expected_status(command: str) -> int:
    # The README states these: analyze gates CI with 1 on findings (the example has CUDA code), and
    # compare exits 1 when a row is flagged (bf16 drifts from fp32 in the example).
    if command.startswith("torchport analyze") or command.startswith("torchport compare"):
        return 1
    return 0


def test_the_readme_commands_run_as_written(tmp_path: Path) -> None:
    commands = readme_commands()
    assert any(c.startswith("torchport run ") for c in commands), "the run example is included"
    assert len(commands) >= 10
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command in commands:
        # run_ranks: a launcher command fails when a gloo rank aborts in torch's C++ teardown after its work
        # is done (pytorch/pytorch#38228, TEARDOWN_ABORT); such a run is run again, any other result is kept
        p = run_ranks(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert p.returncode == expected_status(command), f"{command}\n{p.stdout}\n{p.stderr}"
        assert "Traceback" not in p.stderr, f"{command}\n{p.stderr}"
    assert (tmp_path / "out" / "cuda_project_npu" / "torchport-report" / "report.json").is_file()
    assert (tmp_path / "examples" / "cuda_project" / "calls.log").is_file()
