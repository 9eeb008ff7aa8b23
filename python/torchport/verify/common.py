"""What every part of `torchport verify` shares: the targets, the options, one side's run and its
processes, the input error. core.py runs the sides, verdict.py judges them; both import this module and
neither imports the other's callers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchport.rehearse.session import REHEARSE_TARGETS
from torchport.targets import MIGRATION_TARGETS

# The targets verify takes (all of data/targets.json), and those whose migrated tree runs under
# `torchport rehearse` (the rest run natively).
TARGETS = MIGRATION_TARGETS
REHEARSED = REHEARSE_TARGETS
# Tolerances verify widens to when migrate reported a dtype change (relative; the unit roundoff
# of the narrower type times a few steps' growth).
DTYPE_RTOL = {"bfloat16": 5e-2, "float16": 1e-2, "float64": 1e-5}


class VerifyError(Exception):
    """Bad input: the message is the whole error (`path: reason`)."""


@dataclass
class Options:
    original: Path
    migrated: Optional[Path]
    target: str
    steps: int = 3
    seed: int = 0
    entry: Optional[str] = None
    module: Optional[str] = None
    level: str = "module"
    rtol: float = 1e-4
    atol: float = 1e-8
    timeout: float = 600.0
    args: list[str] = field(default_factory=list)
    ranks: Optional[int] = None  # None: 2 for torchrun-style DDP scripts, else 1
    workdir: Optional[Path] = None


@dataclass
class Proc:
    """One recorded process: its summary, its steps and its probe dump."""

    summary: dict[str, Any]
    steps: list[dict[str, Any]]
    dump: Optional[Path]


@dataclass
class SideRun:
    name: str
    root: Path
    entry: list[str]
    mode: str
    source: Optional[Path] = None  # the user's tree (root is the working copy the run starts in)
    command: list[str] = field(default_factory=list)
    exit_code: Optional[int] = None
    timed_out: bool = False
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    procs: list[Proc] = field(default_factory=list)
    main: Optional[Proc] = None

    def traceback(self) -> str:
        """The script's traceback: the first one in stderr (under torchrun, the agent's own
        ChildFailedError comes after the worker's root cause)."""
        blocks = re.split(r"(?m)^(?=Traceback \(most recent call last\))", self.stderr)
        tbs = [b for b in blocks if b.startswith("Traceback")]
        if not tbs:
            return "\n".join(self.stderr.strip().splitlines()[-40:])
        lines = [x for x in tbs[0].splitlines() if x.strip()]
        end = next((i for i, x in enumerate(lines) if i and not x.startswith((" ", "Traceback"))), None)
        lines = lines[: end + 1] if end is not None else lines
        return "\n".join(lines[-40:])
