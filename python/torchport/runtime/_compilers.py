"""TorchScript under the redirect.

`torch.jit.script` compiles the function's source into a graph in which a device such as `"cuda"` is a
constant (`prim::Constant[value="cuda"]`) and `x.cuda()` is `aten::cuda`; the TorchScript interpreter then
runs them in C++, where no Python redirect can reach. Rewriting the graph's constants would work for literals
but not for devices computed at run time, and jit's builtin table has no entry for a device string. So
torchport does what transfer_to_npu and torch_mlu's gpu_migration do, but only where it is needed: a script
whose graph names a CUDA device (or calls `.cuda()`) falls back to the eager object, which the redirect
serves, with a `modified` log line and one warning; every other script stays compiled (`torch.zeros` & co.
are registered in jit's builtin table under their aten ops, see _args.py).

`torch.jit.trace` needs nothing: the traced calls run through the redirect, so the graph records the target's
device. torch.compile needs nothing either: its internals see the truth about CUDA (data/runtime/callers.json)
and the tensors they compile for are already on the target.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import torch

from torchport.runtime._log import MODIFIED
from torchport.runtime._session import Session, TorchportWarning

_CUDA_MARKS = ('value="cuda"', 'value="cuda:', "aten::cuda(")


def cuda_lines(scripted: Any) -> list[str]:
    """The lines of a scripted function's or module's inlined graphs that name a CUDA device."""
    graphs: list[str] = []
    if isinstance(scripted, torch.jit.ScriptFunction):
        graphs.append(str(scripted.inlined_graph))
    elif isinstance(scripted, torch.jit.ScriptModule):
        for sub in scripted.modules():
            c = getattr(sub, "_c", None)
            if c is None:
                continue
            for name in c._method_names():
                graphs.append(str(c._get_method(name).inlined_graph))
    out = []
    for g in graphs:
        out += [line.strip() for line in g.splitlines() if any(m in line for m in _CUDA_MARKS)]
    return out


def install(s: Session) -> None:
    import torch.jit._script as js

    orig_script = torch.jit.script
    dst = s.target.device_type
    warned: set[str] = set()

    def script(obj: Any, *args: Any, **kwargs: Any) -> Any:
        # torch.jit.script resolves the names a scripted class or function uses from its caller's
        # frame, `_frames_up` frames above it: this wrapper is one frame more.
        if len(args) >= 2:
            args = (args[0], args[1] + 1, *args[2:])
        else:
            kwargs["_frames_up"] = kwargs.get("_frames_up", 0) + 1
        out = orig_script(obj, *args, **kwargs)
        # torch's own recursive compilation (a scripted class's methods, functional optimizers) needs
        # the scripted result: only the user's calls fall back to eager.
        if str(sys._getframe(1).f_globals.get("__name__", "")).startswith("torch."):
            return out
        try:
            lines = cuda_lines(out)
        except Exception:  # a graph we cannot read: keep torch's result
            lines = []
        if not lines:
            return out
        name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        why = (
            f"TorchScript keeps CUDA devices as graph constants ({lines[0].split('#')[0].strip()}), which "
            f"the interpreter runs in C++: {name} runs eagerly on {dst}, redirected"
        )
        s.log.hit("torch.jit.script", f"torch.jit.script({name})", f"{name} (eager)", MODIFIED, why)
        if name not in warned:
            warned.add(name)
            f = sys._getframe(1)
            warnings.warn_explicit(
                f"torch.jit.script({name}): {why}", TorchportWarning, f.f_code.co_filename, f.f_lineno
            )
        return obj

    s.patcher.set(torch.jit, "script", script)
    if js.script is orig_script:
        s.patcher.set(js, "script", script)
