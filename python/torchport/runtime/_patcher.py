"""Records every attribute we replace, so that disable() puts back exactly what was there.

Two guarantees beyond putting attributes back (issue 11 §6):

- **Captured references go dead.** A function captured while the redirect was on (`from torch.cuda import
  memory_allocated`, `zeros = torch.zeros`, `to = torch.Tensor.to`) must not redirect after disable().
  restore() replaces the code of every wrapper function we installed by a plain call of the original it
  replaced (`__code__` is assignable; the closure's size is kept), so the hot path pays nothing while enabled
  and no wrapper needs a flag. What is not a function (the proxy classes, the `Tensor.is_cuda` property)
  checks
  `Session.live` itself; the device mapper maps nothing once switched off.
- **A wrapper keeps the wrapped function's attributes**, as functools.wraps gives them: every function we make
  and install over a torch function gets its `__name__`, `__qualname__`, `__module__`, `__doc__`, the
  entries of its `__dict__` (`__deprecated__`, `__signature__`, ...) and `__wrapped__` pointing at it. torch
  reads some of them itself: torch 2.14's dynamo reads `torch.cuda.use_mem_pool.__wrapped__` when it is
  imported (issue 33 §5).
- **Restore never stops half-way.** Every undo step and every attribute is tried; the failures are collected
  and raised together at the end (RestoreError), after everything that could be put back was put back.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

_MISSING = object()


class RestoreError(RuntimeError):
    """Some steps of disable() failed; every other step was still carried out."""


class Patcher:
    def __init__(self) -> None:
        # (owner, name, the value in owner.__dict__ before, or _MISSING when it was inherited / absent)
        self.records: list[tuple[Any, str, Any]] = []
        self._seen: set[tuple[int, str]] = set()
        self.undo: list[Callable[[], None]] = []
        # wrapper functions we installed -> the original they replaced: restore() turns each wrapper into a
        # plain call of its original, so that references captured while enabled stop redirecting
        self._killable: dict[int, tuple[types.FunctionType, Any]] = {}

    def set(self, owner: Any, name: str, value: Any) -> bool:
        """Replace owner.name by value. Never patches the same attribute twice (returns False then)."""
        key = (id(owner), name)
        if key in self._seen:
            return False
        self._seen.add(key)
        before = owner.__dict__.get(name, _MISSING)
        # only functions made inside a function (anew by each enable(): closures, local lambdas); a
        # module-level function may be installed again by the next enable()
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        made_here = type(fn) is types.FunctionType and (
            fn.__closure__ is not None or "<locals>" in fn.__qualname__
        )
        orig = getattr(owner, name, None)
        replaces_function = orig is not None and callable(orig) and not isinstance(orig, type)
        if made_here and replaces_function:
            if fn is value and id(value) not in self._killable:
                self._killable[id(value)] = (value, orig)
            if "__wrapped__" not in fn.__dict__:
                keep_attributes(fn, orig)
        setattr(owner, name, value)
        self.records.append((owner, name, before))
        return True

    def original(self, owner: Any, name: str) -> Any:
        """The value owner.name had before we patched it (or its current value if we did not)."""
        for o, n, before in self.records:
            if o is owner and n == name and before is not _MISSING:
                return before
        return getattr(owner, name)

    def restore(self) -> None:
        """Undo everything; a failing step does not stop the others (RestoreError at the end lists them)."""
        errors: list[str] = []
        for fn, orig in self._killable.values():
            try:
                _make_passthrough(fn, orig)
            except Exception as e:  # noqa: BLE001
                errors.append(f"{fn.__qualname__}: {type(e).__name__}: {e}")
        self._killable.clear()
        for fn in reversed(self.undo):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - collected, raised after every other step ran
                errors.append(f"undo step {getattr(fn, '__qualname__', fn)!s}: {type(e).__name__}: {e}")
        self.undo.clear()
        for owner, name, before in reversed(self.records):
            try:
                if before is _MISSING:
                    try:
                        delattr(owner, name)
                    except AttributeError:
                        pass
                else:
                    setattr(owner, name, before)
            except Exception as e:  # noqa: BLE001
                errors.append(
                    f"{getattr(owner, '__name__', type(owner).__name__)}.{name}: {type(e).__name__}: {e}"
                )
        self.records.clear()
        self._seen.clear()
        if errors:
            raise RestoreError(
                "torchport: disable() could not undo every patch (all others were undone): "
                + "; ".join(errors)
            )


def keep_attributes(wrapper: types.FunctionType, orig: Any) -> None:
    """functools.update_wrapper(wrapper, orig), except that what the wrapper set on itself stays (a marker of
    ours is never replaced by the original's entry of the same name)."""
    own = dict(wrapper.__dict__)
    functools.update_wrapper(wrapper, orig)
    wrapper.__dict__.update(own)
    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]


_REGISTRY: dict[int, Any] = {}  # key -> original, read by the pass-through code


def _make_passthrough(fn: types.FunctionType, orig: Any) -> None:
    """Give `fn` the code `return orig(*args, **kwargs)`, keeping its closure (same number of free variables:
    the new code names them, unused)."""
    key = id(fn)
    _REGISTRY[key] = orig
    free = fn.__code__.co_freevars
    args = ", ".join(f"_v{i}" for i in range(len(free)))
    touch = f"        ({args}{',' if len(free) == 1 else ''})\n" if free else ""
    src = (
        f"def _outer({args}):\n"
        f"    def passthrough(*args, **kwargs):\n"
        f"{touch}"
        f"        return __torchport_originals__[{key}](*args, **kwargs)\n"
        f"    return passthrough\n"
    )
    ns: dict[str, Any] = {}
    exec(compile(src, "<torchport passthrough>", "exec"), ns)  # noqa: S102 - our own fixed template
    code = ns["_outer"].__code__.co_consts
    inner = next(c for c in code if isinstance(c, types.CodeType))
    fn.__globals__["__torchport_originals__"] = _REGISTRY
    fn.__code__ = inner
    fn.__defaults__ = None
    fn.__kwdefaults__ = None
