"""The one `torchport` command: help, version, dispatch to the C++ core and to Python."""

from __future__ import annotations

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


def test_python_commands_are_importable() -> None:
    for name, (module, function, _) in {**cli.PYTHON_COMMANDS, **cli.PYTHON_DEV_COMMANDS}.items():
        fn = cli._load((module, function, ""))
        assert callable(fn), name
