"""`import torchport.auto`: redirect CUDA to the target named by $TORCHPORT_TARGET (default: auto).

Put it at the top of the entry script, before code that uses CUDA. Other variables: TORCHPORT_LOG (per-call
log file), TORCHPORT_STRICT=1 (fail on float64 where the target has none), TORCHPORT_CUDA_AVAILABLE
(user, the default as for `torchport run` | target | truth, see docs/runtime.md), TORCHPORT_LOG_ALL_RANKS=1,
TORCHPORT_SHIMS (comma-separated, default "apex,pynvml"; empty: none), TORCHPORT_QUIET=1 (no summary on
stderr). `torchport run` sets all of them for the processes the script starts.

`torchport.auto.disable()` restores every original; `torchport.auto.enable()` turns it on again.
"""

from __future__ import annotations

import os
import sys

from torchport.runtime import disable, is_cuda_device, is_enabled, summary
from torchport.targets import TargetUnavailable

__all__ = ["disable", "enable", "is_cuda_device", "is_enabled", "summary"]


def enable() -> None:
    """Enable the redirect from the TORCHPORT_* environment variables (what importing this module does)."""
    import torchport.runtime as rt

    log = os.environ.get("TORCHPORT_LOG") or None
    shims = os.environ.get("TORCHPORT_SHIMS")
    rt.enable(
        os.environ.get("TORCHPORT_TARGET") or "auto",
        log=log,
        strict=_flag("TORCHPORT_STRICT"),
        cuda_available=os.environ.get("TORCHPORT_CUDA_AVAILABLE") or "user",
        log_all_ranks=_flag("TORCHPORT_LOG_ALL_RANKS"),
        shims=("apex", "pynvml") if shims is None else tuple(x for x in shims.split(",") if x),
    )
    # the summary at exit (rank 0 only) when a log is written, unless TORCHPORT_QUIET=1
    rt.print_summary_at_exit(bool(log) and not _flag("TORCHPORT_QUIET"))


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _enable_or_exit() -> None:
    try:
        enable()
    except TargetUnavailable as e:
        print(f"torchport: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except (KeyError, ValueError) as e:
        print(f"torchport: error: {e.args[0] if e.args else e}", file=sys.stderr)
        raise SystemExit(2) from None


_enable_or_exit()
