"""`torchport run`: run an unchanged CUDA script on another target."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Optional, Sequence

from torchport._command import UsageError, parse_program

USAGE = """usage: torchport run [-t T] [--log FILE] [--strict] [--cuda-available MODE] [--log-all-ranks]
                     [--no-shims] [-q] [--] [python] (script.py | -m module) [args...]
       torchport run [-t T] [--log FILE] [options] [--output FILE] [--timeout S] notebook.ipynb

Run an unchanged CUDA PyTorch script on another target: CUDA APIs, device arguments, checkpoints, collectives,
AMP, the profiler and CUDA environment variables are redirected at run time (docs/runtime.md).
A notebook (.ipynb) runs top to bottom in a fresh Jupyter kernel with the redirect on; the executed copy is
written beside it as NAME.torchport-TARGET.ipynb (needs `pip install 'torchport[notebook]'`).

options:
  -t, --target T        npu, mlu, musa, xpu, mps, hpu, cpu or auto (default: $TORCHPORT_TARGET, else auto)
  --log FILE            per-call log, one line per redirected call site with its class
                        (default: $TORCHPORT_LOG)
  --strict              fail (instead of warning) when float64 is used on a target without float64
  --cuda-available MODE what torch.cuda.is_available(), Tensor.is_cuda and device_count() answer:
                        user (the default: the target's for your code, so a script written for CUDA takes
                        its CUDA paths; the truth for installed libraries), target (the target's everywhere,
                        as transfer_to_npu does), truth (False without CUDA); every answer that differs
                        from the truth is logged as `modified`
  --log-all-ranks       every rank N > 0 writes FILE.rankN too (default: rank 0 only, under torchrun and
                        mp.spawn; the rank comes from $RANK or torch.distributed)
  --no-shims            do not serve apex / pynvml replacements
  -q, --quiet           no summary on stderr at exit
  --shapes[=FILE]       dynamic-shape analysis: record each call site's tensor shapes across steps and write
                        Ascend's report (default FILE: ./msft_dynamic_shape_analysis_report.csv); scripts only
  --output FILE         notebooks: where to write the executed copy (default: NAME.torchport-TARGET.ipynb
                        beside the notebook; never the notebook itself)
  --timeout S           notebooks: stop when one cell runs longer than S seconds (default: no limit)

exit status: the script's own (1 if it raised); for a notebook, 0 when every cell ran, else that of the
first failing cell (1 if it raised, N for sys.exit(N)), which is named on stderr; 2 usage error, or the
target cannot run here; 4 internal error in torchport
"""


def _error(msg: str) -> int:
    print(f"torchport run: error: {msg} (see `torchport run --help`)", file=sys.stderr)
    return 2


def _exported(
    target: str,
    cuda_available: str,
    strict: bool,
    log: Optional[str],
    all_ranks: bool,
    shims: Sequence[str],
    quiet: bool,
) -> dict[str, str]:
    """The environment that carries run's options into child processes and kernels (the .pth hook
    reads it): the same target, log file, ranks policy, shims, strictness and summary."""
    return {
        "TORCHPORT_TARGET": target,
        "TORCHPORT_CUDA_AVAILABLE": cuda_available,
        "TORCHPORT_STRICT": "1" if strict else "0",
        "TORCHPORT_LOG": os.path.abspath(log) if log else "",
        "TORCHPORT_LOG_ALL_RANKS": "1" if all_ranks else "0",
        "TORCHPORT_SHIMS": ",".join(shims),
        "TORCHPORT_QUIET": "1" if quiet else "0",
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    target = os.environ.get("TORCHPORT_TARGET") or "auto"
    log = os.environ.get("TORCHPORT_LOG") or None
    strict = False
    # user: a script written for CUDA takes its CUDA paths (on the target), libraries see the truth
    cuda_available = os.environ.get("TORCHPORT_CUDA_AVAILABLE") or "user"
    all_ranks = False
    shims: tuple[str, ...] = ("apex", "pynvml")
    quiet = False
    shapes: Optional[str] = None
    output: Optional[str] = None
    timeout: Optional[float] = None
    script: Optional[str] = None
    module: Optional[str] = None
    rest: list[str] = []
    i = 0

    def value(opt: str) -> Optional[str]:
        nonlocal i
        a = args[i]
        if a.startswith(opt + "="):
            return a.split("=", 1)[1]
        if i + 1 >= len(args):
            return None
        i += 1
        return args[i]

    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            print(USAGE)
            return 0
        if a in ("--target", "-t") or a.startswith("--target="):
            v = value("--target")
            if v is None:
                return _error("--target needs a value")
            target = v
        elif a == "--log" or a.startswith("--log="):
            v = value("--log")
            if v is None:
                return _error("--log needs a file name")
            log = v
        elif a == "--cuda-available" or a.startswith("--cuda-available="):
            v = value("--cuda-available")
            if v not in ("truth", "target", "user"):
                return _error("--cuda-available takes truth, target or user")
            cuda_available = v
        elif a == "--output" or a.startswith("--output="):
            v = value("--output")
            if not v:
                return _error("--output needs a file name")
            output = v
        elif a == "--timeout" or a.startswith("--timeout="):
            v = value("--timeout")
            try:
                timeout = float(v) if v is not None else -1.0
            except ValueError:
                timeout = -1.0
            if timeout <= 0:
                return _error("--timeout takes a number of seconds > 0")
        elif a == "--strict":
            strict = True
        elif a == "--log-all-ranks":
            all_ranks = True
        elif a == "--no-shims":
            shims = ()
        elif a in ("--quiet", "-q"):
            quiet = True
        elif a == "--shapes" or a.startswith("--shapes="):
            from torchport.runtime._shapes import DEFAULT_NAME

            shapes = a.split("=", 1)[1] if "=" in a else DEFAULT_NAME
            if not shapes:
                return _error("--shapes= needs a file name")
        elif a == "-m" or a == "--" or not a.startswith("-"):
            # the program: [--] [python] (script.py | -m module) args...
            try:
                program = parse_program(args[i + 1 :] if a == "--" else args[i:])
            except UsageError as e:
                return _error(str(e))
            script, module, rest = program.script, program.module, program.args
            break
        else:
            return _error(f"unknown option {a!r}")
        i += 1
    if script is None and module is None:
        return _error("no script given: add `script.py args...` or `-m module args...`")

    from torchport.targets import TARGET_NAMES, unknown_target

    if target not in TARGET_NAMES:
        return _error(unknown_target(target, TARGET_NAMES))
    if script is not None and not os.path.isfile(script):
        return _error(f"{script}: no such script")
    notebook = script is not None and script.endswith(".ipynb")
    if not notebook and (output is not None or timeout is not None):
        return _error("--output and --timeout are for notebooks (.ipynb)")
    if notebook:
        assert script is not None
        if rest:
            return _error(f"a notebook takes no arguments: {' '.join(rest)!r}")
        if shapes is not None:
            return _error("--shapes is for scripts, not notebooks")
        return _run_notebook(
            script,
            target,
            log=log,
            strict=strict,
            cuda_available=cuda_available,
            all_ranks=all_ranks,
            shims=shims,
            quiet=quiet,
            output=output,
            timeout=timeout,
        )

    import torchport.runtime as rt
    from torchport.targets import TargetUnavailable

    if rt.is_enabled():  # the .pth hook enabled it from $TORCHPORT_TARGET: the command line wins
        rt.disable()
    try:
        rt.enable(
            target,
            log=log,
            strict=strict,
            cuda_available=cuda_available,
            shims=shims,
            log_all_ranks=all_ranks,
            track_sites=bool(log) or not quiet,
        )
    except TargetUnavailable as e:
        return _error(str(e))
    except OSError as e:
        return _error(f"cannot write the log {log!r}: {e.strerror}")
    session = rt._active
    session.print_summary = not quiet
    # child processes (torchrun workers, multiprocessing spawn) inherit the redirect through the .pth hook
    # (every option: same target, log file, ranks policy, shims, strictness and summary as this process)
    chosen = "auto" if session.target.device_type == "cuda" else session.target.name
    exported = _exported(chosen, cuda_available, strict, log, all_ranks, shims, quiet)
    saved = {k: os.environ.get(k) for k in exported}
    os.environ.update(exported)
    rank = os.environ.get("RANK")
    if session.log.track and rank in (None, "", "0") and session.target.device_type != "cuda":
        # what no patch can see: the script's own device-type comparisons, found by the C++ analyzer
        from torchport.runtime._comparisons import log_comparisons, project_of

        project = project_of(script, module, rest)
        if project is not None:
            log_comparisons(session, project)
    recorder = None
    if shapes is not None:
        from torchport.runtime._shapes import ShapeRecorder

        recorder = ShapeRecorder()
    try:
        with recorder if recorder is not None else contextlib.nullcontext():
            if module is not None:
                code = rt.run_module(module, rest)
            else:
                assert script is not None
                code = rt.run_script(script, rest)
        if recorder is not None and shapes is not None:
            try:
                written = recorder.write(shapes)
            except OSError as e:
                return _error(f"cannot write the shape report {shapes!r}: {e.strerror}")
            print(f"torchport run: {recorder.summary()}; wrote {written}", file=sys.stderr)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if not quiet and (session.log.sites or session.log.notes) and session.log.prints_summary():
            sys.stdout.flush()
            print(session.log.summary(), file=sys.stderr)
        rt.disable()
    return code


def _run_notebook(
    path: str,
    target: str,
    *,
    log: Optional[str],
    strict: bool,
    cuda_available: str,
    all_ranks: bool,
    shims: tuple[str, ...],
    quiet: bool,
    output: Optional[str],
    timeout: Optional[float],
) -> int:
    """`torchport run nb.ipynb`: the kernel gets the options as the TORCHPORT_* variables (as the processes a
    script starts do) and enables the redirect itself; this process does not import torch."""
    from torchport.runtime._nbrun import NotebookRunError, run_notebook
    from torchport.targets import get_target, missing_package_message, vendor_package_missing

    if target != "auto" and vendor_package_missing(get_target(target)):  # known before a kernel starts
        return _error(missing_package_message(get_target(target)))
    exported = _exported(target, cuda_available, strict, log, all_ranks, shims, quiet)
    try:
        return run_notebook(
            path, target=target, exported=exported, output=output, timeout=timeout, quiet=quiet
        )
    except NotebookRunError as e:
        return _error(str(e))
