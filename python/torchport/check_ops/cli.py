"""`torchport check-ops`: run a CUDA training script on this CPU and predict, per target, which operators
fall back to the CPU, fail, or hit a dtype the target lacks.

    torchport check-ops --target npu [--target mlu ...] [--torch-version X.Y] [--steps N]
                        [--format text|json|csv] [-o FILE] -- [python] (script.py | -m module) args...
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from pathlib import Path
from typing import Any, Optional, Sequence

from torchport._command import OneLineParser, UsageError, parse_program, usage_error
from torchport._versions import major_minor
from torchport.check_ops.opdb import DB_TARGETS

PROG = "torchport check-ops"


class _StopScript(SystemExit):
    """Raised from the optimizer-step hook once the requested number of steps has run: a SystemExit(0), so
    the script ends as if it had called sys.exit(0), through its own `except Exception` handlers."""

    def __init__(self) -> None:
        super().__init__(0)


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Run a CUDA PyTorch script on this CPU (CUDA redirected to the CPU) and report, per "
        "target, the operators that would fall back to the CPU, fail, or use a dtype the target lacks.",
        usage=f"{PROG} --target T [--target T ...] [options] -- [python] (script.py | -m module) [args ...]",
        epilog="exit status: 0 done; 1 the script failed (the report covers what ran before); 2 usage error; "
        "4 internal error",
    )
    p.add_argument(
        "--target",
        "-t",
        action="append",
        required=True,
        choices=DB_TARGETS,
        help="target to check (repeatable)",
    )
    p.add_argument(
        "--torch-version",
        metavar="X.Y",
        help="torch version of the target install (default: the installed torch)",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=1,
        metavar="N",
        help="stop after N optimizer steps (default 1; a script without an optimizer runs to its end)",
    )
    p.add_argument("--format", choices=("text", "json", "csv"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--show-native", action="store_true", help="list native operators too (text format)")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print the warnings of torch and the script (the profiler's, deprecations) on stderr; "
        "by default they are counted, and listed in the json report's notes",
    )
    return p


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    args = list(argv)
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i + 1 :]
    return args, []


def _check_version(v: Optional[str]) -> Optional[str]:
    if v is None:
        return None
    try:
        return major_minor(v)
    except ValueError:
        raise ValueError(f"--torch-version: expected X.Y (for example 2.7), got {v!r}") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    own, script_argv = _split(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(own)
    if not script_argv and "-m" in own:  # `check-ops --target npu -m pkg.train args`: -m ends the options
        i = own.index("-m")
        own, script_argv = own[:i], own[i:]
    if not script_argv:
        parser.error("give the script to run after `--`: torchport check-ops --target npu -- train.py")
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    try:
        version = _check_version(args.torch_version)
    except ValueError as e:
        parser.error(str(e))
    try:
        program = parse_program(script_argv)
        program.check()
    except UsageError as e:
        return usage_error(PROG, str(e))
    script = Path(program.describe())

    from torchport.check_ops import _trace, check_callable  # noqa: F401 (bind torch.profiler before enable)
    from torchport.check_ops.opdb import OpDbError

    try:
        from torchport import runtime as rt
    except ImportError as e:
        print(f"{PROG}: error: script mode needs torchport.runtime ({e})", file=sys.stderr)
        return 2

    from torch.optim.optimizer import register_optimizer_step_post_hook

    state: dict[str, Any] = {"rc": 0, "error": "", "steps": 0}

    def after_step(opt: Any, a: Any, k: Any) -> None:
        state["steps"] += 1
        if state["steps"] >= args.steps:
            raise _StopScript()

    def body() -> None:
        # Registered inside the trace, after check-ops' own step hook, so the last step is still measured.
        handles.append(register_optimizer_step_post_hook(after_step))
        # run_script prints the script's own traceback, like python, and returns its exit code. The
        # script's prints go to stderr when the report is written to stdout, so the report stays parseable.
        if args.output:
            state["rc"] = program.run()
        else:
            with contextlib.redirect_stdout(sys.stderr):
                state["rc"] = program.run()
        if state["rc"] != 0:
            n = state["steps"]
            rc = state["rc"]
            state["error"] = f"{script}: the script exited with code {rc} after {n} optimizer step(s)"

    handles: list[Any] = []
    try:
        # The script is CUDA code and must take its CUDA paths: its own code sees CUDA as available
        # (is_available(), Tensor.is_cuda), installed libraries see the truth (runtime --cuda-available=user).
        rt.enable("cpu", cuda_available="user")
    except Exception as e:  # TargetUnavailable and friends carry a readable message
        print(f"{PROG}: error: cannot redirect CUDA to the CPU: {e}", file=sys.stderr)
        return 2
    captured: list[str] = []

    def capture(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line).rstrip()
        captured.append(text)
        if args.verbose:
            print(text, file=sys.stderr)

    try:
        # Third-party warnings (the profiler's, torch's deprecations) must not interleave with the report.
        with warnings.catch_warnings():
            warnings.showwarning = capture
            report = check_callable(body, args.target, steps=1, torch_version=version)
    except OpDbError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    finally:
        rt.disable()
        for h in handles:
            h.remove()
    report.steps = state["steps"]
    for line in _trace.PROFILER_LINES:
        captured.append(f"profiler: {line}")
        if args.verbose:
            print(f"profiler: {line}", file=sys.stderr)
    _trace.PROFILER_LINES.clear()
    if captured:
        if not args.verbose:
            print(
                f"{PROG}: {len(captured)} warning(s) and profiler line(s) from torch or the script captured "
                "(-v prints them)",
                file=sys.stderr,
            )
        if args.format == "json":
            report.notes.extend(f"warning: {w}" for w in captured)
    if state["error"]:
        report.notes.append(state["error"] + " (the report covers the operators run before that)")
    text = report.to_text(args.show_native) if args.format == "text" else report.render(args.format)
    if args.output:
        from torchport._files import write_atomic

        try:
            write_atomic(Path(args.output), text)
        except OSError as e:
            print(f"{PROG}: error: {args.output}: cannot write: {e.strerror}", file=sys.stderr)
            return 2
        print(f"{PROG}: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if state["error"]:
        print(f"{PROG}: {state['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
