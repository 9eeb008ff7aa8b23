"""`torchport run` and the per-call log: the script runs as under python (argv, exit codes, tracebacks),
each distinct call site gets one line with file:line, the source line, original -> replacement and a class,
only rank 0 writes under torchrun, and a summary comes at exit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import torchport.runtime as rt
from runtime_testlib import run_torchport

SCRIPT = """\
import sys
import torch
for i in range(3):
    x = torch.zeros(2, device="cuda")  # three calls, one site
y = torch.ones(1).cuda()
m = torch.cuda.memory_allocated()
print("argv", sys.argv[1:], x.device, y.device, m)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

LINE = re.compile(
    r"^(?P<file>.+):(?P<line>\d+): \[(?P<cls>match|modified|mismatch)\] (?P<what>.+?) \| (?P<src>.+)$"
)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    return p


def test_log_lines_and_summary(script: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    done = run_torchport(["run", "--target", "cpu", "--log", str(log), str(script), "0", "--lr", "3"])
    assert done.returncode == 0, done.stderr
    assert "argv ['0', '--lr', '3'] cpu cpu 0" in done.stdout  # the script's own options reach it untouched
    lines = [ln for ln in log.read_text().splitlines() if not ln.startswith("#")]
    parsed = [LINE.match(ln) for ln in lines]
    assert all(parsed), lines
    by_line = {int(m["line"]): m for m in parsed}
    assert set(by_line) == {4, 5, 6}  # one line per distinct site: the loop's three calls share line 4
    assert by_line[4]["file"] == str(script)
    assert by_line[4]["what"] == "torch.zeros(device='cuda') -> torch.zeros(device='cpu')"
    assert by_line[4]["src"] == 'x = torch.zeros(2, device="cuda")  # three calls, one site'
    assert by_line[4]["cls"] == "match"
    assert by_line[6]["cls"] == "mismatch" and "(cpu has no device caching allocator" in by_line[6]["what"]
    summary = log.read_text().split("# summary\n")[1]
    assert "3 redirected call site(s): 2 match, 0 modified, 1 mismatch" in summary
    assert re.search(r"3x .*train\.py:4 torch\.zeros \[match\]", summary)  # top call site first
    assert "redirected call site(s)" in done.stderr  # and on stderr at exit


def test_exit_code_and_quiet(script: Path) -> None:
    done = run_torchport(["run", "--target", "cpu", "--quiet", str(script), "3"])
    assert done.returncode == 3 and "redirected" not in done.stderr


def test_exception_printed_like_python(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    done = run_torchport(["run", "--target", "cpu", str(bad)])
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "ValueError: boom" in done.stderr
    assert f'File "{bad}", line 4' in done.stderr
    assert "torchport" not in done.stderr.split("ValueError")[0].replace(
        str(tmp_path), ""
    )  # no frames of ours


def test_only_rank_zero_writes_unless_asked(script: Path, tmp_path: Path) -> None:
    log = tmp_path / "r.log"
    done = run_torchport(["run", "--target", "cpu", "--log", str(log), str(script)], {"RANK": "1"})
    assert done.returncode == 0 and not log.exists()
    done = run_torchport(
        ["run", "--target", "cpu", "--log-all-ranks", "--log", str(log), str(script)], {"RANK": "1"}
    )
    assert done.returncode == 0 and Path(f"{log}.rank1").exists()


def test_module_mode_and_env_log(tmp_path: Path) -> None:
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("import torch\nprint(torch.ones(1, device='cuda:0').device)\n")
    log = tmp_path / "m.log"
    done = run_torchport(
        ["run", "--target", "cpu", "-m", "mypkg.train"], {"TORCHPORT_LOG": str(log)}, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cpu"
    assert "train.py:2: [match] torch.ones(device='cuda:0')" in log.read_text()


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from torchport.runtime import cli

    assert cli.main(["--target", "cpu"]) == 2
    assert cli.main(["--target", "cpu", "--bogus", "x.py"]) == 2
    assert cli.main(["--target", "cpu", str(tmp_path / "missing.py")]) == 2
    assert cli.main(["--cuda-available", "maybe", "x.py"]) == 2
    err = capsys.readouterr().err
    assert "no script given" in err and "unknown option '--bogus'" in err and "missing.py" in err
    assert cli.main(["--help"]) == 0


def test_run_script_api_restores_argv(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    argv = sys.argv[:]
    rt.enable("cpu")
    try:
        assert rt.run_script(str(script), ["5"]) == 5
    finally:
        rt.disable()
    assert sys.argv == argv
    assert "argv ['5'] cpu cpu 0" in capsys.readouterr().out
