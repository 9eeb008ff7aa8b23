"""The summary printed when a rehearsed program exits, and the same as JSON (--report)."""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from typing import Any, Optional

from torchport.rehearse import session as state

FORMAT = 1


def _rank() -> Optional[int]:
    r = os.environ.get("RANK")
    return int(r) if r is not None and r.isdigit() else None


def qualified(name: str) -> str:
    """An operator's name as the user knows it: `aten::mode`, and torch_npu's own `npu::npu_rms_norm` (the
    device reports aten operators without their namespace)."""
    return name if "::" in name else f"aten::{name}"


def _row(name: str, calls: int, reason: str, sites: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"op": qualified(name), "calls": int(calls), "reason": reason}
    if sites:
        row["sites"] = [
            {"site": k, "calls": int(v)} for k, v in sorted(dict(sites).items(), key=lambda kv: -kv[1])
        ]
    return row


def collect() -> dict[str, Any]:
    sess = state.session()
    assert sess is not None
    ext = sess.ext
    wall = time.perf_counter() - sess.started
    groups: dict[str, list[dict[str, Any]]] = {name: [] for name in state.STATUS_NAMES}
    op_ns = 0
    fb_ns = 0
    for name, status, reason, calls, ns, sites, failed, failure, failed_sites in ext.op_stats():
        if failed:
            # The device could not run these calls (NotImplementedError, e.g. no CPU kernel to run the op
            # with): refused, whatever the lists say, so that the summary does not pass them over.
            row = _row(name, failed, reason, failed_sites)
            row["error"] = failure
            groups["refused"].append(row)
        if calls == 0 and not sites:
            continue
        st = state.STATUS_NAMES[status]
        op_ns += ns
        if st == "fallback":
            fb_ns += ns
        groups[st].append(_row(name, calls, reason, sites))
    for rows in groups.values():
        rows.sort(key=lambda r: (-r["calls"], r["op"]))
    violations = [
        {"op": qualified(op), "dtype": dt, "site": site, "calls": int(n)}
        for op, dt, site, n in ext.dtype_violations()
    ]
    memory = []
    for i in range(sess.devices):
        s = dict(ext.memory_stats(i))
        memory.append(
            {
                "device": f"{sess.target}:{i}",
                "peak_allocated_bytes": s["allocated_bytes.all.peak"],
                "peak_reserved_bytes": s["reserved_bytes.all.peak"],
                "allocated_bytes_at_exit": s["allocated_bytes.all.current"],
                "capacity_bytes": sess.memory if sess.memory >= 0 else None,
                "ooms": s["num_ooms"],
            }
        )
    return {
        "format": FORMAT,
        "tool": "torchport rehearse",
        "target": sess.target,
        "devices": sess.devices,
        "strict": sess.strict,
        "rank": _rank(),
        "counts": {k: {"ops": len(v), "calls": sum(r["calls"] for r in v)} for k, v in groups.items()},
        "ops": groups,
        "dtype_violations": violations,
        "memory": memory,
        "notes": list(sess.notes),
        "listed_kernels": list(sess.listed_kernels),
        "time": {
            "wall_s": round(wall, 6),
            "device_op_s": round(op_ns / 1e9, 6),
            "fallback_op_s": round(fb_ns / 1e9, 6),
            "fallback_share_of_wall": round(fb_ns / 1e9 / wall, 6) if wall > 0 else 0.0,
        },
    }


def _mib(b: Optional[int]) -> str:
    return "unlimited" if b is None else f"{b / 2**20:.1f} MiB"


def format_text(rep: dict[str, Any], max_sites: int = 3) -> str:
    who = f"[rank {rep['rank']}] " if rep.get("rank") is not None else ""
    c = rep["counts"]
    lines = [
        f"{who}torchport rehearse --target {rep['target']}: "
        f"{c['native']['ops']} ops native ({c['native']['calls']} calls), "
        f"{c['fallback']['ops']} fallen back ({c['fallback']['calls']} calls), "
        f"{c['refused']['ops'] + len(rep['dtype_violations'])} refused, "
        f"{c['unknown']['ops']} not settled by the lists ({c['unknown']['calls']} calls)"
    ]
    for st, title in (("refused", "refused"), ("fallback", "fallen back"), ("unknown", "not settled")):
        for r in rep["ops"][st]:
            sites = ", ".join(f"{s['site']} ({s['calls']}x)" for s in r.get("sites", [])[:max_sites])
            more = len(r.get("sites", [])) - max_sites
            if more > 0:
                sites += f", +{more} more"
            error = f": {r['error']}" if r.get("error") else ""
            lines.append(f"{who}  {title}: {r['op']} x{r['calls']} at {sites or '?'}{error}")
    for v in rep["dtype_violations"]:
        lines.append(f"{who}  refused dtype: {v['op']} on {v['dtype']} x{v['calls']} at {v['site'] or '?'}")
    for m in rep["memory"]:
        lines.append(
            f"{who}  memory {m['device']}: peak {_mib(m['peak_allocated_bytes'])} allocated, "
            f"{_mib(m['peak_reserved_bytes'])} reserved, capacity {_mib(m['capacity_bytes'])}"
            + (f", {m['ooms']} out-of-memory error(s)" if m["ooms"] else "")
        )
    for note in rep.get("notes", []):
        lines.append(f"{who}  note: {note}")
    t = rep["time"]
    lines.append(
        f"{who}  fallback ops took {t['fallback_op_s']:.3f} s of {t['wall_s']:.3f} s wall "
        f"({100 * t['fallback_share_of_wall']:.1f}%)"
    )
    return "\n".join(lines)


def report_path(path: str) -> str:
    r = _rank()
    if r is None or r == 0:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}.rank{r}{ext or '.json'}"


def write_report(rep: dict[str, Any], path: str) -> None:
    target = report_path(path)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(rep, f, indent=1)
        f.write("\n")
    os.replace(tmp, target)


_done = False


def finish() -> None:
    """Print the summary (and write --report) once."""
    global _done
    sess = state.session()
    if _done or sess is None:
        return
    _done = True
    rep = collect()
    sys.stdout.flush()
    print(format_text(rep), file=sys.stderr, flush=True)
    if sess.report:
        write_report(rep, sess.report)


def install_exit_summary(child: bool = False) -> None:
    if not child:
        atexit.register(finish)
