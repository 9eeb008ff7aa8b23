"""The verdict of `torchport verify` from the two runs' traces and probe dumps.

- identical (exit 0): every loss, gradient norm and parameter bit-equal at every step, and every
  probe record bit-identical (equal CRC-32);
- equivalent (exit 0): within the tolerance; the largest deviation is named;
- diverged (exit 1): the first step out of tolerance, the first layer forward and backward there
  (from `torchport compare`'s rows) and the first parameter that differs;
- could not compare (exit 2): a crash or a timeout in one run (with its traceback), a different
  number of steps, a different model structure, a script that never calls backward().
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from torchport.verify.common import DTYPE_RTOL, Options, Proc, SideRun

# What both runs get before the script starts (recorder.py, core.run_side).
DETERMINISM = [
    "torch.manual_seed, random.seed, numpy.random.seed and PYTHONHASHSEED from --seed",
    "torch.use_deterministic_algorithms(True, warn_only=True); cuDNN deterministic, no benchmark",
    "one thread (torch.set_num_threads(1), OMP_NUM_THREADS=MKL_NUM_THREADS=1)",
    "DataLoader num_workers=0, so the data order is the sampler's",
]
EXIT = {"identical": 0, "equivalent": 0, "diverged": 1, "could not compare": 2}


def _base(opts: Options) -> dict[str, Any]:
    return {
        "target": opts.target,
        "steps_requested": opts.steps,
        "seed": opts.seed,
        "level": opts.level,
        "tolerance": {"rtol": opts.rtol, "atol": opts.atol},
    }


def could_not_compare(opts: Options, reason: str, **extra: Any) -> dict[str, Any]:
    rep = {"verdict": "could not compare", "exit_code": 2, "reason": reason, **_base(opts)}
    rep.update(extra)
    return rep


def _num(v: Any) -> float:
    return float(v) if not isinstance(v, str) else float(v)


def rel_dev(a: Optional[float], b: Optional[float]) -> float:
    """|a - b| / |b| (0 when equal; inf when only one is finite)."""
    if a is None or b is None:
        return 0.0 if a is None and b is None else math.inf
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(b), 1e-30)


def within(a: Optional[float], b: Optional[float], rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= atol + rtol * abs(b)


# ---- expected differences (migrate's report) -------------------------------------------------------

_DTYPE_WORD = re.compile(r"\b(float64|float16|bfloat16|double|half)\b|\bdtype\b(?! ?\()")


def expected_differences(report: Optional[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings of migrate's report.json that change a dtype (an AMP dtype, a float64 refused on the
    target): each with the dtype that sets the tolerance."""
    out: list[dict[str, Any]] = []
    if not report:
        return out
    for f in report.get("findings", []) or []:
        msg = str(f.get("message", ""))
        # TP201 keeps the original's dtype (it names the one it avoided): no difference, when applied.
        if f.get("code") == "TP201" and f.get("applied", True):
            continue
        # API names such as set_autocast_gpu_dtype are renames, not dtype changes.
        text = re.sub(r"\w*_dtype\w*", "", msg)
        m = _DTYPE_WORD.search(text)
        if not m:
            continue
        low = text.lower()
        dtype = next((d for d in ("bfloat16", "float16", "float64") if d in low), None)
        if dtype is None:
            dtype = "float16" if "half" in low else "float64" if "double" in low else "bfloat16"
        out.append(
            {
                "where": f"{f.get('file')}:{f.get('start_line')}",
                "code": f.get("code"),
                "message": msg,
                "dtype": dtype,
            }
        )
    return out


def amp_default_dtype(report: Optional[dict[str, Any]], rows: list[Any]) -> list[dict[str, Any]]:
    """migrate's autocast rewrites (TP200) when the records show float16 in the original and
    bfloat16 in the migrated run: `torch.cuda.amp.autocast()` without a dtype runs float16 (CUDA's
    default, which `torchport run` keeps), `torch.amp.autocast("cpu")` bfloat16 (the CPU's)."""
    if not report:
        return []
    pairs = {(r.b.get("dtype"), r.a.get("dtype")) for r in rows if r.a.get("dtype") != r.b.get("dtype")}
    if ("float16", "bfloat16") not in pairs:
        return []
    out = []
    for f in report.get("findings", []) or []:
        if f.get("code") == "TP200" and "autocast" in str(f.get("api", "")):
            out.append(
                {
                    "where": f"{f.get('file')}:{f.get('start_line')}",
                    "code": f.get("code"),
                    "message": f"{f.get('message')}: without dtype= it runs bfloat16 (the target's default), "
                    "the original float16 (CUDA's); pass dtype=torch.float16 to keep it",
                    "dtype": "bfloat16",
                }
            )
    return out


def _widen(rtol: float, expected: list[dict[str, Any]]) -> tuple[float, Optional[str]]:
    if not expected:
        return rtol, None
    first = max(expected, key=lambda e: DTYPE_RTOL[e["dtype"]])
    wide = DTYPE_RTOL[first["dtype"]]
    if wide <= rtol:
        return rtol, None
    return wide, f"{first['where']}: {first['message']} ({first['dtype']}: tolerance rtol={wide:g})"


# ---- per-step comparison ---------------------------------------------------------------------------


def param_dev(a: list[Any], b: list[Any]) -> float:
    """How far a parameter differs between the runs, relative to its size: the larger change of its
    L2 norm and of its sum, over its L2 norm in the original (a sum near zero does not inflate it)."""
    na, nb = (a[3], b[3]) if len(a) > 3 and len(b) > 3 else (abs(a[2]), abs(b[2]))
    scale = max(abs(nb), 1e-30)
    return max(abs(na - nb), abs(a[2] - b[2])) / scale


def step_rows(sa: list[dict[str, Any]], sb: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per step: losses, gradient norm and parameter checksum of both runs (a = migrated). The
    losses are what backward() was called on (scaled by a GradScaler: the verdict compares those);
    loss_unscaled_* are the losses before the scale, loss_scale_* the scale (None: not scaled)."""
    rows = []
    for a, b in zip(sa, sb):
        la = [_num(x["value"]) for x in a.get("losses", [])]
        lb = [_num(x["value"]) for x in b.get("losses", [])]
        bits_equal = [x["bits"] for x in a.get("losses", [])] == [x["bits"] for x in b.get("losses", [])]
        pa = {p[0]: p for p in a.get("params", [])}
        pb = {p[0]: p for p in b.get("params", [])}
        differing = [n for n in pa if n in pb and pa[n][1] != pb[n][1]]
        rows.append(
            {
                "step": a["step"],
                "loss_migrated": la,
                "loss_original": lb,
                "loss_bits_equal": bits_equal,
                # what backward() received, divided by GradScaler's scale where it came from scale(loss)
                "loss_unscaled_migrated": [_num(x.get("unscaled", x["value"])) for x in a.get("losses", [])],
                "loss_unscaled_original": [_num(x.get("unscaled", x["value"])) for x in b.get("losses", [])],
                "loss_scale_migrated": [x.get("scale") for x in a.get("losses", [])],
                "loss_scale_original": [x.get("scale") for x in b.get("losses", [])],
                "grad_norm_migrated": a.get("grad_norm"),
                "grad_norm_original": b.get("grad_norm"),
                "param_sum_migrated": a.get("param_sum"),
                "param_sum_original": b.get("param_sum"),
                "param_norm_migrated": a.get("param_norm"),
                "param_norm_original": b.get("param_norm"),
                "params_identical": a.get("param_crc") == b.get("param_crc"),
                "params_differing": differing,
                "param_devs": {n: param_dev(pa[n], pb[n]) for n in differing},
            }
        )
    return rows


def shown_losses(row: dict[str, Any], side: str) -> list[float]:
    """The losses a table shows for one side of a step row: unscaled (what training printed)."""
    shown: list[float] = row.get(f"loss_unscaled_{side}", row[f"loss_{side}"])
    return shown


def loss_scale_note(rows: list[dict[str, Any]]) -> Optional[str]:
    """The line under a table of shown_losses when a GradScaler scaled some of them (None: none)."""
    scales = {
        side: sorted({x for r in rows for x in r.get(f"loss_scale_{side}", []) if x is not None})
        for side in ("original", "migrated")
    }
    if not scales["original"] and not scales["migrated"]:
        return None

    def said(xs: list[float]) -> str:
        return "not scaled" if not xs else ", ".join(f"{x:g}" for x in xs)

    return (
        "losses are unscaled: backward() received them multiplied by the GradScaler's scale "
        f"(original {said(scales['original'])}; migrated {said(scales['migrated'])}); "
        "the verdict compares the scaled values"
    )


def _step_deviations(row: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(quantity, relative deviation, migrated value, original value) of one step."""
    out = []
    la, lb = row["loss_migrated"], row["loss_original"]
    for i, (x, y) in enumerate(zip(la, lb)):
        name = "loss" if len(la) == 1 else f"loss #{i + 1}"
        out.append((name, rel_dev(x, y), x, y))
    if len(la) != len(lb):
        out.append(("number of backward() calls", math.inf, float(len(la)), float(len(lb))))
    ga, gb = row["grad_norm_migrated"], row["grad_norm_original"]
    out.append(("gradient norm", rel_dev(ga, gb), ga, gb))
    for n, d in row["param_devs"].items():
        out.append((f"parameter {n}", d, math.nan, math.nan))
    return out


def _scale_hint(x: float, y: float, row: dict[str, Any]) -> str:
    """Losses that differ by a power of two while the gradient norms agree: a loss scale differs."""
    if not (x and y and math.isfinite(x) and math.isfinite(y)):
        return ""
    e = math.log2(abs(x / y))
    if abs(e - round(e)) > 1e-3 or round(e) == 0:
        return ""
    same_grads = within(row["grad_norm_migrated"], row["grad_norm_original"], 1e-3, 0.0)
    return (
        f" (a factor 2^{round(e)}: the loss scale differs, e.g. a GradScaler that is disabled or made "
        f"for another device{'; the unscaled gradients agree' if same_grads else ''})"
    )


def _step_out_of_tol(row: dict[str, Any], rtol: float, atol: float) -> Optional[str]:
    la, lb = row["loss_migrated"], row["loss_original"]
    if len(la) != len(lb):
        return f"backward() was called {len(la)} times in the migrated run, {len(lb)} in the original"
    for i, (x, y) in enumerate(zip(la, lb)):
        if not within(x, y, rtol, atol):
            text = f"loss {x!r} vs {y!r}" + (f" (backward call {i + 1})" if len(la) > 1 else "")
            return text + _scale_hint(x, y, row)
    if not within(row["grad_norm_migrated"], row["grad_norm_original"], rtol, atol):
        return f"gradient norm {row['grad_norm_migrated']!r} vs {row['grad_norm_original']!r}"
    for n, d in row["param_devs"].items():
        if d > rtol:
            return f"parameter {n} after optimizer.step(): relative deviation {d:.3g} (of its norm or sum)"
    return None


# ---- per-layer comparison (torchport compare) --------------------------------------------------


def _row_dev(r: Any) -> float:
    if r.identical:
        return 0.0
    vals = [v for v in (r.rel.get("max"), r.rel.get("norm"), r.rel.get("min")) if v is not None]
    if r.a.get("shape") != r.b.get("shape"):
        return math.inf
    if (r.a.get("nan") or r.a.get("inf")) and not (r.b.get("nan") or r.b.get("inf")):
        return math.inf
    return max(vals) if vals else 0.0


def _dev_type(rec: dict[str, Any]) -> str:
    return str(rec.get("device") or "?").split(":")[0]


def main_devices(rows: list[Any]) -> tuple[str, str]:
    """The device type most records of each run are on (migrated, original)."""
    from collections import Counter

    ca = Counter(_dev_type(r.a) for r in rows)
    cb = Counter(_dev_type(r.b) for r in rows)
    return (ca.most_common(1)[0][0] if ca else "?", cb.most_common(1)[0][0] if cb else "?")


def device_mismatch(r: Any, mains: tuple[str, str]) -> Optional[str]:
    """A record on its run's main device in one run but elsewhere in the other (the original's
    CUDA tensors are on the CPU under `torchport run --target cpu`, the migrated ones on the target)."""
    on_a, on_b = _dev_type(r.a) == mains[0], _dev_type(r.b) == mains[1]
    if on_a == on_b:
        return None
    return (
        f"on {r.a.get('device')} in the migrated run (its device: {mains[0]}) but on {r.b.get('device')} "
        f"in the original (its device: {mains[1]})"
    )


def _row_out(r: Any, rtol: float, atol: float, mains: tuple[str, str] = ("?", "?")) -> bool:
    if device_mismatch(r, mains):
        return True
    if r.identical:
        return False
    if r.a.get("shape") != r.b.get("shape"):
        return True
    from torchport.probe.dump import decode_float

    for s in ("max", "min", "norm"):
        x, y = decode_float(r.a.get(s)), decode_float(r.b.get(s))
        if not within(x, y, rtol, max(atol, 1e-7 * abs(decode_float(r.b.get("norm")) or 0.0))):
            return True
    return False


def _row_json(r: Any) -> dict[str, Any]:
    from torchport.probe.compare import describe

    return {
        "where": describe(r.a),
        "name": r.a["name"],
        "module": r.a.get("module"),  # op level: the module the op ran in
        "dir": r.a["dir"],
        "io": r.a["io"],
        "step": r.a.get("step"),
        "identical": r.identical,
        "deviation": _row_dev(r),
        "norm_migrated": r.a.get("norm"),
        "norm_original": r.b.get("norm"),
        "dtype_migrated": r.a.get("dtype"),
        "dtype_original": r.b.get("dtype"),
        "device_migrated": r.a.get("device"),
        "device_original": r.b.get("device"),
    }


def _proc_json(side: SideRun) -> dict[str, Any]:
    m = side.main
    return {
        "root": str(side.source or side.root),
        "entry": side.entry,
        "mode": side.mode,
        "command": side.command,
        "exit_code": side.exit_code,
        "timed_out": side.timed_out,
        "seconds": round(side.seconds, 3),
        "steps": len(m.steps) if m else 0,
        "backward_calls": (m.summary.get("backward_calls", 0) if m else 0),
        "processes": len(side.procs),
        "status": m.summary.get("status") if m else None,
    }


def _rank_check(side: SideRun) -> Optional[dict[str, Any]]:
    ranked = sorted(
        (p for p in side.procs if p.summary.get("rank") is not None and p.steps),
        key=lambda p: p.summary["rank"],
    )
    if len(ranked) < 2:
        return None
    ref = ranked[0]
    for p in ranked[1:]:
        for sa, sb in zip(p.steps, ref.steps):
            if sa.get("param_crc") != sb.get("param_crc"):
                bad = next(
                    (x[0] for x, y in zip(sa.get("params", []), sb.get("params", [])) if x[1] != y[1]), "?"
                )
                return {
                    "ranks": len(ranked),
                    "equal": False,
                    "detail": f"rank {p.summary['rank']} differs from rank 0 after step {sa['step']}: "
                    f"parameter {bad}",
                }
    return {"ranks": len(ranked), "equal": True, "detail": f"{len(ranked)} ranks hold equal parameters"}


def _fallbacks(stderr: str) -> list[str]:
    return sorted(
        {line.strip() for line in stderr.splitlines() if re.search(r"fall(s|ing)? ?back", line, re.I)}
    )


def _structure(dump_b: Path, dump_a: Path, fallback: str) -> str:
    """Why the two runs' models differ, from the probe manifests (b = migrated, a = original)."""
    from torchport.probe.dump import DumpError, open_dump

    try:
        mb, ma = open_dump(dump_b).manifest.get("model") or {}, open_dump(dump_a).manifest.get("model") or {}
    except DumpError:
        return fallback
    pb = {n: s for n, s in mb.get("parameters", [])}
    pa = {n: s for n, s in ma.get("parameters", [])}

    def kind(m: dict[str, Any]) -> str:
        return ",".join(r["type"] for r in m.get("roots", [])) or "no module"

    text = (
        f"the original's model is {kind(ma)} with {len(pa)} parameters, "
        f"the migrated {kind(mb)} with {len(pb)}"
    )
    only_a = [n for n in pa if n not in pb]
    only_b = [n for n in pb if n not in pa]
    shape = [n for n in pa if n in pb and pa[n] != pb[n]]
    if only_a:
        text += f": parameter {only_a[0]} {pa[only_a[0]]} is only in the original"
    elif only_b:
        text += f": parameter {only_b[0]} {pb[only_b[0]]} is only in the migrated run"
    elif shape:
        n = shape[0]
        text += f": parameter {n} has shape {pa[n]} in the original, {pb[n]} in the migrated run"
    elif mb.get("signature") == ma.get("signature"):
        return fallback.split(": ", 1)[-1].replace("; pass --force to compare anyway", "")
    return text


@dataclass
class _Verdict:
    """What the sections of build_report share: the options, the report's common part (`base`, which the
    sections fill in as they go) and the tolerance in force (migrate's dtype changes widen it)."""

    opts: Options
    base: dict[str, Any]
    rtol: float
    cause: Optional[str]
    expected: list[dict[str, Any]]

    def could_not_compare(self, reason: str, **extra: Any) -> dict[str, Any]:
        return {"verdict": "could not compare", "exit_code": 2, "reason": reason, **self.base, **extra}


def build_report(
    opts: Options,
    a: SideRun,
    b: SideRun,
    migrate_report: Optional[dict[str, Any]],
    ranks: int,
    migrated_tree: Path,
) -> dict[str, Any]:
    """a = the original, b = the migrated run. One section per step of the judgement: the report's common
    part, runs that cannot be compared, the per-layer comparison, then identical, equivalent or diverged."""
    v = _start(opts, a, b, migrate_report, ranks, migrated_tree)
    refused = _runs_not_comparable(v, a, b)
    if refused is not None:
        return refused
    ma, mb = a.main, b.main
    assert ma is not None and mb is not None  # _runs_not_comparable refuses a run that recorded nothing
    rank_a, rank_b = _rank_check(a), _rank_check(b)
    v.base["cross_rank"] = {"original": rank_a, "migrated": rank_b}
    res, refused = _compare_layers(v, ma, mb)
    if refused is not None:
        return refused
    steps = step_rows(mb.steps, ma.steps)
    v.base["steps"] = steps
    layer_rows = res.rows if res is not None else []
    _widen_for_amp(v, migrate_report, layer_rows)
    v.base["compare"] = _compare_summary(res)
    mains = main_devices(layer_rows)
    ranks_ok = not (rank_b and not rank_b["equal"] and (rank_a is None or rank_a["equal"]))
    if _bit_identical(steps, layer_rows, res, mains) and ranks_ok:
        return {
            "verdict": "identical",
            "exit_code": 0,
            "reason": f"{len(steps)} steps bit-identical: losses, gradient norms, parameters and "
            f"{len(layer_rows)} probe records",
            **v.base,
        }
    first_step, why = _first_out_of_tolerance(v, steps, layer_rows, mains)
    if first_step is None and ranks_ok and not (res is not None and (res.only_a or res.only_b)):
        return _equivalent(v, steps, layer_rows)
    if first_step is None:
        return _ranks_or_records_disagree(v, ranks_ok, rank_b, res)
    return _diverged(v, first_step, why, steps, layer_rows, mains)


def _start(
    opts: Options,
    a: SideRun,
    b: SideRun,
    migrate_report: Optional[dict[str, Any]],
    ranks: int,
    migrated_tree: Path,
) -> _Verdict:
    """The tolerance from migrate's expected differences, and the part every report has."""
    expected = expected_differences(migrate_report)
    rtol, cause = _widen(opts.rtol, expected)
    notes = sorted({n for side in (a, b) for p in side.procs for n in p.summary.get("notes", [])})
    base = {
        **_base(opts),
        "tolerance_used": {"rtol": rtol, "atol": opts.atol, "cause": cause},
        "migrated_tree": str(migrated_tree),
        "ranks_launched": ranks,
        "original": _proc_json(a),
        "migrated": _proc_json(b),
        "expected_differences": expected,
        "determinism": DETERMINISM,
        "not_deterministic": notes,
        "fallback_ops": _fallbacks(b.stderr) if b.mode == "rehearse" else [],
    }
    return _Verdict(opts, base, rtol, cause, expected)


def _runs_not_comparable(v: _Verdict, a: SideRun, b: SideRun) -> Optional[dict[str, Any]]:
    """A timeout, a failed run, a run that recorded nothing, no training step, a different number of steps."""
    opts = v.opts
    for side in (a, b):
        label = side.name
        if side.exit_code is None:
            continue  # not run: the original failed first
        if side.timed_out:
            return v.could_not_compare(
                f"the {label} run did not finish within --timeout {opts.timeout:g} s "
                f"(it completed {len(side.main.steps) if side.main else 0} of {opts.steps} steps)",
                traceback=side.traceback(),
            )
    for side in (a, b):
        if side.exit_code not in (0, None):
            done = len(side.main.steps) if side.main else 0
            return v.could_not_compare(
                f"the {side.name} run failed with exit code {side.exit_code} after {done} of "
                f"{opts.steps} steps",
                traceback=side.traceback(),
                failed=side.name,
            )
    ma, mb = a.main, b.main
    if ma is None or mb is None:
        missing = a if ma is None else b
        return v.could_not_compare(
            f"the {missing.name} run recorded nothing (no Python process of it was traced)"
        )
    if not ma.summary.get("backward_calls") and not mb.summary.get("backward_calls"):
        return v.could_not_compare(
            "the script never called backward(): there is no training step to verify "
            "(verify compares losses, gradients and parameters after optimizer.step())"
        )
    if not ma.steps and not mb.steps:
        return v.could_not_compare(
            "the script called backward() but never optimizer.step(): no step to verify"
        )
    if len(ma.steps) != len(mb.steps):
        return v.could_not_compare(
            f"different number of optimizer steps: the original made {len(ma.steps)}, "
            f"the migrated {len(mb.steps)} (of {opts.steps} requested)"
        )
    return None


def _compare_layers(v: _Verdict, ma: Proc, mb: Proc) -> tuple[Any, Optional[dict[str, Any]]]:
    """`torchport compare` of the two probe dumps (None without dumps), or the report if the models differ."""
    from torchport.probe.compare import Thresholds, compare_dumps
    from torchport.probe.dump import DumpError

    if ma.dump is None or mb.dump is None:
        return None, None
    rtol = v.rtol
    th = Thresholds(rtol=max(rtol, 1e-12), rtol_warn_out=rtol / 5, rtol_warn_in=rtol / 50)
    try:
        return compare_dumps(mb.dump, ma.dump, th, workers=1, full=False), None
    except DumpError as e:
        return None, v.could_not_compare("different model structure: " + _structure(mb.dump, ma.dump, str(e)))


def _widen_for_amp(v: _Verdict, migrate_report: Optional[dict[str, Any]], layer_rows: list[Any]) -> None:
    """An autocast rewrite that changed the default dtype is an expected difference too."""
    amp = amp_default_dtype(migrate_report, layer_rows)
    if not amp:
        return
    v.expected += amp
    v.base["expected_differences"] = v.expected
    v.rtol, v.cause = _widen(v.opts.rtol, v.expected)
    v.base["tolerance_used"] = {"rtol": v.rtol, "atol": v.opts.atol, "cause": v.cause}


def _compare_summary(res: Any) -> Optional[dict[str, Any]]:
    if res is None:
        return None
    return {
        "rows": len(res.rows),
        "identical_rows": sum(1 for r in res.rows if r.identical),
        "only_in_migrated": len(res.only_a),
        "only_in_original": len(res.only_b),
    }


def _bit_identical(
    steps: list[dict[str, Any]], layer_rows: list[Any], res: Any, mains: tuple[str, str]
) -> bool:
    """Every step quantity bit-equal; the same probe records, each identical and on the same device."""
    bit_equal = all(r["loss_bits_equal"] and r["params_identical"] for r in steps) and all(
        ga == gb for ga, gb in ((r["grad_norm_migrated"], r["grad_norm_original"]) for r in steps)
    )
    misplaced = [r for r in layer_rows if device_mismatch(r, mains)]
    rows_equal = (
        not misplaced
        and all(r.identical for r in layer_rows)
        and (res is None or (not res.only_a and not res.only_b))
    )
    return bit_equal and rows_equal


def _first_out_of_tolerance(
    v: _Verdict, steps: list[dict[str, Any]], layer_rows: list[Any], mains: tuple[str, str]
) -> tuple[Optional[int], str]:
    """The first step out of tolerance and why: from the step quantities and from the layers."""
    first_step: Optional[int] = None
    why = ""
    for r in steps:
        w = _step_out_of_tol(r, v.rtol, v.opts.atol)
        if w:
            first_step, why = r["step"], w
            break
    bad_rows = [r for r in layer_rows if _row_out(r, v.rtol, v.opts.atol, mains)]
    if bad_rows:
        s = int(bad_rows[0].a.get("step", 0))
        if first_step is None or s < first_step:
            dev = device_mismatch(bad_rows[0], mains)
            first_step, why = s, f"{_row_json(bad_rows[0])['where']} " + (dev or "deviates")
    return first_step, why


def _equivalent(v: _Verdict, steps: list[dict[str, Any]], layer_rows: list[Any]) -> dict[str, Any]:
    """Within the tolerance: the largest deviation, of a step quantity or a layer, is named."""
    rtol, cause = v.rtol, v.cause
    devs = [(q, d, x, y, r["step"]) for r in steps for (q, d, x, y) in _step_deviations(r)]
    lay = [
        (_row_json(r)["where"], _row_dev(r), r.a.get("norm"), r.b.get("norm"), r.a.get("step"))
        for r in layer_rows
    ]
    worst = max(devs + lay, key=lambda t: t[1]) if devs or lay else None
    largest = {"what": worst[0], "step": worst[4], "relative": worst[1]} if worst else None
    text = (
        f"within rtol={rtol:g}: largest deviation {worst[1]:.3g} (relative) in {worst[0]} at step {worst[4]}"
        if worst
        else f"within rtol={rtol:g}"
    )
    if cause:
        text += f"; expected: {cause}"
    return {"verdict": "equivalent", "exit_code": 0, "reason": text, "largest_deviation": largest, **v.base}


def _ranks_or_records_disagree(
    v: _Verdict, ranks_ok: bool, rank_b: Optional[dict[str, Any]], res: Any
) -> dict[str, Any]:
    """Every step within tolerance, but the migrated run's ranks or the two record sets disagree."""
    if not ranks_ok:
        assert rank_b is not None
        return {
            "verdict": "diverged",
            "exit_code": 1,
            "reason": f"the migrated run's ranks disagree: {rank_b['detail']}",
            "first_divergence": {"step": None, "why": rank_b["detail"]},
            **v.base,
        }
    assert res is not None
    ex = (res.only_a or res.only_b)[0]
    return v.could_not_compare(
        f"different model structure: {len(res.only_a)} probe records only in the migrated run, "
        f"{len(res.only_b)} only in the original (e.g. {ex['name'] or '<root>'} {ex['dir']})"
    )


def _diverged(
    v: _Verdict,
    first_step: int,
    why: str,
    steps: list[dict[str, Any]],
    layer_rows: list[Any],
    mains: tuple[str, str],
) -> dict[str, Any]:
    """The first layer forward and backward in the first step out of tolerance, and the first parameter."""
    in_step = [r for r in layer_rows if int(r.a.get("step", -1)) == first_step]
    # Forward rows after the step's first backward row are the optimizer's and GradScaler's ops (op
    # level), not the model's forward pass.
    first_bwd = next((i for i, r in enumerate(in_step) if r.a["dir"] == "backward"), len(in_step))
    fwd = next(
        (r for r in in_step[:first_bwd] if not r.identical or device_mismatch(r, mains)),
        None,
    )
    bwd = next(
        (r for r in in_step if r.a["dir"] == "backward" and (not r.identical or device_mismatch(r, mains))),
        None,
    )
    step_row = next((r for r in steps if r["step"] == first_step), None)
    first_param = step_row["params_differing"][0] if step_row and step_row["params_differing"] else None
    first = {
        "step": first_step,
        "why": why,
        "forward": _row_json(fwd) if fwd else None,
        "backward": _row_json(bwd) if bwd else None,
        "parameter": first_param,
        "layers": [_row_json(r) for r in in_step if not r.identical],
    }
    parts = [f"first at step {first_step}: {why}"]
    parts.append(f"forward: {_row_json(fwd)['where']}" if fwd else "forward: all layers identical")
    if bwd:
        parts.append(f"backward: {_row_json(bwd)['where']}")
    if first_param:
        parts.append(f"first parameter: {first_param}")
    if v.cause:
        parts.append(f"expected difference considered: {v.cause}")
    return {
        "verdict": "diverged",
        "exit_code": 1,
        "reason": "; ".join(parts),
        "first_divergence": first,
        **v.base,
    }
