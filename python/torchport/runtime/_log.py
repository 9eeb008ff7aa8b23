"""The per-call log: one line per distinct redirected call site, a class per line, a summary at exit.

Line format (tab-free, one line per call site, written the first time the site is seen)::

    train.py:42: [match] torch.zeros(device='cuda') -> torch.zeros(device='cpu') | x = torch.zeros(4, ...)
    train.py:57: [mismatch] torch.cuda.memory_allocated() -> 0 (cpu has no device allocator) | print(...)

Classes: ``match`` (same semantics), ``modified`` (emulated: same intent, different mechanism), ``mismatch``
(not equivalent; the text in parentheses says why).
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import IO, Callable, Optional

MATCH = "match"
MODIFIED = "modified"
MISMATCH = "mismatch"
CLASSES = (MATCH, MODIFIED, MISMATCH)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render(api: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return f"{api}({value[0]}={_short(value[1])})"
    return _short(value)


def _no_classify(value: object) -> tuple[str, str]:
    return MATCH, ""


class Site:
    """One call site: where it is, what was redirected, how often."""

    __slots__ = ("filename", "lineno", "api", "before", "after", "cls", "why", "count")

    def __init__(
        self, filename: str, lineno: int, api: str, before: str, after: str, cls: str, why: str
    ) -> None:
        self.filename = filename
        self.lineno = lineno
        self.api = api
        self.before = before
        self.after = after
        self.cls = cls
        self.why = why
        self.count = 1

    def line(self) -> str:
        source = linecache.getline(self.filename, self.lineno).strip() if self.lineno > 0 else ""
        why = f" ({self.why})" if self.why else ""
        where = f"{self.filename}:{self.lineno}" if self.lineno > 0 else self.filename
        text = f"{where}: [{self.cls}] {self.before} -> {self.after}{why}"
        return f"{text} | {source}" if source else text


class CallLog:
    """Collects call sites; writes each new one to the log stream at once (so a crash keeps the log)."""

    def __init__(self, path: Optional[str], *, all_ranks: bool = False, track: Optional[bool] = None) -> None:
        # track: record call sites (costs a frame lookup per redirected call); default: when a log is written
        self.track = bool(path) if track is None else track
        self.sites: dict[tuple[object, int, str], Site] = {}
        self.classify: Callable[[object], tuple[str, str]] = _no_classify
        self.path: Optional[str] = None
        self._stream: Optional[IO[str]] = None
        rank = os.environ.get("RANK")
        self.rank = int(rank) if rank and rank.isdigit() else 0
        if path:
            if self.rank != 0 and not all_ranks:
                path = None  # only rank 0 writes under torchrun unless asked
            elif self.rank != 0:
                path = f"{path}.rank{self.rank}"
        if path:
            self.path = path
            self._stream = open(path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives with the session

    # The hot path: called by every wrapper that changed something. `depth` counts frames from here to the
    # user. `before`/`after` are text, or (argument name, value) pairs rendered as `api(name=value)` for new
    # sites only. cls None: ask `classify(old_value)` (set by the session) for (class, why) the first time.
    def hit(
        self,
        api: str,
        before: object,
        after: object,
        cls: Optional[str] = MATCH,
        why: str = "",
        depth: int = 2,
    ) -> Optional[Site]:
        if not self.track:
            return None
        frame = sys._getframe(depth)
        key = (frame.f_code, frame.f_lineno, api)
        site = self.sites.get(key)
        if site is not None:
            site.count += 1
            return site
        if cls is None:
            cls, why = self.classify(before[1] if isinstance(before, tuple) else before)
        return self._new_site(key, frame.f_code.co_filename, frame.f_lineno, api, before, after, cls, why)

    def event(self, where: str, api: str, before: object, after: object, cls: str, why: str = "") -> Site:
        """A redirect with no call site (environment variables, imports)."""
        key = (where, 0, api)
        site = self.sites.get(key)
        if site is not None:
            site.count += 1
            return site
        return self._new_site(key, where, 0, api, before, after, cls, why)

    def _new_site(
        self,
        key: tuple[object, int, str],
        filename: str,
        lineno: int,
        api: str,
        before: object,
        after: object,
        cls: str,
        why: str,
    ) -> Site:
        b = _render(api, before)
        a = _render(api, after)
        site = Site(filename, lineno, api, b, a, cls, why)
        self.sites[key] = site
        if self._stream is not None:
            self._stream.write(site.line() + "\n")
        return site

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(CLASSES, 0)
        for site in self.sites.values():
            out[site.cls] += 1
        return out

    def summary(self, top: int = 5) -> str:
        c = self.counts()
        total = sum(c.values())
        lines = [
            f"torchport: {total} redirected call site(s): {c[MATCH]} match, {c[MODIFIED]} modified, "
            f"{c[MISMATCH]} mismatch"
        ]
        ranked = sorted(self.sites.values(), key=lambda s: (-s.count, s.filename, s.lineno))[:top]
        for s in ranked:
            where = f"{s.filename}:{s.lineno}" if s.lineno > 0 else s.filename
            lines.append(f"torchport:   {s.count:>7}x {where} {s.api} [{s.cls}]")
        if self.path:
            lines.append(f"torchport: per-call log: {self.path}")
        return "\n".join(lines)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.write("# summary\n")
            for line in self.summary(top=20).splitlines():
                self._stream.write("# " + line + "\n")
            self._stream.close()
            self._stream = None
