"""`import torchport.auto`: redirect CUDA to the target named by $TORCHPORT_TARGET (default: auto).

Put it at the top of the entry script, before code that uses CUDA. Other variables: TORCHPORT_LOG (per-call
log file), TORCHPORT_STRICT=1 (fail on float64 where the target has none), TORCHPORT_CUDA_AVAILABLE
(user, the default as for `torchport run` | target | truth, see docs/runtime.md), TORCHPORT_LOG_ALL_RANKS=1,
TORCHPORT_SHIMS (comma-separated, default "apex,pynvml"; empty: none), TORCHPORT_QUIET=1 (no summary on
stderr). `torchport run` sets all of them for the processes the script starts.

`torchport.auto.disable()` restores every original; `torchport.auto.enable()` turns it on again. In a Jupyter
kernel it also registers the `%torchport` magic (docs/runtime.md, "In a notebook").
"""

from __future__ import annotations

import sys

from torchport.runtime import disable, is_cuda_device, is_enabled, summary
from torchport.targets import TargetUnavailable

__all__ = ["disable", "enable", "is_cuda_device", "is_enabled", "summary"]


def enable() -> None:
    """Enable the redirect from the TORCHPORT_* environment variables (what importing this module does)."""
    import torchport.runtime as rt

    options = rt.env_options()
    rt.enable(rt.env_target(), **options)
    # the summary at exit (rank 0 only) when a log is written, unless TORCHPORT_QUIET=1
    rt.print_summary_at_exit(bool(options["log"]) and not rt.env_flag("TORCHPORT_QUIET"))
    shell = _ipython()
    if shell is not None:  # in a Jupyter kernel: `%torchport` (log, off, switch), call sites named by cell
        from torchport.runtime.notebook import attach

        attach(shell)


def _ipython() -> object:
    """The running IPython shell, if this is a kernel (without importing IPython when it is not loaded)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None


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
