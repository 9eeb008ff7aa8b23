"""The check-ops report: one object, written as text, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

from torchport.check_ops.classify import DTYPE, FALLBACK, NATIVE, UNKNOWN, TargetReport

FORMATS = ("text", "json", "csv")
CSV_COLUMNS = (
    "target",
    "op",
    "status",
    "calls",
    "dtypes",
    "first_call_site",
    "cpu_time_us",
    "reason",
    "fix",
)


@dataclass
class Report:
    targets: list[TargetReport]
    calls: int  # operator calls recorded (leaf level)
    steps: int
    traced_wall_s: float
    torch_version: str  # the installed torch that ran the trace
    notes: list[str] = field(default_factory=list)
    phases: dict[str, int] = field(default_factory=dict)  # operator calls per phase (Trace.phases)
    steps_wall_s: float = 0.0  # traced wall time of the measured steps
    steps_wall_est_s: float = 0.0  # the same less the tracer's estimated cost: the host share's denominator

    def target(self, name: str) -> TargetReport:
        for t in self.targets:
            if t.target == name:
                return t
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": "torchport check-ops",
            "traced_with_torch": self.torch_version,
            "steps": self.steps,
            "calls_recorded": self.calls,
            "traced_wall_s": round(self.traced_wall_s, 6),
            "phases": self.phases,
            "measured_steps_wall_s": round(self.steps_wall_s, 6),
            "measured_steps_wall_untraced_estimate_s": round(self.steps_wall_est_s, 6),
            "notes": self.notes,
            "targets": [],
        }
        for t in self.targets:
            ops_native, calls_native = t.share(NATIVE)
            out["targets"].append(
                {
                    "target": t.target,
                    "torch_version": t.torch_version,
                    "exact_torch_version": t.exact_version,
                    "fallback_default": t.fallback_default,
                    "coverage": {
                        "distinct_ops": t.distinct_ops,
                        "op_calls": t.total_calls,
                        "native_ops_share": round(ops_native, 4),
                        "native_calls_share": round(calls_native, 4),
                        "counts": {
                            s: sum(1 for r in t.rows if r.status == s)
                            for s in (NATIVE, FALLBACK, DTYPE, UNKNOWN)
                        },
                    },
                    "host_time_share": round(t.host_share, 4),
                    "host_time_share_range": [round(x, 4) for x in t.host_share_range],
                    "advice": [
                        {"for": a.what, "api": a.api, "use": a.use, "source": a.source, "calls": a.calls}
                        | ({"first_call_site": a.site} if a.site else {})
                        for a in t.advice
                    ],
                    "ops": [
                        {
                            "op": r.op,
                            "status": r.status,
                            "calls": r.calls,
                            "dtypes": r.dtypes,
                            "first_call_site": r.site,
                            "cpu_time_us": round(r.kernel_us, 1),
                            "reason": r.reason,
                            "fix": r.fix,
                        }
                        for r in t.rows
                    ],
                    "notes": t.notes,
                    "sources": t.sources,
                }
            )
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for t in self.targets:
            for r in t.rows:
                w.writerow(
                    [
                        t.target,
                        r.op,
                        r.status,
                        r.calls,
                        " ".join(r.dtypes),
                        r.site,
                        f"{r.kernel_us:.1f}",
                        r.reason,
                        r.fix,
                    ]
                )
        return buf.getvalue()

    def to_text(self, show_native: bool = False) -> str:
        span = f"{self.steps} step(s)" if self.steps else "the whole run (no optimizer step)"
        lines = [
            f"torchport check-ops: {self.calls} operator calls recorded over {span} "
            f"(torch {self.torch_version}, traced on the CPU)"
        ]
        if self.phases:
            p = self.phases
            lines.append(
                f"measured steps: {p.get('steps', 0)} calls from the first forward to the end of the last "
                f"optimizer step, {self.steps_wall_est_s * 1e3:.1f} ms without the tracer's estimated cost "
                f"({self.steps_wall_s * 1e3:.1f} ms traced); setup before: {p.get('setup', 0)} calls, "
                f"after: {p.get('after', 0)} calls (in the coverage, not in the host share)"
            )
        for n in self.notes:
            lines.append(f"note: {n}")
        for t in self.targets:
            ops_native, calls_native = t.share(NATIVE)
            lines.append("")
            version = t.torch_version + ("" if t.exact_version else " (nearest available)")
            lines.append(f"== {t.target} (database for torch {version}) ==")
            lines.append(
                f"coverage: {ops_native:.0%} of {t.distinct_ops} distinct ops native, "
                f"{calls_native:.0%} of {t.total_calls} op calls native"
            )
            counts = {s: sum(1 for r in t.rows if r.status == s) for s in (FALLBACK, DTYPE, UNKNOWN)}
            lines.append(
                f"fallback: {counts[FALLBACK]}, unsupported dtype: {counts[DTYPE]}, "
                f"unknown: {counts[UNKNOWN]}"
            )
            lo, hi = t.host_share_range
            lines.append(
                f"estimated host share of step time: {lo:.1%} (fallback ops)"
                + (f" to {hi:.1%} (fallback + unknown ops)" if hi > lo else "")
            )
            for r in t.rows:
                if r.status == NATIVE and not show_native:
                    continue
                dt = ",".join(r.dtypes) or "-"
                lines.append(f"  {r.status:<17} {r.op}  x{r.calls}  [{dt}]  at {r.site or '?'}")
                lines.append(f"      why: {r.reason}")
                if r.fix:
                    lines.append(f"      fix: {r.fix}")
            for a in t.advice:
                where = f" at {a.site}" if a.site else ""
                lines.append(
                    f"  advice: {a.what} x{a.calls}{where}: {a.api} -> {a.use} "
                    f"(fused alternative, {a.source.rsplit('/', 1)[-1]})"
                )
            for n in t.notes:
                lines.append(f"  note: {n}")
        return "\n".join(lines) + "\n"

    def render(self, fmt: str) -> str:
        if fmt == "json":
            return self.to_json()
        if fmt == "csv":
            return self.to_csv()
        if fmt == "text":
            return self.to_text()
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
