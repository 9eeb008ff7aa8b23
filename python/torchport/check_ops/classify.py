"""Classify recorded operator calls per target against the op databases.

For each recorded call and each target, from the outside in:
1. the outermost enclosing operator the target implements natively gets the credit (vendors implement
   composites such as `matmul`, `lstm.input` or `group_norm` directly, so their decomposition never runs);
2. otherwise the call's own operator: native if listed; always-fallback if the target's list says so;
   a CPU-specific kernel (mkldnn_*, *_for_cpu) is judged by its device equivalent on the target;
   a generic composite kernel (CompositeImplicit/ExplicitAutograd without a CPU kernel of its own) is
   judged by the operators it called; otherwise it is missing: a fallback where the target's lists are
   complete, "unknown" where they are not;
3. a unit that touches a dtype the target lacks (float64 on npu and mps) is flagged whatever its kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Optional

import torch

from torchport.check_ops._trace import Call, Node, Trace
from torchport.check_ops.opdb import TargetDb
from torchport.targets import get_target

NATIVE, FALLBACK, DTYPE, UNKNOWN = "native", "fallback", "unsupported_dtype", "unknown"
STATUSES = (NATIVE, FALLBACK, DTYPE, UNKNOWN)

# CPU-specific kernels a CPU trace records, and the composite operator whose device path they stand for
# (pytorch/pytorch aten/src/ATen/native/RNN.cpp, Convolution.cpp, transformers/attention.cpp).
CPU_PATH: dict[str, str] = {
    "mkldnn_rnn_layer": "lstm.input",
    "mkldnn_rnn_layer_backward": "lstm.input",
    "mkldnn_convolution": "convolution",
    "_nnpack_spatial_convolution": "convolution",
    "_slow_conv2d_forward": "convolution",
    "_slow_conv2d_backward.output_mask": "convolution_backward",
    "mkldnn_convolution_backward": "convolution_backward",
    "_scaled_dot_product_flash_attention_for_cpu": "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "scaled_dot_product_attention",
    "_fused_sdp_choice": "scaled_dot_product_attention",
}
# What each of those composites runs on a device, whichever the target lists (same sources; copy_ is a
# CompositeExplicitAutograd kernel that calls _copy_from for a non-CPU tensor, aten/src/ATen/native/Copy.cpp).
DEVICE_EQUIV: dict[str, tuple[str, ...]] = {
    "copy_": ("_copy_from",),
    "lstm.input": ("_lstm_mps", "_thnn_fused_lstm_cell", "_cudnn_rnn"),
    "convolution": ("convolution_overrideable", "_convolution", "_mps_convolution"),
    "convolution_backward": (
        "convolution_backward_overrideable",
        "convolution_backward",
        "mps_convolution_backward",
    ),
    "scaled_dot_product_attention": (
        "_scaled_dot_product_fused_attention_overrideable",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_attention_math_for_mps",
        "_scaled_dot_product_attention_flash_musa",
    ),
}


@dataclass
class OpRow:
    op: str  # "aten::addmm"
    status: str
    calls: int = 0
    dtypes: list[str] = field(default_factory=list)
    site: str = ""  # "file:line" of the first call
    kernel_us: float = 0.0
    reason: str = ""
    fix: str = ""


@dataclass
class TargetReport:
    target: str
    torch_version: str
    exact_version: bool
    rows: list[OpRow]
    fallback_default: str
    notes: list[str]
    sources: list[dict[str, str]]
    kernel_us_total: float

    def _count(self, pred: object) -> tuple[int, int]:
        ops = sum(1 for r in self.rows if pred(r))  # type: ignore[operator]
        calls = sum(r.calls for r in self.rows if pred(r))  # type: ignore[operator]
        return ops, calls

    @property
    def distinct_ops(self) -> int:
        return len(self.rows)

    @property
    def total_calls(self) -> int:
        return sum(r.calls for r in self.rows)

    def share(self, status: str) -> tuple[float, float]:
        """(share of distinct ops, share of op calls) with this status."""
        ops, calls = self._count(lambda r: r.status == status)
        return (ops / max(1, self.distinct_ops), calls / max(1, self.total_calls))

    @property
    def host_share(self) -> float:
        """CPU time of the fallback units over the CPU time of every recorded op (measured on this CPU)."""
        us = sum(r.kernel_us for r in self.rows if r.status == FALLBACK)
        return us / self.kernel_us_total if self.kernel_us_total > 0 else 0.0


def base(op: str) -> str:
    """'aten::add.Tensor' -> 'add.Tensor'; other namespaces keep theirs ('torchvision::nms')."""
    return op[len("aten::") :] if op.startswith("aten::") else op


@cache
def composite_kind(op: str) -> Optional[str]:
    """'implicit'/'explicit' when the running torch implements `op` generically (no CPU kernel of its
    own), 'kernel' when it needs a backend kernel, None when the dispatcher does not know it."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        if has(op, "CompositeImplicitAutograd"):
            return "implicit"
        if has(op, "CPU"):
            return "kernel"
        if has(op, "CompositeExplicitAutograd") or has(op, "CompositeExplicitAutogradNonFunctional"):
            return "explicit"
        return "kernel"
    except RuntimeError:
        return None


class Classifier:
    def __init__(self, db: TargetDb) -> None:
        self.db = db
        tgt = get_target(db.target)
        self.no_dtypes: frozenset[str] = frozenset() if tgt.float64 else frozenset({"float64", "complex128"})
        self.files = " or ".join(s["file"].rsplit("/", 1)[-1] for s in db.sources)

    def _listed(self, name: str) -> bool:
        return self.db.is_native(name)

    def native_via(self, name: str) -> Optional[str]:
        """Why `name` (a base name) is native on the target, or None."""
        if self._listed(name):
            return f"listed in {self.db.source_of(name).rsplit('/', 1)[-1]} (torch {self.db.torch_version})"
        d = self.db.delegate_of(name)
        if d:
            return f"structured: runs through {d}, listed in {self.db.source_of(d).rsplit('/', 1)[-1]}"
        for eq in DEVICE_EQUIV.get(name, ()):
            if self._listed(eq):
                return f"runs as {eq} on {self.db.target} ({self.db.source_of(eq).rsplit('/', 1)[-1]})"
        return None

    def classify_op(self, op: str, inner: list[Node]) -> list[tuple[str, str, str, float]]:
        """Units (op, status, reason, us) for one operator call that no enclosing op covers."""
        name = base(op)
        why = self.native_via(name)
        if why:
            return [(op, NATIVE, why, -1.0)]
        if name in self.db.always_fallback:
            return [(op, FALLBACK, f"always runs on the CPU ({self.db.sources[-1]['file']})", -1.0)]
        anchor = CPU_PATH.get(name)
        if anchor is not None:
            why = self.native_via(anchor)
            if why:
                return [(op, NATIVE, f"CPU kernel of {anchor}; {anchor}: {why}", -1.0)]
            return [
                (op, UNKNOWN, f"CPU-specific kernel of {anchor}; no {self.db.target} equivalent listed", -1.0)
            ]
        kind = composite_kind(op) if "::" in op else None
        if kind in ("implicit", "explicit"):
            if not inner:
                if name in DEVICE_EQUIV:  # generic, but it calls a device kernel the CPU path skips
                    needs = " or ".join(DEVICE_EQUIV[name])
                    if self.db.closed_world:
                        return [(op, FALLBACK, f"its device kernel {needs} is not listed", -1.0)]
                    return [(op, UNKNOWN, f"its device kernel {needs} is not in the partial list", -1.0)]
                return [(op, NATIVE, "generic composite kernel (no device kernel needed)", -1.0)]
            units: list[tuple[str, str, str, float]] = []
            for child in inner:
                for u in self.classify_op(child.op, child.children):
                    units.append((u[0], u[1], u[2], child.us if u[3] < 0 else u[3]))
            return units
        if kind is None or not op.startswith("aten::"):
            return [(op, UNKNOWN, "not an aten operator of this torch; no list covers it", -1.0)]
        if self.db.closed_world:
            return [(op, FALLBACK, f"not in {self.files} for torch {self.db.torch_version}", -1.0)]
        return [(op, UNKNOWN, f"not in the partial {self.db.target} list (see the note below)", -1.0)]

    def fix_for(self, status: str, op: str) -> str:
        if status == DTYPE:
            return "keep this tensor in float32: cast with .float() / dtype=torch.float32 before moving it"
        if status == FALLBACK:
            if self.db.fallback_default == "cpu":
                return f"runs on the host CPU; {self.db.fallback_env} {self.db.fallback_env_effect}".strip()
            if self.db.fallback_env:
                return f"raises on {self.db.target}; {self.db.fallback_env} {self.db.fallback_env_effect}"
            return f"raises on {self.db.target}: replace the op or keep this part on the CPU"
        return ""

    def run(self, trace: Trace) -> TargetReport:
        rows: dict[str, OpRow] = {}
        seen_events: set[int] = set()

        def add(op: str, status: str, reason: str, call: Call, us: float, count: bool) -> None:
            if self.no_dtypes.intersection(call.dtypes):
                bad = sorted(self.no_dtypes.intersection(call.dtypes))
                status, reason = DTYPE, f"{'/'.join(bad)} has no {self.db.target} support"
            key = f"{op}|{status}"
            row = rows.get(key)
            if row is None:
                site = f"{call.site[0]}:{call.site[1]}" if call.site else ""
                row = rows[key] = OpRow(op, status, site=site, reason=reason, fix=self.fix_for(status, op))
            if count:
                row.calls += 1
            row.kernel_us += us
            for d in call.dtypes:
                if d not in row.dtypes:
                    row.dtypes.append(d)

        for call in trace.calls:
            credited = False
            for eid, anc in call.ancestors:
                why = self.native_via(base(anc))
                if why:
                    add(anc, NATIVE, why, call, call.kernel_us, eid not in seen_events)
                    seen_events.add(eid)
                    credited = True
                    break
            if credited:
                continue
            for op, status, reason, us in self.classify_op(call.op, call.inner):
                add(op, status, reason, call, call.kernel_us if us < 0 else us, True)

        notes = [self.db.closed_world_note, self.db.fallback_note]
        if not self.db.exact_version:
            notes.insert(
                0, f"no {self.db.target} data for the torch version asked; used {self.db.torch_version}"
            )
        order = {s: i for i, s in enumerate((FALLBACK, DTYPE, UNKNOWN, NATIVE))}
        out = sorted(rows.values(), key=lambda r: (order[r.status], -r.calls, r.op))
        return TargetReport(
            target=self.db.target,
            torch_version=self.db.torch_version,
            exact_version=self.db.exact_version,
            rows=out,
            fallback_default=self.db.fallback_default,
            notes=[n for n in notes if n],
            sources=list(self.db.sources),
            kernel_us_total=sum(c.kernel_us for c in trace.calls),
        )
