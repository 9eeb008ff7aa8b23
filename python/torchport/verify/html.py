"""The HTML report of `torchport verify`: one self-contained page (inline SVG, no scripts).

- both loss curves on one chart;
- the per-layer deviation at the first diverging step (a bar per layer record, log scale);
- the comparison table: per step, and per layer at that step.
"""

from __future__ import annotations

import html
import math
from typing import Any, Optional

from torchport.verify.verdict import loss_scale_note, shown_losses

_W, _H, _PAD, _LEFT = 640, 260, 48, 80
_COLORS = {"original": "#1f77b4", "migrated": "#d62728"}


def _e(x: Any) -> str:
    return html.escape(str(x))


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return ", ".join(_fmt(x) for x in v) or "-"
    if isinstance(v, float):
        return f"{v:.8g}"
    return str(v)


def _series(rep: dict[str, Any], side: str) -> list[tuple[int, float]]:
    out = []
    for r in rep.get("steps") or []:
        vals = shown_losses(r, side)
        if vals and isinstance(vals[-1], (int, float)) and math.isfinite(vals[-1]):
            out.append((int(r["step"]), float(vals[-1])))
    return out


def loss_chart(rep: dict[str, Any]) -> str:
    series = {s: _series(rep, s) for s in ("original", "migrated")}
    pts = [p for s in series.values() for p in s]
    if not pts:
        return "<p>No loss was recorded.</p>"
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5 * (abs(y0) or 1), y1 + 0.5 * (abs(y1) or 1)

    def px(x: float) -> float:
        return _LEFT + (x - x0) / (x1 - x0) * (_W - _LEFT - _PAD)

    def py(y: float) -> float:
        return _H - _PAD + (y - y0) / (y1 - y0) * (2 * _PAD - _H)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" role="img" '
        'aria-label="loss per step, original and migrated">',
        f'<line x1="{_LEFT}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#333"/>',
        f'<line x1="{_LEFT}" y1="{_PAD}" x2="{_LEFT}" y2="{_H - _PAD}" stroke="#333"/>',
        f'<text x="{_W / 2}" y="{_H - 8}" text-anchor="middle" font-size="12">optimizer step</text>',
        f'<text x="12" y="{_PAD - 12}" font-size="12">loss</text>',
    ]
    for y in (y0, (y0 + y1) / 2, y1):
        parts.append(
            f'<text x="{_LEFT - 4}" y="{py(y) + 4:.1f}" text-anchor="end" font-size="10">{y:.6g}</text>'
        )
    for x in sorted(set(xs)):
        parts.append(
            f'<text x="{px(x):.1f}" y="{_H - _PAD + 14}" text-anchor="middle" font-size="10">{x}</text>'
        )
    dash = {"original": "", "migrated": ' stroke-dasharray="6 4"'}
    for i, (side, s) in enumerate(series.items()):
        if not s:
            continue
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
        c = _COLORS[side]
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash[side]} points="{path}"/>')
        for x, y in s:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>')
        parts.append(
            f'<text x="{_W - _PAD - 90}" y="{_PAD + 14 * i}" font-size="12" fill="{c}">— {side}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def layer_chart(layers: list[dict[str, Any]]) -> str:
    """Horizontal bars: log10 of each differing record's relative deviation."""
    if not layers:
        return "<p>Every layer is bit-identical at this step.</p>"
    rows = layers[:60]
    bar_h, label_w, w = 16, 330, _W
    h = bar_h * len(rows) + 30
    devs = [r["deviation"] for r in rows]
    finite = [d for d in devs if isinstance(d, (int, float)) and math.isfinite(d) and d > 0]
    lo = math.floor(math.log10(min(finite))) if finite else -8
    hi = math.ceil(math.log10(max(finite))) if finite else 0
    hi = max(hi, lo + 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
        'aria-label="relative deviation per layer record">'
    ]
    for i, r in enumerate(rows):
        d = r["deviation"]
        y = 10 + i * bar_h
        if not isinstance(d, (int, float)) or not math.isfinite(d):
            frac = 1.0
        elif d <= 0:
            frac = 0.0
        else:
            frac = (math.log10(d) - lo) / (hi - lo)
        width = max(1.0, frac * (w - label_w - 60))
        color = "#d62728" if r["dir"] == "forward" else "#ff7f0e"
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end" font-size="10">'
            f"{_e(r['where'][:60])}</text>"
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 2}" width="{width:.1f}" height="{bar_h - 4}" fill="{color}"/>'
        )
        parts.append(f'<text x="{label_w + width + 4:.1f}" y="{y + 11}" font-size="10">{_e(_fmt(d))}</text>')
    parts.append(
        f'<text x="{label_w}" y="{h - 4}" font-size="10">log scale 1e{lo} … 1e{hi}; '
        "red: forward, orange: backward</text></svg>"
    )
    return "".join(parts)


def _table(headers: list[str], rows: list[list[Any]], bad: Optional[list[bool]] = None) -> str:
    out = ["<table><tr>", *(f"<th>{_e(h)}</th>" for h in headers), "</tr>"]
    for i, r in enumerate(rows):
        cls = ' class="bad"' if bad and bad[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{_e(_fmt(c))}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "".join(out)


def render(rep: dict[str, Any]) -> str:
    verdict = rep["verdict"]
    color = {"identical": "#2ca02c", "equivalent": "#2ca02c", "diverged": "#d62728"}.get(verdict, "#7f7f7f")
    body = [
        f"<h1>torchport verify: <span style='color:{color}'>{_e(verdict)}</span></h1>",
        f"<p>{_e(rep['reason'])}</p>",
        f"<p>target {_e(rep['target'])}, {_e(rep['steps_requested'])} steps, seed {_e(rep['seed'])}, "
        f"{_e(rep['level'])} level</p>",
    ]
    for side in ("original", "migrated"):
        s = rep.get(side)
        if s:
            body.append(
                f"<p><b>{side}</b>: <code>{_e(' '.join(s['entry']))}</code> in <code>{_e(s['root'])}</code> "
                f"({_e(s['mode'])}), exit {_e(s['exit_code'])}, {_e(s['steps'])} steps, "
                f"{s['seconds']:.1f} s</p>"
            )
    if rep.get("traceback"):
        body.append(f"<h2>Traceback</h2><pre>{_e(rep['traceback'])}</pre>")
    if rep.get("steps"):
        note = loss_scale_note(rep["steps"])
        body.append("<h2>Loss per step</h2>" + loss_chart(rep) + (f"<p>{_e(note)}.</p>" if note else ""))
    fd = rep.get("first_divergence")
    if fd:
        body.append(f"<h2>Per-layer deviation at step {_e(fd['step'])}</h2><p>{_e(fd['why'])}</p>")
        body.append(layer_chart(fd.get("layers") or []))
    if rep.get("steps"):
        body.append("<h2>Per step</h2>")
        body.append(
            _table(
                [
                    "step",
                    "loss original",
                    "loss migrated",
                    "grad norm original",
                    "grad norm migrated",
                    "parameters",
                ],
                [
                    [
                        r["step"],
                        shown_losses(r, "original"),
                        shown_losses(r, "migrated"),
                        r["grad_norm_original"],
                        r["grad_norm_migrated"],
                        "bit-identical" if r["params_identical"] else ", ".join(r["params_differing"][:5]),
                    ]
                    for r in rep["steps"]
                ],
                [not (r["loss_bits_equal"] and r["params_identical"]) for r in rep["steps"]],
            )
        )
    if fd and fd.get("layers"):
        body.append(f"<h2>Compare table, step {_e(fd['step'])}</h2>")
        body.append(
            _table(
                ["record", "relative deviation", "L2 norm original", "L2 norm migrated", "dtype", "device"],
                [
                    [
                        x["where"],
                        x["deviation"],
                        x["norm_original"],
                        x["norm_migrated"],
                        f"{x['dtype_original']} -> {x['dtype_migrated']}",
                        f"{x['device_original']} -> {x['device_migrated']}",
                    ]
                    for x in fd["layers"]
                ],
            )
        )
    notes = [
        ("expected difference", f"{e['where']}: {e['message']}")
        for e in rep.get("expected_differences") or []
    ]
    notes += [("not made deterministic", n) for n in rep.get("not_deterministic") or []]
    notes += [("fallback under rehearsal", f) for f in rep.get("fallback_ops") or []]
    if notes:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in notes) + "</ul>")
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}tr.bad td{background:#fde0e0}"
        "pre{background:#f4f4f4;padding:1em;overflow:auto}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>torchport verify: "
        f"{_e(verdict)}</title><style>{style}</style></head><body>" + "".join(body) + "</body></html>\n"
    )
