"""Patch a module when it is first imported, so that enable() never imports heavy modules itself
(torch.distributed.fsdp alone takes ~2 s to import)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Callable, Optional, Sequence


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any, done: Callable[[types.ModuleType], None]) -> None:
        self.inner = inner
        self.done = done

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        self.done(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class PostImport(importlib.abc.MetaPathFinder):
    """Runs callbacks[name](module) right after `name` is imported for the first time."""

    def __init__(self) -> None:
        self.callbacks: dict[str, Callable[[types.ModuleType], None]] = {}

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        callback = self.callbacks.get(fullname)
        if callback is None:
            return None
        for finder in sys.meta_path:
            # other PostImport finders (the .pth hook's, a spawned child's) are skipped, and their callbacks
            # for this name run with ours below: asking them would ask us again, without end
            if isinstance(finder, PostImport) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec

        others = [f for f in sys.meta_path if isinstance(f, PostImport) and f is not self]

        def done(module: types.ModuleType) -> None:
            for finder in [self, *others]:
                cb = finder.callbacks.pop(fullname, None)
                if cb is not None:
                    cb(module)

        spec.loader = _Loader(spec.loader, done)
        return spec
