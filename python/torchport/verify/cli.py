"""`torchport verify ORIGINAL [MIGRATED] --target T ... -- script args`.

Exit status: 0 identical or equivalent, 1 diverged, 2 could not compare or bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from torchport._command import OneLineParser
from torchport.verify.core import TARGETS, Options, VerifyError, verify
from torchport.verify.verdict import loss_scale_note, shown_losses


class _Parser(OneLineParser):
    """One line per usage error, as every other command (the target hint included)."""


def _tolerance(text: str) -> tuple[float, Optional[float]]:
    """`1e-4` (relative) or `rtol=1e-4,atol=1e-7`."""
    rtol: Optional[float] = None
    atol: Optional[float] = None
    try:
        for part in text.split(","):
            k, _, v = part.partition("=")
            if not v:
                rtol = float(k)
            elif k.strip() == "rtol":
                rtol = float(v)
            elif k.strip() == "atol":
                atol = float(v)
            else:
                raise ValueError(k)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a tolerance: {text!r} (e.g. 1e-4 or rtol=1e-4,atol=1e-7)"
        ) from None
    if rtol is None or rtol < 0 or (atol is not None and atol < 0):
        raise argparse.ArgumentTypeError(f"not a tolerance: {text!r} (e.g. 1e-4 or rtol=1e-4,atol=1e-7)")
    return rtol, atol


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="torchport verify",
        description="Prove that the migrated project trains like the original: run both for N optimizer "
        "steps (the original under `torchport run --target cpu`, the migrated one natively or under "
        "`torchport rehearse`), deterministically, and compare losses, gradient norms, parameters and "
        "per-layer statistics.",
        epilog="exit status: 0 identical or equivalent, 1 diverged, 2 could not compare or bad input. "
        "Script arguments go after --.",
    )
    p.add_argument("original", metavar="ORIGINAL", help="the CUDA project directory or script")
    p.add_argument(
        "migrated", metavar="MIGRATED", nargs="?", help="its migrated copy (default: migrate ORIGINAL first)"
    )
    p.add_argument("--target", "-t", required=True, choices=TARGETS, help="the target MIGRATED was made for")
    p.add_argument("--steps", type=int, default=3, help="optimizer steps to run (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed for torch, random and numpy (default 0)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--entry", help="the entry script, relative to the project directories (default train.py)")
    g.add_argument("-m", dest="module", metavar="MODULE", help="run a module (python -m) instead of a script")
    p.add_argument("--level", choices=("module", "op"), default="module", help="probe level (default module)")
    p.add_argument(
        "--tolerance",
        type=_tolerance,
        default=(1e-4, None),
        help="relative tolerance, or rtol=X,atol=Y (default rtol=1e-4, atol=1e-8)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds each run may take (default 600)")
    p.add_argument(
        "--ranks",
        type=int,
        help="run both sides under torchrun with N CPU ranks "
        "(default: 2 for scripts that join a process group without starting processes)",
    )
    p.add_argument("--format", choices=("text", "json", "html"), default="text")
    p.add_argument("--output", "-o", help="write the report to this file instead of stdout")
    p.add_argument("--keep", metavar="DIR", help="keep the traces, dumps and logs of both runs in DIR")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, script_args = args[:i], args[i + 1 :]
    ns = parser().parse_args(args)
    rtol, atol = ns.tolerance
    opts = Options(
        original=Path(ns.original),
        migrated=Path(ns.migrated) if ns.migrated else None,
        target=ns.target,
        steps=ns.steps,
        seed=ns.seed,
        entry=ns.entry,
        module=ns.module,
        level=ns.level,
        rtol=rtol,
        atol=1e-8 if atol is None else atol,
        timeout=ns.timeout,
        args=script_args,
        ranks=ns.ranks,
        workdir=Path(ns.keep) if ns.keep else None,
    )
    try:
        report = verify(opts)
    except VerifyError as e:
        print(f"torchport verify: error: {e}", file=sys.stderr)
        return 2
    if ns.format == "json":
        text = json.dumps(_jsonable(report), indent=1) + "\n"
    elif ns.format == "html":
        from torchport.verify.html import render

        text = render(report)
    else:
        text = render_text(report)
    if ns.output:
        from torchport.probe.dump import atomic_write_text

        atomic_write_text(Path(ns.output), text)
        print(f"torchport verify: {report['verdict']}: {report['reason']}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return int(report["exit_code"])


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def _f(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return ",".join(_f(x) for x in v) or "-"
    if isinstance(v, float):
        return f"{v:.8g}"
    return str(v)


def render_text(rep: dict[str, Any]) -> str:
    lines = [f"verdict: {rep['verdict']}", f"  {rep['reason']}"]
    tol = rep.get("tolerance_used") or rep.get("tolerance") or {}
    lines.append(
        f"target {rep['target']}, {rep['steps_requested']} steps requested, seed {rep['seed']}, "
        f"{rep['level']} level, rtol {tol.get('rtol')}, atol {tol.get('atol')}"
    )
    for side in ("original", "migrated"):
        s = rep.get(side)
        if s:
            lines.append(
                f"{side:<9} {' '.join(s['entry'])} in {s['root']} ({s['mode']}): exit {s['exit_code']}, "
                f"{s['steps']} steps, {s['seconds']:.1f} s"
            )
    if rep.get("traceback"):
        lines.append(f"traceback of the {rep.get('failed', 'failing')} run:")
        lines += ["  " + x for x in rep["traceback"].splitlines()]
    steps = rep.get("steps") or []
    if steps:
        lines.append("")
        lines.append(
            f"{'step':>4}  {'loss original':>16}  {'loss migrated':>16}  {'grad norm orig':>16}  "
            f"{'grad norm migr':>16}  params"
        )
        for r in steps:
            lines.append(
                f"{r['step']:>4}  {_f(shown_losses(r, 'original')):>16}  "
                f"{_f(shown_losses(r, 'migrated')):>16}  "
                f"{_f(r['grad_norm_original']):>16}  {_f(r['grad_norm_migrated']):>16}  "
                + ("bit-identical" if r["params_identical"] else f"{len(r['params_differing'])} differ")
            )
        note = loss_scale_note(steps)
        if note:
            lines.append(f"({note})")
    fd = rep.get("first_divergence")
    if fd:
        lines.append("")
        lines.append(f"first divergence: step {fd['step']}: {fd['why']}")
        for d in ("forward", "backward"):
            row = fd.get(d)
            if row:
                lines.append(
                    f"  {d:<9} {row['where']}: relative deviation {row['deviation']:.3g} "
                    f"(dtype {row['dtype_original']} -> {row['dtype_migrated']}, "
                    f"device {row['device_original']} -> {row['device_migrated']})"
                )
            else:
                lines.append(f"  {d:<9} every layer bit-identical in this step")
        if fd.get("parameter"):
            lines.append(f"  first parameter that differs after optimizer.step(): {fd['parameter']}")
    if rep.get("compare"):
        c = rep["compare"]
        lines.append(
            f"probe records: {c['rows']} aligned, {c['identical_rows']} bit-identical; "
            f"{c['only_in_migrated']} only in the migrated run, {c['only_in_original']} only in the original"
        )
    cr = rep.get("cross_rank") or {}
    for side in ("original", "migrated"):
        if cr.get(side):
            lines.append(f"cross-rank check ({side}): {cr[side]['detail']}")
    for e in rep.get("expected_differences") or []:
        lines.append(f"expected difference: {e['where']}: {e['message']}")
    if rep.get("determinism"):
        lines.append("made deterministic: " + "; ".join(rep["determinism"]))
    for n in rep.get("not_deterministic") or []:
        lines.append(f"not made deterministic: {n}")
    for f in rep.get("fallback_ops") or []:
        lines.append(f"fallback under rehearsal: {f}")
    return "\n".join(lines) + "\n"
