"""CUDA environment variables: mapped to the target's before its package starts, a warning (and a log line)
for those set without an equivalent, and restored by disable()."""

from __future__ import annotations

import os

import pytest

from runtime_testlib import enabled, run_torchport


def test_unmapped_cuda_variables_warn_and_are_logged(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    with enabled("cpu") as s:
        events = {x.api: x for x in s.log.sites.values() if x.filename == "<environment>"}
    err = capsys.readouterr().err
    assert "CUDA_VISIBLE_DEVICES=1 is set but cpu has no equivalent variable" in err
    assert events["CUDA_VISIBLE_DEVICES"].cls == "mismatch"
    assert events["PYTORCH_CUDA_ALLOC_CONF"].after == "ignored"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"  # left as the user set it


def test_environment_line_in_log(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('ok')\n")
    log = tmp_path / "e.log"
    done = run_torchport(
        ["run", "--target", "cpu", "--quiet", "--log", str(log), str(script)], {"NCCL_DEBUG": "INFO"}
    )
    assert done.returncode == 0
    assert "<environment>: [mismatch] NCCL_DEBUG=INFO -> ignored (cpu has no equivalent)" in log.read_text()
