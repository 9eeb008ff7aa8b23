"""The accuracy report page: per-layer deviation along execution order, loss curves, the table.

`render_accuracy_page` is the reusable part (compare and verify both call it): it takes
plain rows and curves and returns one self-contained HTML page (inline SVG charts drawn here,
inline CSS, a few lines of script for the table filter; no network, no third-party code).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

STATUS_COLOR = {"pass": "#2da44e", "warn": "#bf8700", "fail": "#cf222e"}
ROW_BACKGROUND = {"pass": "", "warn": "#fff3c4", "fail": "#ffd6d6"}
_FLOOR = 1e-12  # deviations at or below this (bit-identical rows) are drawn on the axis floor
_MAX_POINTS = 1500  # per direction; more are reduced to the largest value of each bucket


@dataclass
class LayerPoint:
    """One row of the comparison on the deviation chart."""

    order: int  # position in execution order (within its direction)
    direction: str  # "forward" or "backward" (parameter gradients: "backward")
    label: str  # where, e.g. "blocks.0.fc1 (Linear) forward call 0 output[0]"
    value: Optional[float]  # deviation (None: not comparable)
    status: str = "pass"  # pass / warn / fail


@dataclass
class AccuracyPage:
    title: str
    summary: list[str]
    metric: str  # what `value` of the points is, for the y axis
    points: list[LayerPoint]
    columns: list[str]  # table columns; rows are dicts with these keys plus "status"
    rows: list[dict[str, Any]]
    curves: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # label -> (step, loss)
    curves_note: str = ""  # why there are no curves, when there are none
    threshold: Optional[float] = None  # drawn as a dashed line on the deviation chart


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


def _esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _reduce(points: list[LayerPoint]) -> list[LayerPoint]:
    """At most _MAX_POINTS points: per bucket the worst one (flagged first, then largest)."""
    if len(points) <= _MAX_POINTS:
        return points
    size = math.ceil(len(points) / _MAX_POINTS)
    rank = {"fail": 2, "warn": 1, "pass": 0}
    out = []
    for i in range(0, len(points), size):
        bucket = points[i : i + size]
        out.append(max(bucket, key=lambda p: (rank.get(p.status, 0), p.value if p.value is not None else -1)))
    return out


def _log_ticks(lo: float, hi: float) -> list[float]:
    return [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def deviation_svg(
    points: Sequence[LayerPoint], direction: str, metric: str, threshold: Optional[float] = None
) -> str:
    """One direction's deviation along execution order (log y), flagged points coloured and the
    first divergence marked with a red line."""
    pts = [p for p in points if p.direction == direction]
    w, h, left, right, top, bottom = 900, 260, 64, 16, 28, 40
    if not pts:
        return (
            f"<svg class='chart' viewBox='0 0 {w} 60' role='img' aria-label='{direction}: no rows'>"
            f"<text x='{left}' y='34' class='muted'>{direction}: no rows</text></svg>"
        )
    values = [max(p.value, _FLOOR) for p in pts if p.value is not None and not math.isnan(p.value)]
    if threshold:
        values.append(threshold)
    lo = min(values + [1e-8])
    hi = max(values + [1e-1])
    ticks = _log_ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]
    n = max(p.order for p in pts) + 1

    def x(order: float) -> float:
        return left + (w - left - right) * (order / max(1, n - 1) if n > 1 else 0.5)

    def y(v: Optional[float]) -> float:
        if v is None or math.isnan(v):
            v = hi
        v = min(max(v, lo), hi)
        span = math.log10(hi) - math.log10(lo) or 1.0
        return top + (h - top - bottom) * (1 - (math.log10(v) - math.log10(lo)) / span)

    out = [
        f"<svg class='chart' viewBox='0 0 {w} {h}' role='img' aria-label='{_esc(direction)} deviation'>",
        f"<text x='{left}' y='16' class='ctitle'>{_esc(direction)}: {_esc(metric)} per layer, "
        "in execution order</text>",
    ]
    has_identical = any(p.value is not None and p.value <= _FLOOR for p in pts)
    for t in ticks:
        ty = y(t)
        label = f"1e{round(math.log10(t))}"
        if t == ticks[0] and has_identical and t <= _FLOOR:
            label = "identical"
        out.append(f"<line x1='{left}' x2='{w - right}' y1='{ty:.1f}' y2='{ty:.1f}' class='grid'/>")
        out.append(f"<text x='{left - 6}' y='{ty + 4:.1f}' class='tick' text-anchor='end'>{label}</text>")
    out.append(
        f"<text x='{(left + w - right) / 2}' y='{h - 6}' class='tick' text-anchor='middle'>"
        f"execution order ({len(pts)} rows)</text>"
    )
    if threshold:
        ty = y(threshold)
        out.append(f"<line x1='{left}' x2='{w - right}' y1='{ty:.1f}' y2='{ty:.1f}' class='threshold'/>")
        out.append(f"<text x='{w - right}' y='{ty - 4:.1f}' class='tick' text-anchor='end'>threshold</text>")
    first = next((p for p in pts if p.status != "pass"), None)
    if first is not None:
        fx = x(first.order)
        out.append(f"<line x1='{fx:.1f}' x2='{fx:.1f}' y1='{top}' y2='{h - bottom}' class='first'/>")
        anchor = "start" if fx < w / 2 else "end"
        dx = 4 if anchor == "start" else -4
        out.append(
            f"<text x='{fx + dx:.1f}' y='{top + 12}' class='firstlabel' text-anchor='{anchor}'>"
            f"first divergence: {_esc(first.label)}</text>"
        )
    line = " ".join(
        f"{x(p.order):.1f},{y(p.value if p.value is not None else None):.1f}" for p in _reduce(pts)
    )
    out.append(f"<polyline points='{line}' class='trace'/>")
    for p in _reduce(pts):
        r = 3.2 if p.status != "pass" else 2.2
        value = "not comparable" if p.value is None else f"{p.value:.3g}"
        out.append(
            f"<circle cx='{x(p.order):.1f}' cy='{y(p.value):.1f}' r='{r}' "
            f"fill='{STATUS_COLOR.get(p.status, '#888')}'>"
            f"<title>{_esc(p.label)}: {value} ({p.status})</title></circle>"
        )
    out.append("</svg>")
    return "\n".join(out)


def curves_svg(curves: dict[str, list[tuple[float, float]]]) -> str:
    """Loss per step, one line per run."""
    w, h, left, right, top, bottom = 900, 240, 64, 140, 28, 36
    series = {
        k: [(float(s), float(v)) for s, v in pts if v is not None and math.isfinite(v)]
        for k, pts in curves.items()
    }
    allpts = [p for pts in series.values() for p in pts]
    if not allpts:
        return ""
    xs = [p[0] for p in allpts]
    ys = [p[1] for p in allpts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad

    def x(v: float) -> float:
        return left + (w - left - right) * ((v - x0) / (x1 - x0) if x1 > x0 else 0.5)

    def y(v: float) -> float:
        return top + (h - top - bottom) * (1 - (v - y0) / (y1 - y0))

    palette = ["#0969da", "#cf222e", "#8250df", "#1a7f37", "#bf8700"]
    out = [
        f"<svg class='chart' viewBox='0 0 {w} {h}' role='img' aria-label='loss curves'>",
        f"<text x='{left}' y='16' class='ctitle'>loss per step</text>",
    ]
    for k in range(5):
        v = y0 + (y1 - y0) * k / 4
        out.append(f"<line x1='{left}' x2='{w - right}' y1='{y(v):.1f}' y2='{y(v):.1f}' class='grid'/>")
        out.append(f"<text x='{left - 6}' y='{y(v) + 4:.1f}' class='tick' text-anchor='end'>{v:.4g}</text>")
    out.append(
        f"<text x='{(left + w - right) / 2}' y='{h - 6}' class='tick' text-anchor='middle'>step</text>"
    )
    for i, (name, pts) in enumerate(series.items()):
        color = palette[i % len(palette)]
        dash = " stroke-dasharray='6 4'" if i % 2 else ""
        coords = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in pts)
        out.append(f"<polyline points='{coords}' fill='none' stroke='{color}' stroke-width='2'{dash}/>")
        for s, v in pts:
            out.append(
                f"<circle cx='{x(s):.1f}' cy='{y(v):.1f}' r='2.5' fill='{color}'>"
                f"<title>{_esc(name)} step {s:g}: "
                f"{v:.6g}</title></circle>"
            )
        ly = top + 14 + 18 * i
        out.append(
            f"<line x1='{w - right + 12}' x2='{w - right + 36}' y1='{ly}' y2='{ly}' "
            f"stroke='{color}' stroke-width='2'{dash}/>"
        )
        out.append(f"<text x='{w - right + 42}' y='{ly + 4}' class='tick'>{_esc(name)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def render_accuracy_page(page: AccuracyPage) -> str:
    """The whole page as one HTML string."""
    counts = {s: sum(1 for r in page.rows if r.get("status") == s) for s in ("pass", "warn", "fail")}
    charts = [deviation_svg(page.points, d, page.metric, page.threshold) for d in ("forward", "backward")]
    loss = curves_svg(page.curves) if page.curves else ""
    if not loss:
        loss = f"<p class='muted'>{_esc(page.curves_note or 'No loss values were recorded.')}</p>"
    head = "".join(f"<th>{_esc(c)}</th>" for c in page.columns)
    body = []
    for r in page.rows:
        status = str(r.get("status", "pass"))
        bg = ROW_BACKGROUND.get(status, "")
        style = f" style='background:{bg}'" if bg else ""
        texts = [_fmt(r.get(c)) for c in page.columns]
        cells = "".join(
            f"<td title='{_esc(t)}'>{_esc(t)}</td>" if len(t) > 40 else f"<td>{_esc(t)}</td>" for t in texts
        )
        body.append(f"<tr class='{_esc(status)}'{style}>{cells}</tr>")
    template = (Path(__file__).parent / "accuracy.html").read_text(encoding="utf-8")
    cards = "".join(
        f"<div class='card {s}'><b>{counts[s]}</b><span>{s}</span></div>" for s in ("pass", "warn", "fail")
    )
    return (
        template.replace("{{title}}", _esc(page.title))
        .replace("{{summary}}", _esc("\n".join(page.summary)))
        .replace("{{cards}}", cards)
        .replace("{{charts}}", "\n".join(charts))
        .replace("{{loss}}", loss)
        .replace("{{head}}", f"<tr>{head}</tr>")
        .replace("{{body}}", "\n".join(body))
    )
