"""Compare two probe dumps: align their records, compute metrics, flag rows, find the first divergence.

Alignment key: (module path without wrapper prefixes, direction, call index, in/out, slot).
Dump B (the reference) is indexed in memory (records only, a few hundred bytes each); dump A is
streamed in execution order. Full tensors are memory-mapped and compared in cache-sized chunks
with vectorised numpy, on a small thread pool (numpy releases the GIL).

Default thresholds are Ascend msprobe's (docs/probe.md lists them with their sources).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from torchport.probe.dump import Dump, DumpError, NpyStream, decode_float, normalize_name, open_dump

STATS = ("min", "max", "mean", "norm")
_CHUNK = 1 << 17  # elements: 512 KiB of float32 per buffer (measured best of 16K-512K on a 2-core EPYC)
_EPS = 1e-10


@dataclass
class Thresholds:
    """Row flags. Defaults are msprobe's documented rules (see docs/probe.md)."""

    # Full tensors, msprobe "Accuracy Reached or Not" = No: (cosine < cosine and max abs err >
    # atol) or cosine < cosine_fail or max abs err > atol_fail, or NaN/Inf.
    cosine: float = 0.99
    atol: float = 0.001
    cosine_fail: float = 0.9
    atol_fail: float = 1.0
    # Statistics mode, msprobe highlight rule: relative difference of the max above 0.5 (we
    # also apply it to the L2 norm).
    rtol: float = 0.5
    # "Error introduced here" rules (msprobe highlights comparing a call's output with its inputs).
    rtol_warn_out: float = 0.1
    rtol_warn_in: float = 0.01
    ratio_in_red: float = 0.9
    ratio_out_red: float = 0.6
    ratio_drop: float = 0.1
    cosine_drop: float = 0.1


@dataclass
class Row:
    key: tuple[str, str, int, str, int]
    a: dict[str, Any]
    b: dict[str, Any]
    rel: dict[str, Optional[float]] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    identical: bool = False
    status: str = "pass"
    reasons: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.a["name"])

    @property
    def direction(self) -> str:
        return str(self.a["dir"])

    def where(self) -> str:
        return describe(self.a)


@dataclass
class Result:
    a: Dump
    b: Dump
    thresholds: Thresholds
    rows: list[Row]
    only_a: list[dict[str, Any]]
    only_b: list[dict[str, Any]]
    full: bool
    first_nonfinite_a: Optional[dict[str, Any]]
    first_nonfinite_b: Optional[dict[str, Any]]
    # full-tensor mode: differing rows compared by statistics because a side has no saved tensor
    # (over the dump's size budget)
    rows_without_tensors: int = 0

    def counts(self) -> dict[str, int]:
        c = {"pass": 0, "warn": 0, "fail": 0}
        for r in self.rows:
            c[r.status] += 1
        return c

    def first_divergence(self, direction: str) -> Optional[Row]:
        """First flagged row of the activation (forward) or gradient (backward) flow; parameter
        gradients are reported apart (direction "param")."""
        return next((r for r in self._flow(direction) if r.status != "pass"), None)

    def first_difference(self, direction: str) -> Optional[Row]:
        """First row that is not bit-identical (rows without statistics, e.g. complex tensors,
        cannot tell and are skipped)."""
        return next(
            (
                r
                for r in self._flow(direction)
                if not r.identical and r.a.get("norm") is not None and r.b.get("norm") is not None
            ),
            None,
        )

    def _flow(self, direction: str) -> Iterator[Row]:
        for r in self.rows:
            is_param = r.a["io"] == "grad"
            if (direction == "param" and is_param) or (r.direction == direction and not is_param):
                yield r

    @property
    def diverged(self) -> bool:
        return any(r.status != "pass" for r in self.rows)


def io_label(direction: str, io: str) -> str:
    """Forward records are a call's inputs/outputs; backward records are the gradient flowing in
    (grad_output, w.r.t. the call's output) and out (grad_input, w.r.t. its input)."""
    if io == "grad":
        return "grad"  # a parameter's accumulated gradient
    if direction == "backward":
        return "grad_output" if io == "in" else "grad_input"
    return "input" if io == "in" else "output"


def describe(rec: dict[str, Any]) -> str:
    """`blocks.0.fc1 (Linear) forward call 0 output[0]`; ops show the module they ran in."""
    io = io_label(str(rec["dir"]), str(rec["io"]))
    if rec.get("type") == "op":
        where = f" in {rec['module']}" if rec.get("module") else ""
        if rec.get("node"):
            where += f" ({rec['node']})"
        what = f"{rec['name']}{where}"
    else:
        what = f"{rec['name'] or '<root>'} ({rec.get('type', '?')})"
    return f"{what} {rec['dir']} call {rec['call']} {io}[{rec['slot']}]"


def _key(rec: dict[str, Any], wrappers: Optional[frozenset[str]]) -> tuple[str, str, int, str, int]:
    return (
        normalize_name(str(rec["name"]), wrappers),
        str(rec["dir"]),
        int(rec["call"]),
        str(rec["io"]),
        int(rec["slot"]),
    )


def _nonfinite(rec: dict[str, Any]) -> bool:
    return bool(rec.get("nan") or rec.get("inf"))


def _check_same_model(a: Dump, b: Dump) -> None:
    if a.level != b.level:
        raise DumpError(
            f"{b.path}: recorded at {b.level} level but {a.path} at {a.level} level; "
            "record both with the same --level"
        )
    ma, mb = a.manifest.get("model") or {}, b.manifest.get("model") or {}
    sa, sb = ma.get("signature"), mb.get("signature")
    if not sa or not sb or sa == sb:
        return
    pa = {n: s for n, s in ma.get("parameters", [])}
    pb = {n: s for n, s in mb.get("parameters", [])}
    detail = ""
    for n, s in pa.items():
        if n not in pb:
            detail = f"parameter {n} {s} is only in {a.path}"
            break
        if pb[n] != s:
            detail = f"parameter {n} has shape {s} in {a.path} but {pb[n]} in {b.path}"
            break
    else:
        extra = [n for n in pb if n not in pa]
        if extra:
            detail = f"parameter {extra[0]} {pb[extra[0]]} is only in {b.path}"
    ta = ",".join(r["type"] for r in ma.get("roots", []))
    tb = ",".join(r["type"] for r in mb.get("roots", []))
    raise DumpError(
        f"{b.path}: dumps come from different models ({ta} with {len(pa)} parameters vs {tb} with "
        f"{len(pb)}): {detail or 'parameter lists differ'}; pass --force to compare anyway"
    )


def _rel(a: Any, b: Any) -> Optional[float]:
    x, y = decode_float(a), decode_float(b)
    if x is None or y is None:
        return None
    if not (math.isfinite(x) and math.isfinite(y)):
        return 0.0 if x == y or (math.isnan(x) and math.isnan(y)) else math.inf
    return abs(x - y) / max(abs(y), _EPS)


def _as_float(chunk: np.ndarray, bf16: bool) -> np.ndarray:
    if bf16:
        return (chunk.astype(np.uint32) << 16).view(np.float32)
    if chunk.dtype in (np.float32, np.float64):
        return chunk
    return chunk.astype(np.float32)


def _chunks(src: np.ndarray | NpyStream, chunk: int) -> Iterator[np.ndarray]:
    if isinstance(src, NpyStream):
        yield from src.chunks(chunk)
        return
    flat = src.reshape(-1)
    for i in range(0, flat.size, chunk):
        yield np.asarray(flat[i : i + chunk])


def tensor_metrics(
    a: np.ndarray | NpyStream,
    b: np.ndarray | NpyStream,
    a_bf16: bool = False,
    b_bf16: bool = False,
    chunk: int = _CHUNK,
    norms: Optional[tuple[float, float]] = None,
) -> dict[str, float]:
    """Cosine, max abs/rel error, Euclidean distance and the share of elements whose relative error
    (|a - b| / |b|) exceeds 0.1% and 0.5%, streaming over flat arrays in chunks that stay in cache.

    Per chunk: d = a - b, ‖d‖² (BLAS dot), |d| in place, max |d|, r = |d| / b and |r| in place, max
    r, and two compare-and-count passes; every temporary is a preallocated chunk buffer. A chunk
    with max |d| = 0 is identical and stops there. The cosine comes from |a|², |b|² and |d|²
    (a·b = (|a|² + |b|² - |a - b|²) / 2); the dump's records already hold |a| and |b| (`norms`).
    """
    n = a.size
    aa = bb = dd = 0.0
    max_abs = max_rel = 0.0
    c1 = c5 = 0
    bufs: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
    mask = np.empty(min(chunk, max(n, 1)), dtype=np.bool_)
    if b.size != n:
        raise ValueError(f"sizes differ: {n} vs {b.size}")
    dot, absolute, divide, greater = np.dot, np.abs, np.divide, np.greater
    count, fmax = np.count_nonzero, np.fmax.reduce
    # 0/0 -> nan (equal zeros, ignored by fmax), x/0 -> inf
    with np.errstate(divide="ignore", invalid="ignore"):
        for xa, yb in zip(_chunks(a, chunk), _chunks(b, chunk)):
            x = _as_float(xa, a_bf16)
            y = _as_float(yb, b_bf16)
            if x.dtype != y.dtype:
                x, y = x.astype(np.float64), y.astype(np.float64)
            bb_ = bufs.get(x.dtype)
            if bb_ is None:
                bb_ = bufs[x.dtype] = (np.empty(mask.size, x.dtype), np.empty(mask.size, x.dtype))
            k = x.size
            d, r = bb_[0][:k], bb_[1][:k]
            np.subtract(x, y, out=d)
            dd += float(dot(d, d))
            if norms is None:
                aa += float(dot(x, x))
                bb += float(dot(y, y))
            absolute(d, out=d)
            m_abs = float(d.max())
            if m_abs > max_abs:
                max_abs = m_abs
            if m_abs == 0.0:  # identical chunk: every relative error is 0 (or 0/0, ignored)
                continue
            divide(d, y, out=r)
            absolute(r, out=r)
            m_rel = float(fmax(r))
            if m_rel > max_rel:
                max_rel = m_rel
            m = mask[:k]
            greater(r, 1e-3, out=m)
            k1 = int(count(m))
            if k1:
                c1 += k1
                greater(r, 5e-3, out=m)
                c5 += int(count(m))
    if norms is not None:
        aa, bb = norms[0] ** 2, norms[1] ** 2
    if aa == 0.0 and bb == 0.0:
        cos = 1.0
    elif aa == 0.0 or bb == 0.0:
        cos = 0.0
    else:
        cos = max(-1.0, min(1.0, (aa + bb - dd) / (2.0 * math.sqrt(aa * bb))))
    if math.isnan(max_rel):
        max_rel = 0.0
    return {
        "cosine": cos,
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "euclidean": math.sqrt(dd),
        "share_rel_gt_0.1pct": c1 / n if n else 0.0,
        "share_rel_gt_0.5pct": c5 / n if n else 0.0,
    }


def _pair_metrics(job: tuple[Path, Path, dict[str, Any], dict[str, Any]]) -> dict[str, float]:
    pa, pb, ra, rb = job
    sa = NpyStream(pa, ra)
    try:
        sb = NpyStream(pb, rb)
    except DumpError:
        sa.close()
        raise
    na, nb = decode_float(ra.get("norm")), decode_float(rb.get("norm"))
    finite = na is not None and nb is not None and math.isfinite(na) and math.isfinite(nb)
    norms = (na, nb) if finite else None
    return tensor_metrics(
        sa,
        sb,
        ra.get("stored_as") == "bfloat16-bits",
        rb.get("stored_as") == "bfloat16-bits",
        norms=norms,
    )


def _flag_single(row: Row, th: Thresholds, full: bool) -> None:
    a, b = row.a, row.b
    if list(a.get("shape", [])) != list(b.get("shape", [])):
        row.status, row.reasons = "fail", [f"shape {a.get('shape')} vs {b.get('shape')}"]
        return
    bad = [side for side, rec in (("A", a), ("B", b)) if _nonfinite(rec)]
    if bad:
        row.status = "fail"
        row.reasons.append("NaN/Inf in " + " and ".join(bad))
        return
    if row.identical:
        return
    m = row.metrics
    if full and m:
        cos, mae = m["cosine"], m["max_abs_err"]
        if cos < th.cosine_fail:
            row.reasons.append(f"cosine {cos:.4f} < {th.cosine_fail}")
        elif cos < th.cosine and mae > th.atol:
            row.reasons.append(f"cosine {cos:.4f} < {th.cosine} and max abs err {mae:.3g} > {th.atol}")
        if mae > th.atol_fail:
            row.reasons.append(f"max abs err {mae:.3g} > {th.atol_fail}")
    else:
        for s in ("max", "norm"):
            r = row.rel.get(s)
            if r is not None and r > th.rtol:
                row.reasons.append(f"relative diff of {s} {r:.3g} > {th.rtol}")
    if row.reasons:
        row.status = "fail"


def _stat_rel(row: Row) -> Optional[float]:
    vals = [v for v in (row.rel.get("max"), row.rel.get("norm")) if v is not None]
    return max(vals) if vals else None


def _flag_introduced(out: Row, ins: list[Row], th: Thresholds, full: bool) -> None:
    """msprobe's highlight rules: error that appears at this call's output but not at its inputs."""
    if out.status != "pass" or out.identical or not ins:
        return
    if full and out.metrics and all(r.metrics or r.identical for r in ins):

        def ratio(r: Row) -> float:
            return 1.0 if r.identical else 1.0 - r.metrics["share_rel_gt_0.1pct"]

        def cos(r: Row) -> float:
            return 1.0 if r.identical else r.metrics["cosine"]

        ro, co = ratio(out), cos(out)
        rin = max(ratio(r) for r in ins)
        cin = max(cos(r) for r in ins)
        if rin > th.ratio_in_red and ro < th.ratio_out_red:
            out.reasons.append(
                f"error introduced here: share within 0.1% is {rin:.2f} at the input, {ro:.2f} at the output"
            )
        elif rin - ro > th.ratio_drop:
            out.reasons.append(f"error grows here: share within 0.1% drops {rin:.2f} -> {ro:.2f}")
        if cin - co > th.cosine_drop:
            out.reasons.append(f"cosine drops {cin:.4f} -> {co:.4f} here")
    elif not full:
        ro_s = _stat_rel(out)
        rins = [_stat_rel(r) if not r.identical else 0.0 for r in ins]
        if (
            ro_s is not None
            and ro_s > th.rtol_warn_out
            and all(x is not None and x < th.rtol_warn_in for x in rins)
        ):
            out.reasons.append(
                f"error introduced here: relative diff {ro_s:.3g} at the output, "
                f"below {th.rtol_warn_in} at the input"
            )
    if out.reasons:
        out.status = "warn"


def compare_dumps(
    path_a: os.PathLike | str,
    path_b: os.PathLike | str,
    thresholds: Optional[Thresholds] = None,
    *,
    force: bool = False,
    workers: int = 2,
    full: Optional[bool] = None,
    progress: bool = False,
) -> Result:
    """Compare dump A (the run under test) against dump B (the reference).

    ``full``: use the saved tensors when both dumps have them (default), or only statistics.
    ``progress``: a tqdm progress bar on stderr over the tensor bytes compared.
    Raises DumpError for unreadable, truncated or mismatched dumps.
    """
    th = thresholds or Thresholds()
    a, b = open_dump(path_a), open_dump(path_b)
    if not force:
        _check_same_model(a, b)
    index: dict[tuple[str, str, int, str, int], dict[str, Any]] = {}
    first_nf_b: Optional[dict[str, Any]] = None
    wa, wb = a.wrappers, b.wrappers
    for rec in b.records():
        index.setdefault(_key(rec, wb), rec)
        if first_nf_b is None and _nonfinite(rec):
            first_nf_b = rec
    rows: list[Row] = []
    only_a: list[dict[str, Any]] = []
    first_nf_a: Optional[dict[str, Any]] = None
    for rec in a.records():
        if first_nf_a is None and _nonfinite(rec):
            first_nf_a = rec
        k = _key(rec, wa)
        other = index.pop(k, None)
        if other is None:
            only_a.append(rec)
        else:
            rows.append(Row(k, rec, other))
    only_b = sorted(index.values(), key=lambda r: int(r.get("seq", 0)))
    total = max(a.count, b.count)
    if total and len(rows) < 0.5 * total and not force:
        ex = only_a[0] if only_a else only_b[0]
        raise DumpError(
            f"{b.path}: only {len(rows)} of {total} records align with {a.path} (e.g. {ex['name']} "
            f"{ex['dir']} call {ex['call']} has no partner); the dumps come from different models or "
            f"programs; pass --force to compare anyway"
        )
    use_full = (full is not False) and any(r.a.get("tensor") and r.b.get("tensor") for r in rows)
    without = _compute(rows, a, b, use_full, workers, progress)
    groups: dict[tuple[str, str, int], list[Row]] = {}
    for row in rows:
        _flag_single(row, th, use_full)
        g = (row.key[0], row.key[1], row.key[2])
        if row.a["io"] == "in":
            groups.setdefault(g, []).append(row)
        else:
            _flag_introduced(row, groups.get(g, []), th, use_full)
    return Result(a, b, th, rows, only_a, only_b, use_full, first_nf_a, first_nf_b, without)


def _compute(rows: list[Row], a: Dump, b: Dump, use_full: bool, workers: int, progress: bool = False) -> int:
    """Statistics differences for every row, tensor metrics where both tensors were saved;
    returns how many rows needed tensors that were not saved."""
    without = 0
    jobs: list[tuple[Row, tuple[Path, Path, dict[str, Any], dict[str, Any]]]] = []
    for row in rows:
        ra, rb = row.a, row.b
        row.rel = {s: _rel(ra.get(s), rb.get(s)) for s in STATS}
        ha, hb = ra.get("hash"), rb.get("hash")
        if ha is not None and ha == hb:
            row.identical = True
        elif ha is None or hb is None:  # no hash (accelerator statistics): equal statistics
            row.identical = (
                ra.get("norm") is not None
                and all(ra.get(s) == rb.get(s) for s in STATS)
                and ra.get("shape") == rb.get("shape")
            )
        if row.identical or not use_full or _nonfinite(ra) or _nonfinite(rb):
            continue
        if ra.get("shape") != rb.get("shape"):
            continue
        pa, pb = a.tensor_path(ra), b.tensor_path(rb)
        if pa is not None and pb is not None:
            jobs.append((row, (pa, pb, ra, rb)))
        else:
            without += 1
    if not jobs:
        return without
    bar = None
    if progress:
        # tqdm: one small pure-Python package that draws on a terminal only (see docs/probe.md)
        from tqdm import tqdm

        sizes = [_file_size(pa) + _file_size(pb) for _, (pa, pb, _, _) in jobs]
        bar = tqdm(total=sum(sizes), unit="B", unit_scale=True, desc="torchport compare", leave=False)
    else:
        sizes = [0] * len(jobs)
    try:
        if workers > 1 and len(jobs) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = pool.map(_pair_metrics, [j for _, j in jobs])
                for (row, _), m, size in zip(jobs, results, sizes):
                    row.metrics = m
                    if bar is not None:
                        bar.update(size)
        else:
            for (row, job), size in zip(jobs, sizes):
                row.metrics = _pair_metrics(job)
                if bar is not None:
                    bar.update(size)
    finally:
        if bar is not None:
            bar.close()
    return without


def _file_size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def iter_csv_fields(rows: Iterable[Row]) -> Iterator[dict[str, Any]]:
    """Rows flattened for the CSV/HTML writers."""
    for r in rows:
        d: dict[str, Any] = {
            "seq": r.a.get("seq"),
            "direction": r.direction,
            "name": r.name,
            "type": r.a.get("type"),
            "call": r.a["call"],
            "io": r.a["io"],
            "slot": r.a["slot"],
            "step": r.a.get("step"),
            "status": r.status,
            "identical": r.identical,
            "shape_a": r.a.get("shape"),
            "shape_b": r.b.get("shape"),
            "dtype_a": r.a.get("dtype"),
            "dtype_b": r.b.get("dtype"),
        }
        for s in STATS:
            d[f"{s}_a"] = r.a.get(s)
            d[f"{s}_b"] = r.b.get(s)
        for s in STATS:
            d[f"rel_{s}"] = r.rel.get(s)
        for m in (
            "cosine",
            "max_abs_err",
            "max_rel_err",
            "euclidean",
            "share_rel_gt_0.1pct",
            "share_rel_gt_0.5pct",
        ):
            d[m] = r.metrics.get(m)
        for side, rec in (("a", r.a), ("b", r.b)):
            d[f"nan_{side}"] = rec.get("nan")
            d[f"inf_{side}"] = rec.get("inf")
        d["reason"] = "; ".join(r.reasons)
        yield d
