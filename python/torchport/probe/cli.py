"""`torchport probe` (record a run) and `torchport compare` (diff two recordings).

Exit codes: probe returns the script's own exit status (1 if it raised); compare returns 0 when
every row passes, 1 when a row is flagged, and 2 for bad input (with a one-line error, never a
traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from torchport._command import OneLineParser, UsageError, parse_program, usage_error
from torchport.probe.dump import DumpError, atomic_write_text


class _Parser(OneLineParser):
    pass


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().rstrip("b").rstrip("i")
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 2G)") from None


def _probe_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="torchport probe",
        description="Run a Python script with every top-level nn.Module it calls probed, writing "
        "per-module (or per-ATen-op) statistics of the forward and backward passes to a dump directory.",
        epilog="example: torchport probe --out fp32.dump -- train.py --epochs 1",
    )
    p.add_argument("--out", required=True, help="dump directory to write (replaced if it is a dump)")
    p.add_argument(
        "--level", choices=("module", "op"), default="module", help="what to record (default module)"
    )
    p.add_argument("--steps", type=int, help="stop recording after N steps (optimizer.step() calls)")
    p.add_argument("--full-tensors", action="store_true", help="also save every tensor as .npy")
    p.add_argument(
        "--max-tensor-bytes",
        type=_size,
        default=1 << 30,
        help="budget for saved tensors; later tensors keep their statistics only (default 1G)",
    )
    p.add_argument("--filter", metavar="REGEX", help="record only modules/ops whose name matches")
    p.add_argument("--param-grads", action="store_true", help="also record each parameter's gradient")
    p.add_argument(
        "--target", "-t", help="run the CUDA script on this target via torchport.runtime (e.g. cpu)"
    )
    p.add_argument("script", help="the Python script to run (after --): [python] script.py, or -m module")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    p.usage = "torchport probe --out DUMP [options] -- [python] (script.py | -m module) [args ...]"
    return p


def probe_main(argv: Sequence[str]) -> int:
    argv = list(argv)
    p = _probe_parser()
    if "--" not in argv and "-m" in argv:  # `probe --out D -m pkg.train args`: -m ends the options
        i = argv.index("-m")
        argv = [*argv[:i], "--", *argv[i:]]
    if "--" in argv:
        i = argv.index("--")
        ns = p.parse_args([*argv[:i], "_"])
        rest = argv[i + 1 :]
        if not rest or ns.args:
            p.error("give the script after --: torchport probe --out DUMP -- script.py args...")
    else:
        ns = p.parse_args(argv)
        rest = [ns.script, *ns.args]
    try:
        program = parse_program(rest)
        program.check()
    except UsageError as e:
        return usage_error("torchport probe", str(e))
    script = Path(program.describe())
    args = program.args
    if ns.steps is not None and ns.steps < 1:
        print("torchport probe: error: --steps must be at least 1", file=sys.stderr)
        return 2
    if ns.filter:
        import re

        try:
            re.compile(ns.filter)
        except re.error as e:
            print(f"torchport probe: error: --filter: bad regular expression: {e}", file=sys.stderr)
            return 2
    if ns.target:
        try:
            from torchport import runtime  # type: ignore[attr-defined]

            runtime.enable(ns.target)
        except (ImportError, AttributeError):
            print(
                "torchport probe: error: --target needs torchport.runtime, which is not available",
                file=sys.stderr,
            )
            return 2
        except Exception as e:  # noqa: BLE001 - the runtime's own error message is the reason
            print(f"torchport probe: error: --target {ns.target}: {e}", file=sys.stderr)
            return 2

    from torchport.probe.recorder import Probe

    try:
        probe = Probe(
            None,
            out=ns.out,
            level=ns.level,
            full_tensors=ns.full_tensors,
            max_tensor_bytes=ns.max_tensor_bytes,
            steps=ns.steps,
            filter=ns.filter,
            param_grads=ns.param_grads,
            command=[str(script), *args],
        )
        probe.warn_dropped = False  # summarised below
        probe.start()
    except (DumpError, OSError) as e:
        print(f"torchport probe: error: {e}", file=sys.stderr)
        return 2
    code = 0
    status = "ok"
    try:
        # The runner sets sys.argv / sys.path as python does, prints the script's own traceback if it
        # raises, and returns its exit status.
        code = program.run()
        if code:
            from torchport import _runner

            raised = _runner.last_exception is not None
            status = "script raised an exception" if raised else f"script exited with {code}"
    finally:
        out = probe.close(status=status)
        if ns.target:
            from torchport import runtime

            runtime.disable()
    n = probe._seq
    print(f"torchport probe: {n} records ({ns.level} level) written to {out}", file=sys.stderr)
    if probe.tensors_dropped:
        print(f"torchport probe: warning: {probe.dropped_summary()}", file=sys.stderr)
    if probe.first_nonfinite:
        f = probe.first_nonfinite
        print(
            f"torchport probe: first NaN/Inf: {f['name']} {f['dir']} call {f['call']} {f['io']}[{f['slot']}]",
            file=sys.stderr,
        )
    if n == 0:
        print(
            "torchport probe: warning: the script called no nn.Module, nothing was recorded", file=sys.stderr
        )
    return code


def _compare_parser() -> argparse.ArgumentParser:
    from torchport.probe.compare import Thresholds

    d = Thresholds()
    p = _Parser(
        prog="torchport compare",
        description="Align two probe dumps and report, forward and backward, the first layer where "
        "the numbers drift and the first NaN/Inf. DUMP_A is the run under test, DUMP_B the reference.",
        epilog="exit status: 0 all rows pass, 1 some row flagged, 2 bad input",
    )
    p.add_argument("dump_a", metavar="DUMP_A")
    p.add_argument("dump_b", metavar="DUMP_B")
    p.add_argument("--format", choices=("text", "csv", "html"), default="text")
    p.add_argument("--output", "-o", help="write the report to this file (atomically) instead of stdout")
    p.add_argument(
        "--rtol", type=float, default=d.rtol, help=f"statistics: max relative diff (default {d.rtol})"
    )
    p.add_argument(
        "--cosine", type=float, default=d.cosine, help=f"full tensors: cosine pass level (default {d.cosine})"
    )
    p.add_argument(
        "--atol", type=float, default=d.atol, help=f"full tensors: max abs error (default {d.atol})"
    )
    p.add_argument(
        "--cosine-fail",
        type=float,
        default=d.cosine_fail,
        help=f"full tensors: fail below this cosine whatever the error (default {d.cosine_fail})",
    )
    p.add_argument(
        "--atol-fail",
        type=float,
        default=d.atol_fail,
        help=f"full tensors: fail above this max abs error whatever the cosine (default {d.atol_fail})",
    )
    p.add_argument("--stats-only", action="store_true", help="ignore saved tensors, compare statistics")
    p.add_argument(
        "--force", action="store_true", help="compare even if the dumps look like different models"
    )
    p.add_argument("--jobs", "-j", type=int, default=min(4, os.cpu_count() or 1), help="threads for tensors")
    p.add_argument("--limit", type=int, default=40, help="flagged rows listed in the text report")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (it shows only on a terminal)")
    return p


def compare_main(argv: Sequence[str]) -> int:
    ns = _compare_parser().parse_args(list(argv))
    from torchport.probe.compare import Thresholds, compare_dumps
    from torchport.probe.report import write_csv, write_html, write_text

    # --rtol scales msprobe's statistics rules together: fail above 0.5, "introduced here" when
    # the output is above 0.1 while the inputs are below 0.01 (the same 1 : 1/5 : 1/50 ratios).
    th = Thresholds(
        rtol=ns.rtol,
        rtol_warn_out=ns.rtol / 5,
        rtol_warn_in=ns.rtol / 50,
        cosine=ns.cosine,
        atol=ns.atol,
        cosine_fail=ns.cosine_fail,
        atol_fail=ns.atol_fail,
    )
    try:
        res = compare_dumps(
            ns.dump_a,
            ns.dump_b,
            th,
            force=ns.force,
            workers=max(1, ns.jobs),
            full=False if ns.stats_only else None,
            progress=not ns.quiet and sys.stderr.isatty(),
        )
    except DumpError as e:
        print(f"torchport compare: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"torchport compare: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    text = {
        "text": lambda: write_text(res, ns.limit),
        "csv": lambda: write_csv(res),
        "html": lambda: write_html(res),
    }[ns.format]()
    if ns.output:
        try:
            atomic_write_text(Path(ns.output), text)
        except OSError as e:
            print(f"torchport compare: error: {ns.output}: {e.strerror or e}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 1 if res.diverged else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    return compare_main(sys.argv[1:] if argv is None else argv)
