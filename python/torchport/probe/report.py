"""Report writers for `torchport compare`: text (default), CSV (every row) and HTML."""

from __future__ import annotations

import csv
import html
import io
from typing import Any, Optional

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


_COLORS = {"pass": "", "warn": "#fff3c4", "fail": "#ffd6d6"}


def write_html(res: Result) -> str:
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>torchport compare</title>",
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px}pre{background:#f6f6f6;padding:8px}</style>",
        "</head><body><h1>torchport compare</h1><pre>",
        html.escape("\n".join(summary_lines(res))),
        "</pre>",
    ]
    rows = list(iter_csv_fields(res.rows))
    if rows:
        cols = list(rows[0].keys())
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>")
        for d in rows:
            color = _COLORS[d["status"]]
            style = f" style='background:{color}'" if color else ""
            out.append(
                f"<tr{style}>" + "".join(f"<td>{html.escape(_fmt(d[c]))}</td>" for c in cols) + "</tr>"
            )
        out.append("</table>")
    out.append("</body></html>\n")
    return "\n".join(out)
