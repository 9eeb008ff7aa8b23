"""Report writers for `torchport compare`: text (default), CSV (every row) and HTML."""

from __future__ import annotations

import csv
import io
from typing import Any, Optional

from torchport.pages.accuracy import AccuracyPage, LayerPoint, render_accuracy_page
from torchport.probe.compare import Result, Row, describe, iter_csv_fields


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _where_rec(rec: Optional[dict[str, Any]]) -> str:
    if rec is None:
        return "none"
    what = []
    if rec.get("nan"):
        what.append(f"{rec['nan']} NaN")
    if rec.get("inf"):
        what.append(f"{rec['inf']} Inf")
    return f"{describe(rec)} ({', '.join(what)})"


def _row_metrics(r: Row) -> str:
    if r.identical:
        return "identical"
    if r.metrics:
        m = r.metrics
        return (
            f"cos {m['cosine']:.6f}  max abs {m['max_abs_err']:.3g}  max rel {m['max_rel_err']:.3g}  "
            f">0.1% {m['share_rel_gt_0.1pct']:.1%}"
        )
    rels = " ".join(f"{s} {_fmt(r.rel.get(s))}" for s in ("max", "norm", "mean"))
    return f"rel diff: {rels}"


def summary_lines(res: Result) -> list[str]:
    c = res.counts()
    th = res.thresholds
    mode = "full tensors" if res.full else "statistics"
    lines = [
        f"A (under test): {res.a.path}  [{res.a.level} level, {res.a.count} records]",
        f"B (reference):  {res.b.path}  [{res.b.level} level, {res.b.count} records]",
        f"mode: {mode}; thresholds: "
        + (
            f"fail if cosine < {th.cosine} and max abs err > {th.atol}, cosine < {th.cosine_fail}, "
            f"max abs err > {th.atol_fail}, or NaN/Inf (msprobe defaults unless overridden)"
            if res.full
            else f"fail if the relative diff of max or L2 norm > {th.rtol}, or NaN/Inf "
            "(msprobe default unless overridden)"
        ),
    ]
    if res.rows_without_tensors or res.a.tensors_dropped or res.b.tensors_dropped:
        lines.append(
            f"size budget: {res.a.tensors_dropped} tensors of A and {res.b.tensors_dropped} of B were not "
            f"saved (--max-tensor-bytes); {res.rows_without_tensors} differing rows are compared by "
            "statistics only"
        )
    lines += [
        f"rows: {len(res.rows)} aligned: {c['pass']} pass, {c['warn']} warn, {c['fail']} fail; "
        f"{len(res.only_a)} only in A, {len(res.only_b)} only in B",
    ]
    directions = ["forward", "backward"]
    if any(r.a["io"] == "grad" for r in res.rows):
        directions.append("param")
    for d in directions:
        r = res.first_divergence(d)
        label = f"first divergence ({'param grads' if d == 'param' else d}):"
        if r is None:
            lines.append(f"{label:<30} none")
        else:
            lines.append(f"{label:<30} {r.where()}  {r.status.upper()}: {'; '.join(r.reasons)}")
    for d in directions:
        r = res.first_difference(d)
        label = f"first difference ({'param grads' if d == 'param' else d}):"
        lines.append(
            f"{label:<30} " + ("none (bit-identical)" if r is None else f"{r.where()}  {_row_metrics(r)}")
        )
    lines.append(f"{'first NaN/Inf in A:':<30} {_where_rec(res.first_nonfinite_a)}")
    lines.append(f"{'first NaN/Inf in B:':<30} {_where_rec(res.first_nonfinite_b)}")
    return lines


def write_text(res: Result, limit: int = 40) -> str:
    lines = summary_lines(res)
    flagged = [r for r in res.rows if r.status != "pass"]
    if flagged:
        lines.append("")
        lines.append(
            f"flagged rows in execution order ({len(flagged)}; first {min(limit, len(flagged))} shown):"
        )
        for r in flagged[:limit]:
            lines.append(f"  {r.status.upper():<4} #{r.a.get('seq'):<6} {r.where():<50} {_row_metrics(r)}")
            lines.append(f"       {'; '.join(r.reasons)}")
    for side, recs in (("A", res.only_a), ("B", res.only_b)):
        if recs:
            ex = recs[0]
            lines.append(
                f"only in {side}: {len(recs)} records, first: {ex['name']} {ex['dir']} call {ex['call']}"
            )
    return "\n".join(lines) + "\n"


def write_csv(res: Result) -> str:
    buf = io.StringIO()
    rows = list(iter_csv_fields(res.rows))
    if not rows:
        return ""
    w = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    for d in rows:
        w.writerow({k: ("" if v is None else v) for k, v in d.items()})
    return buf.getvalue()


_COLUMNS = [
    "status",
    "seq",
    "direction",
    "name",
    "type",
    "call",
    "io",
    "slot",
    "step",
    "shape_a",
    "dtype_a",
    "dtype_b",
    "cosine",
    "max_abs_err",
    "max_rel_err",
    "rel_max",
    "rel_norm",
    "nan_a",
    "inf_a",
    "reason",
]


def _deviation(r: Row) -> Optional[float]:
    if r.identical:
        return 0.0
    if r.metrics and r.metrics.get("cosine") is not None:
        return max(0.0, 1.0 - float(r.metrics["cosine"]))
    rels = [v for v in (r.rel.get("max"), r.rel.get("norm")) if v is not None]
    return max(rels) if rels else None


def _loss_curves(res: Result) -> dict[str, list[tuple[float, float]]]:
    """Loss per step where the model returns it: the root module's scalar forward output."""
    curves: dict[str, list[tuple[float, float]]] = {"A (under test)": [], "B (reference)": []}
    for r in res.rows:
        if r.a.get("name") or r.direction != "forward" or r.a.get("io") != "out" or r.a.get("shape") != []:
            continue
        step = r.a.get("step", r.a.get("call", 0))
        for label, rec in (("A (under test)", r.a), ("B (reference)", r.b)):
            v = rec.get("mean")
            if isinstance(v, (int, float)):
                curves[label].append((float(step), float(v)))
    return curves if all(curves.values()) else {}


def accuracy_page(res: Result) -> AccuracyPage:
    """The comparison as the data of the accuracy page (torchport.pages.accuracy)."""
    order = {"forward": 0, "backward": 0}
    points = []
    for r in res.rows:
        direction = "forward" if r.direction == "forward" and r.a["io"] != "grad" else "backward"
        points.append(LayerPoint(order[direction], direction, r.where(), _deviation(r), r.status))
        order[direction] += 1
    flat = list(iter_csv_fields(res.rows))
    for d in flat:
        d["name"] = d["name"] or "<root>"
    metric = "1 - cosine similarity" if res.full else "relative difference of max / L2 norm"
    threshold = 1.0 - res.thresholds.cosine if res.full else res.thresholds.rtol
    curves = _loss_curves(res)
    return AccuracyPage(
        title="torchport compare",
        summary=summary_lines(res),
        metric=metric,
        points=points,
        columns=_COLUMNS,
        rows=flat,
        curves=curves,
        curves_note=""
        if curves
        else "No loss curve: the model's own output is not a scalar loss in these dumps "
        "(probe records module inputs and outputs; a model that returns its loss gets one).",
        threshold=threshold,
    )


def write_html(res: Result) -> str:
    return render_accuracy_page(accuracy_page(res))
