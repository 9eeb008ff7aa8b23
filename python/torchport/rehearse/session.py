"""The rehearsal session of this process and the names every part of rehearse shares.

runtime.activate() starts the session; the device module (devmod.py), the collectives, the stand-ins and the
summary read it from here, so none of them imports runtime.py, which imports them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchport.targets import TARGETS

STANDINS = Path(__file__).resolve().parent / "standins"
# The targets whose vendor package (data/targets.json "package") has a stand-in here: npu, mlu, musa.
REHEARSE_TARGETS: tuple[str, ...] = tuple(
    name
    for name, t in TARGETS.items()
    if t.vendor_package and (STANDINS / t.vendor_package.split(".")[0] / "__init__.py").is_file()
)
ENV_CONFIG = "TORCHPORT_REHEARSE_CONFIG"  # JSON of the session, inherited by spawned children
STATUS_NAMES = ("native", "fallback", "unknown", "refused")


@dataclass
class Session:
    target: str
    devices: int = 1
    memory: int = -1  # bytes per device, -1: no limit
    strict: bool = False
    report: Optional[str] = None
    ext: Any = None
    started: float = field(default_factory=time.perf_counter)
    backward_site: str = ""
    # What rehearsal ran differently from the vendor's stack, once per kind (printed and in the report).
    notes: list[str] = field(default_factory=list)
    # Operators given the CPU kernel instead of torch's composite (the target's lists say native).
    listed_kernels: list[str] = field(default_factory=list)
    # npu: the vendor's torch_npu in use ("the vendor's torch_npu 2.13.0 from PATH"), "" for the stand-in.
    vendor_package: str = ""


_session: Optional[Session] = None


def session() -> Optional[Session]:
    return _session


def start(sess: Session) -> None:
    """Makes `sess` the session of this process (runtime.activate, once per process)."""
    global _session
    _session = sess


def ext() -> Any:
    """The loaded C++ extension (only under rehearsal)."""
    if _session is None:
        raise RuntimeError("the rehearsal device is not active in this process")
    return _session.ext
