"""Classify recorded operator calls per target against the op databases.

For each recorded call and each target, from the outside in:
1. the outermost enclosing operator the target implements natively gets the credit (vendors implement
   composites such as `matmul`, `lstm.input` or `group_norm` directly, so their decomposition never runs);
2. otherwise the call's own operator: native if listed; always-fallback if the target's list says so;
   a CPU-specific kernel (mkldnn_*, *_for_cpu) is judged by its device equivalent on the target;
   a generic composite kernel (CompositeImplicit/ExplicitAutograd without a CPU kernel of its own) is
   judged by the operators it called; an op with a CPU kernel and also a generic
   CompositeExplicitAutograd(NonFunctional) one runs the generic one on a target without a kernel of its own
   (the dispatcher prefers it to the backend's CPU fallback), so it is judged by what that generic kernel
   calls, probed on meta tensors during the trace; an aten op registered in C++ outside
   native_functions.yaml is "unknown" (no vendor YAML can list it); otherwise it is missing: a fallback where
   the target's lists are complete, "unknown" where they are not;
3. a unit that touches a dtype the target lacks (float64 on npu and mps) is flagged whatever its kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Optional

import torch

from torchport._versions import major_minor
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
    step_us: float = 0.0  # the part of kernel_us inside the measured steps (Trace.window)
    reason: str = ""
    fix: str = ""


@dataclass
class Advice:
    """A fused or affine API the vendor's migration tool advises for something the trace ran."""

    what: str  # "aten::linear" or "torch.optim.Adam"
    api: str  # the user-facing API the advice is about ("torch.nn.Linear")
    use: str  # what to use instead
    source: str  # upstream file the advice comes from
    calls: int = 0
    site: str = ""


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
    steps_us: float = 0.0  # wall time of the measured steps, less the tracer's own estimated cost
    advice: list[Advice] = field(default_factory=list)

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
    def host_share_range(self) -> tuple[float, float]:
        """Estimated share of step time on the host: (fallback ops only, fallback + unknown ops). Each is the
        CPU time those ops took inside the measured steps (first module forward to the end of the last
        optimizer step) over the wall time of those steps, less the tracer's estimated own cost."""
        if self.steps_us <= 0:
            return (0.0, 0.0)
        fb = sum(r.step_us for r in self.rows if r.status == FALLBACK)
        unk = sum(r.step_us for r in self.rows if r.status == UNKNOWN)
        return (min(1.0, fb / self.steps_us), min(1.0, (fb + unk) / self.steps_us))

    @property
    def host_share(self) -> float:
        """The low end of host_share_range: fallback ops only."""
        return self.host_share_range[0]


def base(op: str) -> str:
    """'aten::add.Tensor' -> 'add.Tensor'; other namespaces keep theirs ('torchvision::nms')."""
    return op[len("aten::") :] if op.startswith("aten::") else op


@cache
def composite_kind(op: str) -> Optional[str]:
    """'implicit'/'explicit' when the running torch implements `op` generically (no CPU kernel of its
    own); 'generic' when it has a CPU kernel and also a generic CompositeExplicitAutograd(NonFunctional)
    one, which any other device without a kernel of its own runs; 'kernel' when it needs a backend kernel;
    None when the dispatcher does not know it."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        if has(op, "CompositeImplicitAutograd"):
            return "implicit"
        generic = has(op, "CompositeExplicitAutograd") or has(op, "CompositeExplicitAutogradNonFunctional")
        if has(op, "CPU"):
            return "generic" if generic else "kernel"
        return "explicit" if generic else "kernel"
    except RuntimeError:
        return None


class Classifier:
    def __init__(self, db: TargetDb) -> None:
        self.db = db
        tgt = get_target(db.target)
        self.no_dtypes: frozenset[str] = frozenset() if tgt.float64 else frozenset({"float64", "complex128"})
        self.files = " or ".join(s["file"].rsplit("/", 1)[-1] for s in db.sources)
        self.generic: dict[str, Optional[tuple[str, ...]]] = {}  # from the trace being classified

    def _listed(self, name: str) -> bool:
        return self.db.is_native(name)

    def native_via(self, name: str) -> Optional[str]:
        """Why `name` (a base name) is native on the target, or None."""
        if self._listed(name):
            return f"listed in {self.db.source_of(name).rsplit('/', 1)[-1]} (torch {self.db.torch_version})"
        d = self.db.delegate_of(name)
        if d:
            return (
                f"not listed itself; structured: its generic kernel (the dispatcher's default for a device "
                f"without its own) runs {d}, listed in {self.db.source_of(d).rsplit('/', 1)[-1]}"
            )
        for eq in DEVICE_EQUIV.get(name, ()):
            if self._listed(eq):
                return f"runs as {eq} on {self.db.target} ({self.db.source_of(eq).rsplit('/', 1)[-1]})"
        return None

    def _generic(self, op: str, depth: int) -> tuple[str, str]:
        """(status, reason) of an op the target does not list but that has a generic kernel besides its CPU
        one: the target runs the generic kernel, so the verdict is that of the operators it calls."""
        inner = self.generic.get(op)
        if inner is None:
            return UNKNOWN, (
                f"not in {self.files}; a generic CompositeExplicitAutograd kernel would run instead of a CPU "
                "fallback, but what it calls could not be traced (it needs real data)"
            )
        verdicts = [(i, self._status_of(i, depth + 1)) for i in inner]
        missing = [i for i, st in verdicts if st == FALLBACK]
        unsure = [i for i, st in verdicts if st == UNKNOWN]
        shown = ", ".join(base(i) for i in inner) or "no other operator"
        if missing:
            return FALLBACK, (
                f"not in {self.files}; its generic kernel runs on {self.db.target} but calls "
                f"{', '.join(base(i) for i in missing)}, which is missing there"
            )
        if unsure:
            return UNKNOWN, (
                f"not in {self.files}; its generic kernel calls {', '.join(base(i) for i in unsure)}, "
                f"which the {self.db.target} lists cannot settle"
            )
        return NATIVE, f"native via composite: not listed, its generic kernel runs {shown}, all native"

    def _status_of(self, op: str, depth: int) -> str:
        """The status of an operator called by a generic kernel (no CPU trace of its own)."""
        if depth > 4:
            return UNKNOWN
        return self.classify_op(op, [], depth)[0][1] if "::" in op else UNKNOWN

    def classify_op(self, op: str, inner: list[Node], depth: int = 0) -> list[tuple[str, str, str, float]]:
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
        if kind == "generic":
            status, why = self._generic(op, depth)
            return [(op, status, why, -1.0)]
        if kind is None or not op.startswith("aten::"):
            return [(op, UNKNOWN, "not an aten operator of this torch; no list covers it", -1.0)]
        if self.db.aten_yaml and name not in self.db.aten_yaml:
            return [
                (
                    op,
                    UNKNOWN,
                    "registered in C++ outside native_functions.yaml: the vendor lists follow that YAML, so "
                    "they cannot say",
                    -1.0,
                )
            ]
        if self.db.closed_world:
            return [
                (
                    op,
                    FALLBACK,
                    f"not in {self.files} for torch {self.db.torch_version} (nor registered in C++ "
                    "outside them, as far as these lists can tell)",
                    -1.0,
                )
            ]
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

    def _advice(self, trace: Trace) -> list[Advice]:
        """Fused APIs the vendor's tool advises for operators (at any level) and optimizers the trace ran."""
        found: dict[str, Advice] = {}
        counted: set[int] = set()  # profiler events of enclosing ops already counted
        if self.db.fused_advice:
            for call in trace.calls:
                for eid, name in (*call.ancestors, (-1, call.op)):
                    a = self.db.fused_advice.get(base(name))
                    if a is None or eid in counted:
                        continue
                    if eid != -1:
                        counted.add(eid)
                    adv = found.get(name)
                    if adv is None:
                        site = f"{call.site[0]}:{call.site[1]}" if call.site else ""
                        adv = found[name] = Advice(name, a["api"], a["use"], a["source"], site=site)
                    adv.calls += 1
        out = list(found.values())
        for opt in trace.optimizers:
            a = self.db.optimizer_advice.get(opt)
            if a is not None:
                out.append(Advice(opt, a["api"], a["use"], a["source"], calls=trace.optimizer_steps))
        return out

    def _version_notes(self) -> list[str]:
        notes: list[str] = []
        if not self.db.exact_version:
            notes.append(
                f"no {self.db.target} data for the torch version asked; used {self.db.torch_version}"
            )
        installed = major_minor(torch.__version__)
        gen = self.db.generated_with_torch
        from_wheel = any(s["file"].startswith("torchgen/") for s in self.db.sources)
        if from_wheel and gen and major_minor(gen) != installed:
            notes.insert(
                0,
                f"the {self.db.target} list is the native_functions.yaml of torch {gen}, but torch "
                f"{torch.__version__} is installed: run tools/gen_opdb.py under this torch for its own list",
            )
        return notes

    def run(self, trace: Trace) -> TargetReport:
        rows: dict[str, OpRow] = {}
        seen_events: set[int] = set()
        self.generic = trace.generic
        first, end = trace.window

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
            if first <= call.seq < end:
                row.step_us += us
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

        advice = self._advice(trace)
        by_op = {a.what: a for a in advice}
        for r in rows.values():
            a = by_op.get(r.op)
            if a is not None:
                tip = f"fused alternative: {a.use} ({a.source.rsplit('/', 1)[-1]})"
                r.fix = f"{r.fix}; {tip}" if r.fix else tip
        notes = [*self._version_notes(), self.db.closed_world_note, self.db.fallback_note]
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
            steps_us=trace.steps_wall_est_s * 1e6,
            advice=advice,
        )
