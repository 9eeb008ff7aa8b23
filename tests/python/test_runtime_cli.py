"""`torchport run` and the per-call log: the script runs as under python (argv, exit codes, tracebacks),
each distinct call site gets one line with file:line, the source line, original -> replacement and a class,
only rank 0 writes under torchrun, and a summary comes at exit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import torchport.runtime as rt
from runtime_testlib import FIXTURES, free_port, run_torchport

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
    assert by_line[6]["cls"] == "mismatch"
    # the call as written and the value the emulation returned (the issue's `original(args) -> replacement`)
    assert (
        by_line[6]["what"]
        == "torch.cuda.memory_allocated() -> 0 (cpu has no device caching allocator: returns 0)"
    )
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


def _log_lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]


@pytest.mark.parametrize("all_ranks", [False, True])
def test_two_spawned_gloo_ranks_log_and_summary_from_rank_zero(tmp_path: Path, all_ranks: bool) -> None:
    # mp.spawn workers have no $RANK: their rank comes from torch.distributed once init_process_group ran.
    # The launcher creates the log, rank 0 appends to it (never truncates it), rank 1 writes nothing unless
    # --log-all-ranks (then LOG.rank1); the stderr summary comes from the launcher and rank 0 only.
    script = FIXTURES / "spawn_ranks.py"
    log = tmp_path / "calls.log"
    opts = ["--log-all-ranks"] if all_ranks else []
    done = run_torchport(["run", "--target", "cpu", "--log", str(log), *opts, str(script), str(free_port())])
    assert done.returncode == 0, done.stderr
    assert sorted(re.findall(r"rank \d: [\d.]+ \w+", done.stdout)) == [
        "rank 0: 3.0 cpu",
        "rank 1: 3.0 cpu",
    ]
    text = log.read_text()
    lines = _log_lines(log)
    src = script.read_text().splitlines()
    launcher = next(i for i, ln in enumerate(src, 1) if "the launcher's own call" in ln)
    worker = next(i for i, ln in enumerate(src, 1) if "the rank is not known yet" in ln)
    init = next(i for i, ln in enumerate(src, 1) if "dist.init_process_group(" in ln)
    assert any(ln.startswith(f"{script}:{launcher}: [match] torch.zeros(") for ln in lines)  # the launcher's
    # rank 0's lines, including the one from before its rank was known, appended once
    assert [ln for ln in lines if ln.startswith(f"{script}:{worker}: ")] == [
        f"{script}:{worker}: [match] torch.ones(device='cuda') -> torch.ones(device='cpu') | "
        + src[worker - 1].strip()
    ]
    assert any(ln.startswith(f"{script}:{init}: [match] init_process_group(backend='nccl')") for ln in lines)
    assert "# torchport: rank 0: " in text  # rank 0's own summary, in the same file
    assert "rank 1" not in text
    rank1 = Path(f"{log}.rank1")
    assert rank1.exists() is all_ranks
    if all_ranks:
        assert any(ln.startswith(f"{script}:{worker}: ") for ln in _log_lines(rank1))
        assert "# torchport: rank 1: " in rank1.read_text()
    summaries = [ln for ln in done.stderr.splitlines() if "redirected call site(s)" in ln]
    assert len(summaries) == 2 and sum("rank 0: " in ln for ln in summaries) == 1, done.stderr
    assert "rank 1: " not in done.stderr


def test_run_passes_every_option_to_child_processes(tmp_path: Path) -> None:
    # a child python started by the script gets the same target, log policy, shims and strictness
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "keys = sorted(k for k in os.environ if k.startswith('TORCHPORT_') and k != 'TORCHPORT_LOG_OWNER')\n"
        "print({k: os.environ[k] for k in keys})\n"
        'code = \'import torch, sys; print("pynvml" in sys.modules, torch.ones(1, device="cuda").device)\'\n'
        "subprocess.run([sys.executable, '-c', 'import pynvml' if False else code], check=True)\n"
    )
    log = tmp_path / "c.log"
    done = run_torchport(
        ["run", "--target", "cpu", "--log", str(log), "--log-all-ranks", "--no-shims", "--strict", "--quiet",
         str(script)]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    env_line, child_line = done.stdout.splitlines()
    assert env_line == str(
        {
            "TORCHPORT_CUDA_AVAILABLE": "user",
            "TORCHPORT_LOG": str(log),
            "TORCHPORT_LOG_ALL_RANKS": "1",
            "TORCHPORT_QUIET": "1",
            "TORCHPORT_SHIMS": "",
            "TORCHPORT_STRICT": "1",
            "TORCHPORT_TARGET": "cpu",
        }
    )
    assert child_line == "False cpu"  # the child is redirected too (the .pth hook)
    # the child has no rank: with --log-all-ranks it writes LOG.pidPID, and the parent's log is left alone
    assert "torch.ones(device='cuda')" not in log.read_text()
    (pid_log,) = tmp_path.glob("c.log.pid*")
    assert (
        "[match] torch.ones(device='cuda') -> torch.ones(device='cpu') | <string>" not in pid_log.read_text()
    )
    assert "<string>:1: [match] torch.ones(device='cuda') -> torch.ones(device='cpu')" in pid_log.read_text()
    assert done.stderr == ""  # --quiet reached the child too


def test_torchs_deprecation_of_cuda_amp_is_a_summary_note_not_a_futurewarning(tmp_path: Path) -> None:
    # torch.cuda.amp.GradScaler(), autocast() and custom_fwd make torch print a FutureWarning advising
    # torch.amp.X("cuda", ...), ahead of torchport's summary; under torchport they run as torch.amp.X("cpu")
    amp = tmp_path / "amp.py"
    amp.write_text(
        "import warnings\n"
        "import torch\n"
        "from torch.cuda.amp import GradScaler, autocast, custom_fwd\n"
        "for _ in range(2):\n"
        "    scaler = GradScaler()\n"
        "    with autocast():\n"
        "        pass\n"
        "@custom_fwd\n"
        "def f(ctx, x):\n"
        "    return x\n"
        'warnings.warn("the script\'s own", FutureWarning)\n'
    )
    done = run_torchport(["run", "--target", "cpu", str(amp)], {"PYTHONWARNINGS": "default"})
    assert done.returncode == 0, done.stderr
    assert "is deprecated" not in done.stderr.replace("is deprecated by torch", "")
    assert "FutureWarning: the script's own" in done.stderr  # other warnings are left alone
    notes = [ln for ln in done.stderr.splitlines() if "deprecated by torch" in ln]
    assert notes == [
        "torchport: torch.cuda.amp.GradScaler is deprecated by torch (its FutureWarning is not shown): "
        'torch.amp.GradScaler("cpu") here; `torchport migrate` rewrites it',
        "torchport: torch.cuda.amp.autocast is deprecated by torch (its FutureWarning is not shown): "
        'torch.amp.autocast("cpu") here; `torchport migrate` rewrites it',
        "torchport: torch.cuda.amp.custom_fwd is deprecated by torch (its FutureWarning is not shown): "
        'torch.amp.custom_fwd(device_type="cpu") here; `torchport migrate` rewrites it',
    ]


def test_disable_removes_the_deprecation_filter() -> None:
    import warnings

    def ours() -> list[object]:
        return [f for f in warnings.filters if f[1] is not None and "torch\\.cuda\\.amp" in f[1].pattern]

    assert ours() == []
    rt.enable("cpu")
    try:
        assert len(ours()) == 1
    finally:
        rt.disable()
    assert ours() == []
