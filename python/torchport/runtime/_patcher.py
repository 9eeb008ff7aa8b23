"""Records every attribute we replace, so that disable() puts back exactly what was there."""

from __future__ import annotations

from typing import Any, Callable

_MISSING = object()


class Patcher:
    def __init__(self) -> None:
        # (owner, name, the value in owner.__dict__ before, or _MISSING when it was inherited / absent)
        self.records: list[tuple[Any, str, Any]] = []
        self._seen: set[tuple[int, str]] = set()
        self.undo: list[Callable[[], None]] = []

    def set(self, owner: Any, name: str, value: Any) -> bool:
        """Replace owner.name by value. Never patches the same attribute twice (returns False then)."""
        key = (id(owner), name)
        if key in self._seen:
            return False
        self._seen.add(key)
        before = owner.__dict__.get(name, _MISSING)
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
        for fn in reversed(self.undo):
            fn()
        self.undo.clear()
        for owner, name, before in reversed(self.records):
            if before is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, before)
        self.records.clear()
        self._seen.clear()
