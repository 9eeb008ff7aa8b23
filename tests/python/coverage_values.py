"""The value vocabulary of data/runtime/coverage.json's `returns` cells (docs/runtime.md, "What each call
returns"), checked where the call ran: tests/python/test_runtime_coverage.py imports this module into the
child that runs every row under `torchport run`, so that tensors, streams and exceptions are judged in the
process that made them.

A cell is one or more clauses joined by " & ", all of which must hold; `raises:` stands alone:

    value: <Python literal>      the result equals the literal and has its type (False is not 0)
    type: <class>                isinstance(result, class): a builtin name or a dotted path (torch.Stream)
    device: <device type>        result.device.type; for an nn.Module every parameter's, for a list, tuple or
                                 dict every element's (none may be missing)
    dtype: <torch dtype>         result.dtype (float64: never downgraded)
    equals: <expression>         result == the expression, evaluated after the call in the same process
                                 (another call, or a host fact: HOST_MEMORY, HOST_CPU)
    raises: <Exception>: <text>  the call raises that exception class (or a subclass) with <text> in its
                                 message or in that of an exception it was raised from

`<target>` in a cell stands for the target the row runs on (cpu, npu, ...).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import os
import platform
from typing import Any, Optional

CLAUSES = ("value", "type", "device", "dtype", "equals", "raises")


def parse(cell: str) -> list[tuple[str, str]]:
    """The (clause, argument) pairs of a cell; ValueError when it is not in the vocabulary."""
    if not isinstance(cell, str) or not cell.strip():
        raise ValueError(f"empty cell: {cell!r}")
    if cell.startswith("raises:"):
        kind, _, part = cell[len("raises:") :].strip().partition(":")
        if not kind.strip() or not part.strip():
            raise ValueError(f"raises needs `raises: Exception: message part`: {cell!r}")
        return [("raises", cell[len("raises:") :].strip())]
    out = []
    for clause in cell.split(" & "):
        name, sep, arg = clause.partition(":")
        name, arg = name.strip(), arg.strip()
        if not sep or name not in CLAUSES or name == "raises" or not arg:
            raise ValueError(f"not a clause of the vocabulary ({', '.join(CLAUSES)}): {clause!r} in {cell!r}")
        if name == "value":
            ast.literal_eval(arg.replace("<target>", "cpu"))
        elif name == "equals":
            compile(arg.replace("<target>", "cpu"), "<equals>", "eval")
        out.append((name, arg))
    return out


def host_memory() -> int:
    """The host's memory in bytes, as a script would read it: physical pages, or the cgroup's limit when
    it is lower (a container)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            return int(text)
        break
    return total


def host_cpu() -> str:
    """The host processor's name: /proc/cpuinfo's `model name` on Linux, else what platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _resolve(name: str) -> Any:
    if "." not in name:
        if name == "NoneType":
            return type(None)
        return getattr(builtins, name)
    mod, _, attr = name.rpartition(".")
    try:
        return getattr(importlib.import_module(mod), attr)
    except ImportError:
        return getattr(_resolve(mod), attr)


def _devices(v: Any) -> list[str]:
    import torch

    if isinstance(v, torch.nn.Module):
        return [p.device.type for p in v.parameters()]
    if isinstance(v, (list, tuple)):
        return [d for e in v for d in _devices(e)]
    if isinstance(v, dict):
        return [d for e in v.values() for d in _devices(e)]
    dev = getattr(v, "device", None)
    if dev is None:
        return []
    return [torch.device(dev).type if isinstance(dev, str) else dev.type]


def _equal(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a.cpu(), b.cpu())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _short(v: Any) -> str:
    try:
        text = repr(v)[:200]
    except Exception as e:  # noqa: BLE001 - a value whose repr fails (a sparse tensor on a rehearsed device)
        text = f"(repr raised {type(e).__name__})"
    return f"{type(v).__module__}.{type(v).__qualname__} {text}"


def check(
    cell: str, target: str, value: Any, error: Optional[BaseException], env: dict[str, Any]
) -> Optional[str]:
    """None when the outcome (the value, or the exception raised) is what the cell states; else why not."""
    cell = cell.replace("<target>", target)
    clauses = parse(cell)
    if clauses[0][0] == "raises":
        kind, _, part = clauses[0][1].partition(":")
        if error is None:
            return f"expected {kind} ({part.strip()}), got {_short(value)}"
        chain, e = [], error
        while e is not None and len(chain) < 8:
            chain.append(str(e))
            e = e.__cause__ or e.__context__
        if not isinstance(error, _resolve(kind.strip())) or not any(part.strip() in m for m in chain):
            said = " <- ".join(chain)[:2000]
            return f"expected {kind}: ...{part.strip()}..., got {type(error).__name__}: {said}"
        return None
    if error is not None:
        cause = error.__cause__ or error.__context__
        why = f" (from {type(cause).__name__}: {cause})" if cause is not None else ""
        return f"raised {type(error).__name__}: {error}{why}"[:3000]
    for name, arg in clauses:
        if name == "value":
            want = ast.literal_eval(arg)
            if type(value) is not type(want) or not _equal(value, want):
                return f"value: {arg} stated, got {_short(value)}"
        elif name == "type":
            if not isinstance(value, _resolve(arg)):
                return f"type: {arg} stated, got {_short(value)}"
        elif name == "device":
            got = _devices(value)
            if not got or any(d != arg for d in got):
                return f"device: {arg} stated, got {got or 'no device'} ({_short(value)})"
        elif name == "dtype":
            dtype = str(getattr(value, "dtype", None))
            if dtype not in (arg, f"torch.{arg}"):
                return f"dtype: {arg} stated, got {getattr(value, 'dtype', None)} ({_short(value)})"
        elif name == "equals":
            try:
                want = eval(arg, env, {"HOST_MEMORY": host_memory(), "HOST_CPU": host_cpu()})
            except Exception as e:  # noqa: BLE001 - the relation itself failed: say so
                return f"equals: {arg} stated, which raised {type(e).__name__}: {e}"
            if not _equal(value, want):
                return f"equals: {arg} stated, which is {_short(want)}; got {_short(value)}"
    return None


def run(call: str, env: dict[str, Any], filename: str) -> Any:
    """The call's value: an expression's, or for statements the value of the last one when it is an
    expression (as the interactive interpreter shows it), else None."""
    tree = ast.parse(call, filename, "exec")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        head = ast.Module(body=tree.body[:-1], type_ignores=[])
        exec(compile(head, filename, "exec"), env)
        return eval(compile(ast.Expression(body=last.value), filename, "eval"), env)
    exec(compile(tree, filename, "exec"), env)
    return None
