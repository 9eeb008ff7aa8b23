"""Progress: `compare` draws a tqdm bar, migrate/analyze a `\\r` line; on a terminal only, -q: off."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from probe_testlib import mlp, train
from torchport.probe.compare import compare_dumps


def test_compare_progress_bar_only_when_asked(tmp_path, capsys):
    a = train(tmp_path / "a", mlp(), steps=1, full_tensors=True)
    bad = mlp()
    bad[0].bias.data += 0.1
    b = train(tmp_path / "b", bad, steps=1, full_tensors=True)
    capsys.readouterr()
    compare_dumps(b, a, progress=True, workers=1)
    err = capsys.readouterr().err
    assert "torchport compare:" in err and "B/s" in err  # bytes of tensors compared
    compare_dumps(b, a, progress=False, workers=1)
    assert capsys.readouterr().err == ""


def _run_on_pty(args: list[str], cwd: Path) -> str:
    """Runs with stderr on a terminal (80 columns), stdout to a pipe; returns what the terminal got."""
    master, slave = pty.openpty()
    os.system(f"stty cols 80 rows 24 < {os.ttyname(slave)}")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(master)
    return out.decode(errors="replace")


def test_compare_cli_progress_on_a_terminal_and_quiet_with_q(tmp_path):
    a = train(tmp_path / "a", mlp(), steps=2, full_tensors=True)
    bad = mlp()
    bad[0].bias.data += 0.1
    b = train(tmp_path / "b", bad, steps=2, full_tensors=True)
    cmd = [sys.executable, "-m", "torchport", "compare", str(b), str(a), "-o", str(tmp_path / "r.txt")]
    assert "torchport compare:" in _run_on_pty(cmd, tmp_path)
    assert _run_on_pty([*cmd, "-q"], tmp_path) == ""
    # not a terminal: nothing on stderr
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stderr == ""


def test_migrate_progress_line_on_a_terminal_only(tmp_path):
    """The C++ core rewrites one `\\r` line on a terminal (the first file at once, then at most ten
    updates a second) and clears it at the end; nothing off a terminal or with -q."""
    example = str(Path(__file__).resolve().parents[2] / "examples" / "cuda_project")
    cmd = [
        sys.executable,
        "-m",
        "torchport",
        "migrate",
        example,
        "-t",
        "npu",
        "-o",
        str(tmp_path),
        "--no-config",
    ]
    shown = _run_on_pty([*cmd, "--force"], tmp_path)
    assert re.search(r"\rtorchport migrate: [1-4]/4 files", shown), shown
    assert shown.endswith("\r\x1b[K")  # the line is cleared at the end
    assert _run_on_pty([*cmd, "--force", "-q"], tmp_path) == ""
    proc = subprocess.run([*cmd, "--force"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stderr == ""
