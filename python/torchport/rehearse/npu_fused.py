"""Reference kernels of torch_npu's common fused operators under `torchport rehearse --target npu` (issue 31
§2, docs/rehearse.md "Fused operators").

torch_npu's own operators (`torch.ops.npu.*`) are kernels of Ascend's CANN. The rehearsal serves a few of them
with reference kernels written here from Ascend's documentation, computed with plain torch operators:
- npu_rms_norm, npu_rotary_mul, npu_swiglu, npu_fusion_attention, each with the backward operator the vendor's
  autograd calls (npu_rms_norm_backward, npu_rotary_mul_backward, npu_swiglu_backward,
  npu_fusion_attention_grad);
- the storage operators that the vendor's advised optimizers (torch_npu.optim.NpuFusedAdamW, NpuFusedAdam,
  NpuFusedSGD, ...) call to combine parameters into one buffer (torch_npu/utils/combine_tensors.py):
  get_npu_format, npu_format_cast, get_storage_size, npu_change_data_ptr. The optimizers' arithmetic itself is
  plain torch on the combined buffers.

The semantics, and where each comes from:
- the formulas: the docstrings of the torch-npu 2.13.0 wheel (`torch_npu/_op_plugin_docs.py`, Ascend's API
  reference of each operator);
- the schemas: ../shared/upstream/ascend-op-plugin/op_plugin_functions.yaml (custom section) and
  ../shared/upstream/ascend-torch_npu/npu_native_functions.yaml (the storage operators), the same as the
  wheel's `csrc/aten/npu_native_functions_by_codegen.yaml`;
- the shapes and dtypes of the outputs (rstd in float32, softmax_max / softmax_sum as [B, N, Sq, 8] in
  float32, an empty softmax_out): the wheel's meta kernels
  (`torch_npu/op_plugin/meta/_meta_registrations.py`).

The compute operators are registered for the CPU key: the rehearsal device's fallback judges, counts and times
them as any operator of the target and runs them on CPU views of the device memory, as it runs every CPU
kernel. A call with ordinary CPU tensors refuses, as torch_npu has no CPU kernel for them. Half-precision
inputs are computed in float32 and the result cast back. Every other `torch.ops.npu` operator keeps no kernel
and refuses, naming itself.
"""

from __future__ import annotations

import json
import math
import weakref
from typing import Any, Callable, Optional, Sequence

import torch

Tensor = torch.Tensor
DATA = "vendor/npu_fused_ops.json"  # under data/: the schemas of the served operators, with their source

# ACL storage formats whose memory is the plain contiguous layout (torch_npu/npu/_format.py, Format):
# NCHW 0, ND 2, NCDHW 30, NCL 47. The NPU's private formats (NC1HWC0, FRACTAL_NZ, ...) are not emulated.
ND = 2
BASE_FORMATS = (0, 2, 30, 47)
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")


def _acc(t: Tensor) -> torch.dtype:
    """The dtype a reference kernel computes in: float32 for half types, float64 kept (CPU gradchecks)."""
    return torch.promote_types(t.dtype, torch.float32)


def _refuse(op: str, what: str) -> NotImplementedError:
    return NotImplementedError(
        f"torch.ops.npu.{op}: {what} is not emulated by torchport rehearse (its reference kernel serves the "
        "documented dense case only; docs/rehearse.md, Fused operators)"
    )


# ---- npu_rms_norm ----
def _norm_dims(x: Tensor, gamma: Tensor) -> list[int]:
    return list(range(x.dim() - gamma.dim(), x.dim()))


def rms_norm(x: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> tuple[Tensor, Tensor]:
    """y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + epsilon) over the trailing dims gamma spans; rstd
    keeps x's leading dims and 1 for the normalised ones, in float32 (the meta kernel)."""
    acc = _acc(x)
    xf = x.to(acc)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=_norm_dims(x, gamma), keepdim=True) + epsilon)
    y = (xf * rstd * gamma.to(acc)).to(x.dtype)
    return y, rstd.to(torch.promote_types(acc, torch.float32))


def rms_norm_backward(dy: Tensor, x: Tensor, gamma: Tensor, rstd: Tensor) -> tuple[Tensor, Tensor]:
    """(dx, dgamma) of rms_norm; dgamma in float32 (the meta kernel)."""
    acc = _acc(x)
    dims = _norm_dims(x, gamma)
    xhat = x.to(acc) * rstd.to(acc)
    dxhat = dy.to(acc) * gamma.to(acc)
    dx = rstd.to(acc) * (dxhat - xhat * (dxhat * xhat).mean(dim=dims, keepdim=True))
    lead = list(range(x.dim() - gamma.dim()))
    dgamma = (dy.to(acc) * xhat).sum(dim=lead) if lead else dy.to(acc) * xhat
    return dx.to(x.dtype), dgamma.reshape(gamma.shape).to(torch.promote_types(acc, torch.float32))


# ---- npu_rotary_mul ----
def _rotate(x: Tensor, mode: str) -> Tensor:
    """half: cat(-x2, x1) of the two halves of the last dim; interleave: (-x[1], x[0]) of each pair."""
    if mode == "half":
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    if mode == "interleave":
        return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    raise ValueError(f"torch.ops.npu.npu_rotary_mul: rotary_mode must be 'half' or 'interleave': {mode!r}")


def _rotate_transposed(g: Tensor, mode: str) -> Tensor:
    """The adjoint of _rotate (it is linear): half: cat(g2, -g1); interleave: (g[1], -g[0]) of each pair."""
    if mode == "half":
        g1, g2 = torch.chunk(g, 2, dim=-1)
        return torch.cat((g2, -g1), dim=-1)
    return torch.stack((g[..., 1::2], -g[..., ::2]), dim=-1).flatten(-2)


def _sum_to(t: Tensor, shape: Sequence[int]) -> Tensor:
    """Sums a broadcast result back to `shape` (a broadcast operand's gradient)."""
    lead = t.dim() - len(shape)
    t = t.sum(dim=list(range(lead))) if lead > 0 else t
    dims = [i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1]
    return t.sum(dim=dims, keepdim=True) if dims else t


def rotary_mul(
    x: Tensor, r1: Tensor, r2: Tensor, rotary_mode: str = "half", rotate: Optional[Tensor] = None
) -> Tensor:
    """output = r1 * x + r2 * x_new, x_new = _rotate(x) or, with `rotate`, x @ rotate."""
    acc = _acc(x)
    xf = x.to(acc)
    x_new = _rotate(xf, rotary_mode) if rotate is None else xf @ rotate.to(acc)
    return (r1.to(acc) * xf + r2.to(acc) * x_new).to(x.dtype)


def rotary_mul_backward(
    grad: Tensor, x: Tensor, r1: Tensor, r2: Tensor, rotary_mode: str = "half"
) -> tuple[Tensor, Tensor, Tensor]:
    """(dx, dr1, dr2) of rotary_mul without `rotate` (which has no backward, the docs say); dr1 and dr2 are
    summed to r1's and r2's broadcast shapes, in x's dtype (the meta kernel)."""
    acc = _acc(x)
    g, xf = grad.to(acc), x.to(acc)
    dx = r1.to(acc) * g + _rotate_transposed(r2.to(acc) * g, rotary_mode)
    dr1 = _sum_to(g * xf, r1.shape)
    dr2 = _sum_to(g * _rotate(xf, rotary_mode), r2.shape)
    return dx.to(x.dtype), dr1.to(x.dtype), dr2.to(x.dtype)


# ---- npu_swiglu ----
def swiglu(x: Tensor, dim: int = -1) -> Tensor:
    """A * sigmoid(A) * B, A and B the two halves of x along `dim` (A first)."""
    a, b = torch.chunk(x.to(_acc(x)), 2, dim=dim)
    return (torch.nn.functional.silu(a) * b).to(x.dtype)


def swiglu_backward(grad_output: Tensor, x: Tensor, dim: int = -1) -> Tensor:
    """dx of swiglu: (g * B * sig(A) * (1 + A * (1 - sig(A))), g * A * sig(A)) along `dim`."""
    acc = _acc(x)
    a, b = torch.chunk(x.to(acc), 2, dim=dim)
    g = grad_output.to(acc)
    s = torch.sigmoid(a)
    da = g * b * s * (1 + a * (1 - s))
    db = g * a * s
    return torch.cat((da, db), dim=dim).to(x.dtype)


# ---- npu_fusion_attention ----
def _to_bnsd(t: Tensor, layout: str, heads: int) -> Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        b, s, h = t.shape
        return t.reshape(b, s, heads, h // heads).transpose(1, 2)
    s, b, h = t.shape  # SBH
    return t.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)


def _from_bnsd(t: Tensor, layout: str) -> Tensor:
    b, n, s, d = t.shape
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        return t.transpose(1, 2).reshape(b, s, n * d)
    return t.permute(2, 0, 1, 3).reshape(s, b, n * d)  # SBH


def _kv_heads(q: Tensor, k: Tensor, layout: str, heads: int) -> int:
    """Key/value heads: N in BSND/BNSD; in BSH/SBH, H_kv / D with D = H_q / head_num."""
    if layout in ("BSND", "BNSD"):
        return k.shape[2] if layout == "BSND" else k.shape[1]
    d = q.shape[2] // heads
    return k.shape[2] // d


def _keep_mask(
    atten_mask: Optional[Tensor], sparse_mode: int, pre: int, nxt: int, sq: int, skv: int, device: Any
) -> Optional[Tensor]:
    """True where a score takes part (the docs' atten_mask is True where it is masked out), broadcastable to
    [B, N, Sq, Skv]; None: everything takes part. Without atten_mask the computation is full whatever
    sparse_mode says (the docs' constraint 1). 0 and 1: the given mask; 2: causal from the top left corner;
    3: causal from the bottom right corner; 4: the band pre_tockens / next_tockens from the bottom right."""
    if atten_mask is None:
        return None
    if sparse_mode in (0, 1):
        m = atten_mask.to(torch.bool)
        return ~(m.reshape(1, 1, sq, skv) if m.dim() == 2 else m)
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(skv, device=device).unsqueeze(0)
    if sparse_mode == 2:
        return j <= i
    if sparse_mode == 3:
        return j <= i + (skv - sq)
    if sparse_mode == 4:
        rel = j - i - (skv - sq)
        return (rel <= nxt) & (rel >= -pre)
    raise _refuse("npu_fusion_attention", f"sparse_mode={sparse_mode} (prefix and varlen modes)")


def _check_fa(
    layout: str, keep_prob: float, padding_mask: Optional[Tensor], extras: dict[str, Any], op: str
) -> None:
    if layout not in LAYOUTS:
        raise _refuse(op, f"input_layout={layout!r} (served: {', '.join(LAYOUTS)}; TND is the varlen layout)")
    if keep_prob != 1.0:
        raise _refuse(
            op,
            f"keep_prob={keep_prob} (dropout draws its mask with the NPU's Philox generator in the operator, "
            "which the CPU cannot reproduce)",
        )
    if padding_mask is not None:
        raise _refuse(op, "padding_mask (the docs: not supported yet)")
    for name, v in extras.items():
        if v is not None:
            raise _refuse(op, name)


class _Scores:
    """The attention of q, k, v in BNSD (kv heads repeated for GQA): the scores' softmax P, its row max and
    sum, in the accumulation dtype."""

    def __init__(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        pse: Optional[Tensor],
        keep: Optional[Tensor],
        scale: float,
    ) -> None:
        self.group = q.shape[1] // k.shape[1]
        if self.group * k.shape[1] != q.shape[1]:
            raise ValueError(
                f"npu_fusion_attention: query heads ({q.shape[1]}) must be a multiple of key/value heads "
                f"({k.shape[1]})"
            )
        self.k = k.repeat_interleave(self.group, dim=1)
        self.v = v.repeat_interleave(self.group, dim=1)
        # y = Softmax(Mask(scale * (pse + q k^T), atten_mask)): the docs' formula
        s = q @ self.k.transpose(-1, -2)
        if pse is not None:
            s = s + pse.to(s.dtype)
        s = s * scale
        if keep is not None:
            s = s.masked_fill(~keep, -math.inf)
        m = s.amax(dim=-1, keepdim=True)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # a fully masked row
        e = torch.exp(s - m)
        total = e.sum(dim=-1, keepdim=True)
        self.p = torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), 0.0)
        self.max, self.sum = m, total


def _fa_inputs(
    query: Tensor, key: Tensor, value: Tensor, head_num: int, input_layout: str
) -> tuple[Tensor, Tensor, Tensor, torch.dtype]:
    acc = _acc(query)
    nkv = _kv_heads(query, key, input_layout, head_num)
    q = _to_bnsd(query, input_layout, head_num).to(acc)
    k = _to_bnsd(key, input_layout, nkv).to(acc)
    v = _to_bnsd(value, input_layout, nkv).to(acc)
    return q, k, v, acc


def fusion_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    head_num: int,
    input_layout: str,
    pse: Optional[Tensor] = None,
    padding_mask: Optional[Tensor] = None,
    atten_mask: Optional[Tensor] = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = 2147483647,
    next_tockens: int = 2147483647,
    inner_precise: int = 0,
    prefix: Optional[list[int]] = None,
    actual_seq_qlen: Optional[list[int]] = None,
    actual_seq_kvlen: Optional[list[int]] = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
    softmax_layout: str = "",
    sink: Optional[Tensor] = None,
    dropout_mask: Optional[Tensor] = None,
    seed: int = 0,
    offset: int = 0,
) -> tuple[Tensor, Tensor, Tensor, Tensor, int, int, int]:
    """(attention_out in the input layout, softmax_max, softmax_sum, softmax_out, seed, offset, numels):
    attention = Softmax(Mask(scale * (pse + q k^T), atten_mask)) v, per head (GQA: query head h reads
    key/value head h // (Nq / Nkv)). softmax_max / softmax_sum: the row max of the masked scores and the sum
    of exp(score - max), [B, N, Sq, 8] float32, the value repeated 8 times; softmax_out is empty; no dropout,
    so seed, offset and numels are 0. inner_precise, gen_mask_parallel and sync change nothing here."""
    extras = {"prefix": prefix, "actual_seq_qlen": actual_seq_qlen, "actual_seq_kvlen": actual_seq_kvlen}
    extras.update({"sink": sink, "dropout_mask": dropout_mask})
    _check_fa(input_layout, keep_prob, padding_mask, extras, "npu_fusion_attention")
    q, k, v, acc = _fa_inputs(query, key, value, head_num, input_layout)
    keep = _keep_mask(atten_mask, sparse_mode, pre_tockens, next_tockens, q.shape[2], k.shape[2], q.device)
    sc = _Scores(q, k, v, pse, keep, scale)
    out = _from_bnsd(sc.p @ sc.v, input_layout).to(query.dtype).contiguous()
    stat = torch.promote_types(acc, torch.float32)
    smax = sc.max.expand(*sc.max.shape[:-1], 8).to(stat).contiguous()
    ssum = sc.sum.expand(*sc.sum.shape[:-1], 8).to(stat).contiguous()
    return out, smax, ssum, query.new_empty([0]), 0, 0, 0


def fusion_attention_grad(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    dy: Tensor,
    head_num: int,
    input_layout: str,
    *,
    pse: Optional[Tensor] = None,
    padding_mask: Optional[Tensor] = None,
    atten_mask: Optional[Tensor] = None,
    softmax_max: Optional[Tensor] = None,
    softmax_sum: Optional[Tensor] = None,
    softmax_in: Optional[Tensor] = None,
    attention_in: Optional[Tensor] = None,
    scale_value: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = 2147483647,
    next_tockens: int = 2147483647,
    inner_precise: int = 0,
    seed: int = 0,
    offset: int = 0,
    numels: int = 0,
    prefix: Optional[list[int]] = None,
    actual_seq_qlen: Optional[list[int]] = None,
    actual_seq_kvlen: Optional[list[int]] = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
    softmax_layout: str = "",
    sink: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(dq, dk, dv, dpse, dsink) of fusion_attention for the output gradient dy (in the input layout). The
    softmax is recomputed from query and key (softmax_max, softmax_sum and attention_in are not needed);
    dpse is summed to pse's shape (empty without pse), dsink is empty (no sink)."""
    extras = {"prefix": prefix, "actual_seq_qlen": actual_seq_qlen, "actual_seq_kvlen": actual_seq_kvlen}
    extras["sink"] = sink
    _check_fa(input_layout, keep_prob, padding_mask, extras, "npu_fusion_attention_grad")
    q, k, v, acc = _fa_inputs(query, key, value, head_num, input_layout)
    keep = _keep_mask(atten_mask, sparse_mode, pre_tockens, next_tockens, q.shape[2], k.shape[2], q.device)
    sc = _Scores(q, k, v, pse, keep, scale_value)
    g = _to_bnsd(dy, input_layout, head_num).to(acc)
    dv = sc.p.transpose(-1, -2) @ g
    dp = g @ sc.v.transpose(-1, -2)
    ds = sc.p * (dp - (dp * sc.p).sum(dim=-1, keepdim=True))  # the softmax's backward
    dq = (ds @ sc.k) * scale_value
    dk = (ds.transpose(-1, -2) @ q) * scale_value
    b, nkv = k.shape[0], k.shape[1]
    dk = dk.reshape(b, nkv, sc.group, *dk.shape[2:]).sum(dim=2)
    dv = dv.reshape(b, nkv, sc.group, *dv.shape[2:]).sum(dim=2)
    dpse = _sum_to(ds * scale_value, pse.shape).to(pse.dtype) if pse is not None else query.new_empty([0])
    return (
        _from_bnsd(dq, input_layout).to(query.dtype).contiguous(),
        _from_bnsd(dk, input_layout).to(query.dtype).contiguous(),
        _from_bnsd(dv, input_layout).to(query.dtype).contiguous(),
        dpse,
        query.new_empty([0]),
    )


# ---- the storage operators of the advised optimizers (torch_npu/utils/combine_tensors.py) ----
def get_npu_format(t: Tensor) -> int:
    """The rehearsal device keeps every tensor in the plain layout: ND."""
    return ND


# id(tensor) -> (a weak reference to it, its storage size before npu_change_data_ptr moved it into another
# storage): torch_npu's storage size is that of the tensor's own storage description, which moving its data
# pointer does not change; here the moved tensor shares the whole buffer's storage.
_MOVED: dict[int, tuple[Any, int]] = {}


def get_storage_size(t: Tensor) -> int:
    """The number of elements of t's storage (for a tensor moved by npu_change_data_ptr: of its storage before
    the move)."""
    moved = _MOVED.get(id(t))
    if moved is not None and moved[0]() is t:
        return moved[1]
    return int(t.untyped_storage().nbytes() // t.element_size())


def npu_format_cast(
    t: Tensor, acl_format: int, customize_dtype: Optional[int] = None, input_dtype: Optional[int] = None
) -> Tensor:
    """A base format (ND, NCHW, NCDHW, NCL) is the layout the tensor already has: t itself. A private format
    (NC1HWC0, FRACTAL_NZ, ...) refuses: its memory layout is not emulated."""
    if int(acl_format) in BASE_FORMATS and customize_dtype is None and input_dtype is None:
        return t
    raise _refuse("npu_format_cast", f"the NPU's private storage format {int(acl_format)}")


def npu_change_data_ptr(dst: Tensor, src: Tensor, index: int) -> int:
    """Makes dst (the same tensor object, its sizes and strides kept) a window of src's memory starting
    `index` elements into src; the optimizers combine their parameters and gradients that way. Returns 0."""
    if dst.dtype != src.dtype:
        raise RuntimeError("torch.ops.npu.npu_change_data_ptr: dst and src must have the same dtype")
    if index < 0 or src.storage_offset() + index + dst.numel() > get_storage_size(src):
        raise RuntimeError(f"torch.ops.npu.npu_change_data_ptr: index {index} is out of src's storage")
    size = get_storage_size(dst)
    key = id(dst)
    _MOVED[key] = (weakref.ref(dst, lambda _r: _MOVED.pop(key, None)), size)
    with torch.no_grad(), torch._C._AutoDispatchBelowAutograd():
        dst.set_(src.untyped_storage(), src.storage_offset() + index, dst.size(), dst.stride())
    return 0


# ---- registration ----
# compute operators: registered for CPU (reached through the rehearsal device's fallback)
COMPUTE: dict[str, Callable[..., Any]] = {
    "npu_rms_norm": rms_norm,
    "npu_rms_norm_backward": rms_norm_backward,
    "npu_rotary_mul": rotary_mul,
    "npu_rotary_mul_backward": rotary_mul_backward,
    "npu_swiglu": swiglu,
    "npu_swiglu_backward": swiglu_backward,
    "npu_fusion_attention": fusion_attention,
    "npu_fusion_attention_grad": fusion_attention_grad,
}
# storage operators: registered for the device itself (they change or read the device tensor, not its values)
STORAGE: dict[str, Callable[..., Any]] = {
    "get_npu_format": get_npu_format,
    "get_storage_size": get_storage_size,
    "npu_format_cast": npu_format_cast,
    "npu_change_data_ptr": npu_change_data_ptr,
}
SERVED = (*COMPUTE, *STORAGE)


def schemas() -> dict[str, str]:
    """The served operators' schemas (data/vendor/npu_fused_ops.json), for the stand-in, which has no wheel to
    read them from."""
    from torchport.targets import data_dir

    data = json.loads((data_dir() / DATA).read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in data["schemas"].items()}


def _device_only(op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, refusing ordinary CPU tensors: the rehearsal device's fallback hands the kernel CPU views of device
    memory (memory the device's allocator owns); a CPU tensor of the user's has no kernel in torch_npu."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        from torchport.rehearse import session

        sess = session.session()
        if sess is not None and sess.ext is not None:
            for a in (*args, *kwargs.values()):
                if isinstance(a, Tensor) and a.numel() and not sess.ext.host_owns(a):
                    raise NotImplementedError(
                        f"Could not run 'npu::{op}' with arguments from the 'CPU' backend: torch_npu has no "
                        "CPU kernel for it (under rehearsal its reference kernel runs on npu tensors only)"
                    )
        return fn(*args, **kwargs)

    kernel.__name__ = fn.__name__
    return kernel


def _grads(n: int, at: dict[int, Any]) -> tuple[Any, ...]:
    """The gradients of an operator's n arguments: those of `at` by position, None for the others."""
    return tuple(at.get(i) for i in range(n))


def _register_autograd(lib: Any) -> None:
    """The derivatives the vendor's compiled core registers: each forward's backward calls the backward
    operator, so it is judged and counted too."""
    npu = torch.ops.npu

    def rms_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0], inputs[1], output[1])

    def rms_backward(ctx: Any, dy: Tensor, _drstd: Any) -> tuple[Any, ...]:
        x, gamma, rstd = ctx.saved_tensors
        dx, dgamma = npu.npu_rms_norm_backward(dy.contiguous(), x, gamma, rstd)
        return _grads(3, {0: dx, 1: dgamma.to(gamma.dtype)})

    def rot_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, r1, r2, mode, rotate = inputs
        ctx.mode, ctx.rotate = mode, rotate is not None
        ctx.save_for_backward(x, r1, r2)

    def rot_backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        if ctx.rotate:
            raise _refuse("npu_rotary_mul", "the backward with a rotate matrix (the docs: no backward)")
        x, r1, r2 = ctx.saved_tensors
        dx, dr1, dr2 = npu.npu_rotary_mul_backward(grad.contiguous(), x, r1, r2, ctx.mode)
        return _grads(5, {0: dx, 1: dr1.to(r1.dtype), 2: dr2.to(r2.dtype)})

    def swi_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.dim = inputs[1]
        ctx.save_for_backward(inputs[0])

    def swi_backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        (x,) = ctx.saved_tensors
        return _grads(2, {0: npu.npu_swiglu_backward(grad.contiguous(), x, ctx.dim)})

    torch.library.register_autograd("npu::npu_rms_norm", rms_backward, setup_context=rms_setup, lib=lib)
    torch.library.register_autograd("npu::npu_rotary_mul", rot_backward, setup_context=rot_setup, lib=lib)
    torch.library.register_autograd("npu::npu_swiglu", swi_backward, setup_context=swi_setup, lib=lib)
    _register_fa_autograd(lib)


# npu_fusion_attention's arguments by position (its schema); its backward passes them on by keyword
_FA_ARGS = (
    "query key value head_num input_layout pse padding_mask atten_mask scale keep_prob pre_tockens "
    "next_tockens inner_precise prefix actual_seq_qlen actual_seq_kvlen sparse_mode gen_mask_parallel sync "
    "softmax_layout sink dropout_mask seed offset"
).split()


def _register_fa_autograd(lib: Any) -> None:
    def setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        args = dict(zip(_FA_ARGS, inputs))
        ctx.args = {k: v for k, v in args.items() if not isinstance(v, Tensor)}
        ctx.pse_given, ctx.mask_given = args.get("pse") is not None, args.get("atten_mask") is not None
        ctx.save_for_backward(
            args["query"], args["key"], args["value"], args.get("pse"), args.get("atten_mask"), *output[:3]
        )

    def backward(ctx: Any, dout: Tensor, *_rest: Any) -> tuple[Any, ...]:
        q, k, v, pse, mask, out, smax, ssum = ctx.saved_tensors
        a = ctx.args
        dq, dk, dv, dpse, _ = torch.ops.npu.npu_fusion_attention_grad(
            q,
            k,
            v,
            dout.contiguous(),
            a["head_num"],
            a["input_layout"],
            pse=pse if ctx.pse_given else None,
            atten_mask=mask if ctx.mask_given else None,
            softmax_max=smax,
            softmax_sum=ssum,
            attention_in=out,
            scale_value=a.get("scale", 1.0),
            keep_prob=a.get("keep_prob", 1.0),
            pre_tockens=a.get("pre_tockens", 2147483647),
            next_tockens=a.get("next_tockens", 2147483647),
            inner_precise=a.get("inner_precise", 0),
            sparse_mode=a.get("sparse_mode", 0),
        )
        return _grads(len(_FA_ARGS), {0: dq, 1: dk, 2: dv, 5: dpse if ctx.pse_given else None})

    torch.library.register_autograd("npu::npu_fusion_attention", backward, setup_context=setup, lib=lib)


_LIBS: list[Any] = []  # keeps the registrations alive


def serve(define: bool) -> list[str]:
    """Registers the reference kernels (and the forward operators' autograd) in the `npu` namespace. define:
    also define the served operators' schemas first (the stand-in; with the vendor's package,
    vendor_npu.define_custom_ops defined them all from the wheel). Returns the operators served."""
    if _LIBS:
        return list(SERVED)
    if define:
        lib_def = torch.library.Library("npu", "FRAGMENT")
        _LIBS.append(lib_def)
        for name, schema in schemas().items():
            if not _has_schema(name):
                lib_def.define(schema)
    lib = torch.library.Library("npu", "IMPL")
    _LIBS.append(lib)
    for name, fn in COMPUTE.items():
        lib.impl(name, _device_only(name, fn), "CPU")
        if define:  # the stand-in's fake kernels (torch.compile traces with them): the same formulas on meta
            lib.impl(name, fn, "Meta")
    for name, fn in STORAGE.items():
        lib.impl(name, fn, "PrivateUse1")
    _register_autograd(lib)
    return list(SERVED)


def _has_schema(name: str) -> bool:
    try:
        return torch._C._dispatch_find_schema_or_throw(f"npu::{name}", "") is not None
    except RuntimeError:
        return False
