"""What `run`, `probe` and `check-ops` share on their command line: the program to run, given as
`script.py args`, `-m module args`, or the same after `python` (`-- python script.py args`,
`-- python -m module args`), as py-spy and torchrun take it; usage errors in one line; and the guard that
makes a defect in torchport one line and exit code 4 (`guarded`: the `torchport` command, verify's child).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, NoReturn, Optional, Sequence

EXIT_USAGE = 2
EXIT_INTERNAL = 4

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")


class UsageError(Exception):
    """A command-line mistake: one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem and pointing to --help."""

    def error(self, message: str) -> NoReturn:
        # `--target ascend`: which target that vendor's or product's name is (data/targets.json)
        m = re.match(r"argument (?:--target|-t)\b[^:]*: invalid choice: '([^']*)'", message)
        choices = [a.choices for a in self._actions if a.dest == "target" and a.choices]
        if m and choices:
            from torchport.targets import target_hint

            message = message[: m.end()] + target_hint(m.group(1), list(choices[0])) + message[m.end() :]
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


@dataclass
class Program:
    """The Python program to run: a script path or a module name, with its arguments."""

    script: Optional[str] = None
    module: Optional[str] = None
    args: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return self.script if self.script is not None else f"-m {self.module}"

    def check(self) -> None:
        """Raises UsageError when the script does not exist or the module cannot be found."""
        if self.script is not None:
            if not os.path.isfile(self.script):
                raise UsageError(f"{self.script}: no such script")
            return
        import importlib.util

        assert self.module is not None
        saved = sys.path[:]
        sys.path.insert(0, os.getcwd())  # as `python -m` does
        try:
            spec = importlib.util.find_spec(self.module)
        except (ImportError, ValueError):
            spec = None
        finally:
            sys.path[:] = saved
        if spec is None:
            raise UsageError(f"no module named {self.module!r}")

    def run(self) -> int:
        """Runs it as __main__ (sys.argv, sys.path as python sets them); returns its exit status."""
        from torchport._runner import run_module, run_script

        if self.module is not None:
            return run_module(self.module, self.args)
        assert self.script is not None
        return run_script(self.script, self.args)


def is_python(word: str) -> bool:
    """`python`, `python3`, `python3.11` or the path of this interpreter."""
    if _PYTHON.match(os.path.basename(word)):
        return True
    try:
        return os.path.samefile(word, sys.executable)
    except OSError:
        return False


def parse_program(words: Sequence[str]) -> Program:
    """The program from what follows the command's own options: `script.py args`, `-m module args`,
    optionally after `python` (whose own options other than -m are refused: they would be ignored)."""
    rest = list(words)
    if rest and is_python(rest[0]):
        rest = rest[1:]
        if rest and rest[0].startswith("-") and rest[0] != "-m":
            raise UsageError(f"python option {rest[0]!r} is not supported here: give script.py or -m module")
    if not rest:
        raise UsageError("no script given: add `script.py args...` or `-m module args...`")
    if rest[0] == "-m":
        if len(rest) < 2:
            raise UsageError("-m needs a module name")
        return Program(module=rest[1], args=rest[2:])
    if rest[0].startswith("-m") and len(rest[0]) > 2:  # python -mpkg.mod
        return Program(module=rest[0][2:], args=rest[1:])
    return Program(script=rest[0], args=rest[1:])


def usage_error(prog: str, message: str) -> int:
    print(f"{prog}: error: {message} (see `{prog} --help`)", file=sys.stderr)
    return EXIT_USAGE


def guarded(who: str, run: Callable[[], int]) -> int:
    """Runs a Python subcommand (`run` imports it and calls it); a defect in torchport is one line and exit
    code 4, not a traceback (TORCHPORT_DEBUG=1 shows it)."""
    try:
        return run()
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - the last resort: an internal error
        if os.environ.get("TORCHPORT_DEBUG"):
            raise
        print(
            f"{who}: internal error: {type(e).__name__}: {e} "
            "(please report it; TORCHPORT_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
