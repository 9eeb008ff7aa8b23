"""The one `torchport` command: help, version, dispatch to the C++ core and to Python."""

from __future__ import annotations

import re
import subprocess
import sys

import torchport
from torchport import cli


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args], capture_output=True, text=True, check=False
    )


def test_help_lists_every_command() -> None:
    p = run("--help")
    assert p.returncode == 0
    for name in [
        "analyze",
        "migrate",
        "explain",
        "targets",
        "run",
        "check-ops",
        "probe",
        "compare",
        "verify",
    ]:
        assert f"  {name} " in p.stdout, name


def test_no_arguments_is_a_one_line_usage_error() -> None:
    p = run()
    assert p.returncode == 2
    assert p.stderr == "torchport: error: a command is required (see `torchport --help`)\n"


def test_version_matches_package() -> None:
    p = run("--version")
    assert p.stdout.strip() == f"torchport {torchport.__version__}"


def test_static_commands_reach_the_cpp_core() -> None:
    # The core is a CLI11 program: its own --version answers with the same version.
    p = run("dev", "--help")
    assert p.returncode == 0, p.stderr
    assert "dump-spans" in p.stdout


def test_unknown_command_is_an_error_from_the_core() -> None:
    p = run("no-such-command")
    assert p.returncode != 0
    assert "no-such-command" in (p.stdout + p.stderr)


def test_import_torchport_does_not_import_torch() -> None:
    code = "import sys, torchport, torchport.cli; print('torch' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "False"


# What `torchport analyze` and `migrate` must not import before the core takes over (their front end only
# reads a configuration file and execs the core): each costs every run milliseconds of start-up, which on a
# small project is longer than the core's own run (docs/benchmarks.md, "console script vs core").
NOT_BEFORE_THE_CORE = (
    "torch",
    "typing",
    "dataclasses",
    "subprocess",
    "difflib",
    "tomllib",
    "argparse",
    "json",
)


def test_analyze_and_migrate_start_the_core_without_heavy_imports(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nx = torch.zeros(1).cuda()\n")
    for args in (
        ["analyze", str(script), "-t", "npu", "-q"],
        ["migrate", str(script), "-t", "npu", "-q", "-o", str(tmp_path / "out")],
    ):
        # -X importtime prints each import as it completes, so what was imported before the exec is there
        p = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "torchport", *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=tmp_path,
        )
        assert p.returncode in (0, 1), p.stderr[-2000:]
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in p.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert "torchport.cli" in imported, p.stderr[-2000:]  # the check sees the front end's imports
        assert sorted(set(NOT_BEFORE_THE_CORE) & imported) == [], args


def test_python_commands_are_importable() -> None:
    for name, (module, function, _) in {**cli.PYTHON_COMMANDS, **cli.PYTHON_DEV_COMMANDS}.items():
        fn = cli._load((module, function, ""))
        assert callable(fn), name


def test_a_misspelt_command_or_a_vendors_name_gets_a_suggestion() -> None:
    p = run("analyse", "x")
    assert p.returncode == 2
    assert p.stderr.strip() == (
        "torchport: error: unknown command 'analyse'; did you mean 'analyze'? (see `torchport --help`)"
    )
    assert run("rehears").stderr.startswith(
        "torchport: error: unknown command 'rehears'; did you mean 'rehearse'?"
    )
    assert "did you mean" not in run("frobnicate").stderr
    p = run("analyze", "examples/cuda_project", "--target", "ascend")
    assert p.returncode == 2
    assert "unknown target 'ascend': did you mean npu (Huawei Ascend NPU)?" in p.stderr


def test_analyze_takes_quiet_and_names_no_csv_it_did_not_write(tmp_path) -> None:
    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    p = run("analyze", str(tmp_path), "--target", "npu")
    assert p.returncode == 1
    assert ".csv" not in p.stdout  # no -o: no report file was written, none is named
    assert re.search(r"^\| findings +\| count +\|$", p.stdout, re.M), p.stdout
    assert re.search(r"^\| changes +\| +2 \|$", p.stdout, re.M), p.stdout
    q = run("analyze", str(tmp_path), "--target", "npu", "-q")
    assert q.returncode == 1 and "a.py:2:" in q.stdout and "|" not in q.stdout
    o = run("analyze", str(tmp_path), "--target", "npu", "-o", str(tmp_path / "rep"))
    assert re.search(r"^\| change_list.csv +\| +2 \|$", o.stdout, re.M), o.stdout


def test_help_spells_the_negative_flag_on_its_own_line() -> None:
    p = run("analyze", "--help")
    assert p.returncode == 0
    assert "{false}" not in p.stdout and ",--no-unsafe-fixes" not in p.stdout
    assert "  --no-unsafe-fixes " in p.stdout


TARGET_COMMANDS = {
    # command -> the arguments after `-t ascend` that make the rest of its command line valid
    "analyze": ["examples/cuda_project"],
    "migrate": ["examples/cuda_project", "-o", "never-written"],
    "run": ["s.py"],
    "check-ops": ["s.py"],
    "probe": ["--out", "never-written", "s.py"],
    "verify": ["examples/cuda_project"],
    "rehearse": ["s.py"],
}


def test_every_command_says_which_target_a_vendors_name_is(tmp_path) -> None:
    # the hint comes from data/targets.json's vendor and title words, in the core and in Python alike
    (tmp_path / "s.py").write_text("print('ran')\n")
    root = cli.__file__.rsplit("/python/", 1)[0]
    for command, rest in TARGET_COMMANDS.items():
        args = [a if a != "examples/cuda_project" else f"{root}/examples/cuda_project" for a in rest]
        p = subprocess.run(
            [sys.executable, "-m", "torchport", command, "-t", "ascend", *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=tmp_path,
        )
        assert p.returncode == 2, (command, p.stdout, p.stderr)
        assert len(p.stderr.splitlines()) == 1, (command, p.stderr)
        assert "'ascend': did you mean npu (Huawei Ascend NPU)?" in p.stderr, (command, p.stderr)
        assert "ran" not in p.stdout and not (tmp_path / "never-written").exists()
    p = run("run", "-t", "intel", str(tmp_path / "s.py"))
    assert "did you mean xpu (Intel GPU (XPU)) or hpu (Intel Gaudi (HPU))?" in p.stderr
    p = run("rehearse", "-t", "apple", str(tmp_path / "s.py"))  # mps is no rehearsal target: no hint
    assert (
        p.stderr.strip() == "torchport rehearse: error: unknown target 'apple'; choose one of: npu, mlu, musa"
    )


def test_the_short_flags_mean_the_same_in_every_command(tmp_path) -> None:
    # -t is --target wherever there is a --target, -q is --quiet wherever there is a --quiet
    for command in ["analyze", "migrate", "run", "check-ops", "probe", "compare", "verify", "rehearse"]:
        text = run(command, "--help").stdout
        options = [ln.strip() for ln in text.splitlines() if ln.lstrip().startswith("-")]
        assert options, command
        for long, short in (("--target", "-t"), ("--quiet", "-q")):
            lines = [ln for ln in options if re.search(rf"(^|[\s,]){long}\b", ln)]
            if lines:
                assert any(re.search(rf"(^|[\s,]){short}\b", ln) for ln in lines), (command, lines)
    (tmp_path / "s.py").write_text("import torch\nprint(torch.ones(1).cuda().device)\n")
    p = run("run", "-t", "cpu", "-q", str(tmp_path / "s.py"))
    assert (p.returncode, p.stdout, p.stderr) == (0, "cpu\n", ""), p.stderr
