"""The one `torchport` command.

Static subcommands go to the C++ core (exec, no Python in the loop); runtime subcommands are
Python modules loaded on demand, so `torchport analyze` never imports torch.
"""

from __future__ import annotations

import importlib
import os
import sys

from torchport import __version__

# typing only for annotations: not imported at run time (every `torchport analyze` pays its imports first)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional, Sequence

# Imported where used (difflib, torchport._command, torchport._core): `torchport analyze` and `migrate`
# exec the core after this module, and every import here is paid before the core starts.

# name -> (module, function, one-line description). Each function takes argv (without the
# subcommand name) and returns an exit code.
PYTHON_COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("torchport.runtime.cli", "main", "run an unchanged CUDA script on another target"),
    "check-ops": ("torchport.check_ops.cli", "main", "predict CPU fallbacks and failures per target"),
    "probe": ("torchport.probe.cli", "probe_main", "dump per-layer statistics of a run"),
    "compare": ("torchport.probe.cli", "compare_main", "find the first layer where two dumps drift"),
    "verify": ("torchport.verify.cli", "main", "prove that the migrated project trains like the original"),
    "rehearse": ("torchport.rehearse.cli", "main", "run npu/mlu/musa code on a CPU-backed rehearsal device"),
}
# `torchport dev SUB` commands implemented in Python; every other `dev` command is C++.
PYTHON_DEV_COMMANDS: dict[str, tuple[str, str, str]] = {
    "parse-check": (
        "torchport.dev.parse_check",
        "main",
        "compare torchport's parser with CPython's ast over a tree of .py files",
    ),
}
CORE_COMMANDS: dict[str, str] = {
    "analyze": "find CUDA-specific code and what will not work on a target",
    "migrate": "rewrite a project tree for a target, with reports",
    "distributed": "Ascend's spelling of migrate --distributed: distributed INPUT -m FILE -t VAR -o OUT",
    "explain": "what torchport does with one CUDA API",
    "targets": "the targets and what each needs",
    "dev": "developer tools (tokens, parse, dump-spans, parse-check)",
}


# The exit codes of every command (docs/cli.md; tests/python/test_cli_contract.py runs each one).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "done"),
    (
        1,
        "findings: analyze found CUDA-specific code (the CI gate), compare flagged a row, explain "
        "does not know the name; run passes the script's own exit status through",
    ),
    (2, "usage error, or the run was refused (nothing written): one line names the problem"),
    (3, "incomplete: a file was not migrated or analyzed (a row of not_migrated.csv, a warning)"),
    (4, "internal error: a bug in torchport, please report it"),
)
EXIT_USAGE = 2


def exit_codes_help() -> str:
    return "exit status:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES)


def usage_error(command: str, message: str) -> int:
    """The one line of a usage error, pointing to --help; returns the usage exit code."""
    print(f"{command}: error: {message} (see `{command} --help`)", file=sys.stderr)
    return EXIT_USAGE


def _load(spec: tuple[str, str, str]) -> Callable[[Sequence[str]], int]:
    module = importlib.import_module(spec[0])
    fn: Callable[[Sequence[str]], int] = getattr(module, spec[1])
    return fn


def _usage() -> str:
    lines = [f"torchport {__version__}: move CUDA PyTorch code to any accelerator", "", "commands:"]
    for name, desc in CORE_COMMANDS.items():
        lines.append(f"  {name:<11} {desc}")
    for name, spec in PYTHON_COMMANDS.items():
        lines.append(f"  {name:<11} {spec[2]}")
    lines.append("")
    lines.append("`torchport COMMAND --help` describes one command.")
    lines.append("")
    lines.append(exit_codes_help())
    return "\n".join(lines)


def _exec_core(argv: Sequence[str]) -> int:
    from torchport._core import CoreNotFoundError, core_binary

    try:
        binary = core_binary()
    except CoreNotFoundError as e:
        print(f"torchport: error: {e}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [binary, *argv])
    return 2  # not reached


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        return usage_error("torchport", "a command is required")
    if args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        print(f"torchport {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name in PYTHON_COMMANDS:
        return _python_command(f"torchport {name}", PYTHON_COMMANDS[name], rest)
    if name == "distributed":
        # Ascend's `distributed -m FILE -t VAR`: migrate --distributed (docs/migrate.md)
        from torchport.static_cli import distributed_alias
        from torchport.static_cli import main as static_main

        return static_main("migrate", distributed_alias(rest))
    if name in ("analyze", "migrate"):
        # [tool.torchport] configuration, then the core, then torchport-report/index.html
        from torchport.static_cli import main as static_main

        return static_main(name, rest)
    if name == "dev" and rest and rest[0] in PYTHON_DEV_COMMANDS:
        return _python_command(f"torchport dev {rest[0]}", PYTHON_DEV_COMMANDS[rest[0]], rest[1:])
    known = [*CORE_COMMANDS, *PYTHON_COMMANDS, "dev"]
    if not name.startswith("-") and name not in known:
        import difflib

        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return usage_error("torchport", f"unknown command '{name}'{hint}")
    return _exec_core(args)


def _python_command(who: str, spec: tuple[str, str, str], argv: list[str]) -> int:
    """Runs a Python subcommand; a defect in torchport is one line and exit code 4, not a traceback
    (TORCHPORT_DEBUG=1 shows it)."""
    from torchport._command import guarded

    return guarded(who, lambda: _load(spec)(argv))
