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
device. torch.compile needs little: its internals see the truth about CUDA (data/runtime/callers.json), the
tensors they compile for are already on the target, and the device questions a compiled function may branch
on are constants to dynamo (_install_dynamo_constants).
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

    _install_dynamo_constants(s)


# torch.cuda questions whose answer a compiled function may branch on (`if torch.cuda.get_device_capability()
# >= (8, 0)`). dynamo constant-folds get_device_properties itself (torch/_dynamo/variables/torch.py,
# constant_fold_functions) and traces the other two into the graph, where fake tensors call them: on CUDA the
# non-tensor result graph-breaks; under the redirect the call reached torch's truth (no CUDA) and failed with
# TorchRuntimeError (issue 33 §6).
CONSTANT_QUESTIONS = ("get_device_capability", "get_device_name", "get_device_properties")


def _install_dynamo_constants(s: Session) -> None:
    """The redirected torch.cuda questions are constants to dynamo while enabled: it calls them once while
    tracing (as the user's code: callers.json gives torch._dynamo.variables the user's answer, so the compiled
    function takes the eager branch) and guards nothing (a device's capability does not change). The entries
    are removed by disable()."""

    def patch(vt: Any) -> None:
        folds = getattr(vt, "constant_fold_functions", None)
        if not isinstance(folds, dict):
            return
        added = []
        for name in CONSTANT_QUESTIONS:
            fn = getattr(torch.cuda, name, None)
            if fn is not None and fn not in folds:
                folds[fn] = None
                added.append(fn)
        rule_map = None
        try:
            from torch._dynamo import trace_rules

            cached = trace_rules.get_torch_obj_rule_map
            if cached.cache_info().currsize:  # built already (before enable()): it does not know our wrappers
                rule_map = cached()
        except Exception:  # noqa: BLE001 - another torch version: constant folding alone still applies
            rule_map = None
        mapped = []
        if isinstance(rule_map, dict):
            from torch._dynamo.variables import TorchInGraphFunctionVariable

            for fn in added:
                if fn not in rule_map:
                    rule_map[fn] = TorchInGraphFunctionVariable
                    mapped.append(fn)

        def undo() -> None:
            for fn in added:
                folds.pop(fn, None)
            if isinstance(rule_map, dict):
                for fn in mapped:
                    rule_map.pop(fn, None)

        s.patcher.undo.append(undo)

    s.when_imported("torch._dynamo.variables.torch", patch)
