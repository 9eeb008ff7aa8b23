"""The per-call log: one line per distinct redirected call site, a class per line, a summary at exit.

Line format (tab-free, one line per call site, written the first time the site is seen)::

    train.py:42: [match] torch.zeros(device='cuda') -> torch.zeros(device='cpu') | x = torch.zeros(4, ...)
    train.py:57: [mismatch] torch.cuda.memory_allocated(0) -> 0 (cpu has no device caching ...) | ...
    train.py:60: [match] torch.cuda.synchronize('cuda:1') -> torch.xpu.synchronize('xpu:1') | ...

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


# `before`/`after` of a site as a tuple that starts with CALL: (CALL, name, args, kwargs), rendered as
# `name(arg, key=value)`; (VALUE, value): the value a call returned. Rendered once per new site, never per
# call.
CALL = object()
VALUE = object()
_PLAIN = (str, int, float, bool, type(None), bytes)


def render_arg(value: object, depth: int = 0) -> str:
    """A short, cheap rendering of one argument: never the repr of a whole tensor or module."""
    if isinstance(value, _PLAIN):
        return _short(value, 40)
    if isinstance(value, os.PathLike):
        return _short(os.fspath(value), 80)
    kind = type(value)
    mod = getattr(kind, "__module__", "") or ""
    if mod.startswith("torch") and kind.__name__ in ("device", "dtype", "ProfilerActivity"):
        return str(value) if kind.__name__ != "device" else repr(value)
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "device"):
        shape = "x".join(str(int(n)) for n in value.shape)
        return f"<tensor {shape or 'scalar'} {str(value.dtype).replace('torch.', '')} {value.device}>"
    if isinstance(value, (list, tuple)) and depth == 0:
        inner = ", ".join(render_arg(v, 1) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict) and depth == 0:
        items = list(value.items())
        inner = ", ".join(f"{render_arg(k, 1)}: {render_arg(v, 1)}" for k, v in items[:4])
        return "{" + inner + (", ..." if len(items) > 4 else "") + "}"
    return f"<{kind.__name__}>"


def render_call(name: str, args: tuple[object, ...] = (), kwargs: Optional[dict[str, object]] = None) -> str:
    parts = [render_arg(a) for a in args]
    if kwargs:
        parts += [f"{k}={render_arg(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _render(api: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        if value and value[0] is CALL:
            return render_call(value[1], value[2], value[3] if len(value) > 3 else None)
        if value and value[0] is VALUE:
            return render_arg(value[1])
        if len(value) == 2 and isinstance(value[0], str):
            return f"{api}({value[0]}={_short(value[1])})"
    return _short(value)


def _no_classify(value: object) -> tuple[str, str]:
    return MATCH, ""


def _same_name(filename: str) -> str:
    return filename


class Site:
    """One call site: where it is, what was redirected, how often."""

    __slots__ = ("filename", "lineno", "api", "before", "after", "cls", "why", "count", "where")

    def __init__(
        self,
        filename: str,
        lineno: int,
        api: str,
        before: str,
        after: str,
        cls: str,
        why: str,
        where: Optional[str] = None,
    ) -> None:
        self.filename = filename
        # the name the log shows: the file name, or a notebook cell's (`In[3]`, `nb.ipynb:cell5`)
        self.where = filename if where is None else where
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
        where = f"{self.where}:{self.lineno}" if self.lineno > 0 else self.where
        text = f"{where}: [{self.cls}] {self.before} -> {self.after}{why}"
        return f"{text} | {source}" if source else text


def current_rank() -> Optional[int]:
    """This process's rank: $RANK (torchrun), else torch.distributed's when a process group is initialised
    (mp.spawn workers), else None (not known yet, or not distributed)."""
    rank = os.environ.get("RANK")
    if rank and rank.isdigit():
        return int(rank)
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        return None
    return None


OWNER_ENV = "TORCHPORT_LOG_OWNER"


def is_log_owner() -> bool:
    """True in the process that started the redirect first (it creates the log); False in the processes it
    starts (torchrun workers, mp.spawn children: they inherit TORCHPORT_LOG_OWNER=<its pid>)."""
    owner = os.environ.get(OWNER_ENV)
    return not owner or owner == str(os.getpid())


class CallLog:
    """Collects call sites; writes each new one to the log stream at once (so a crash keeps the log).

    Which file: the owner process (see is_log_owner) creates `path`; a child process of rank 0 appends to it
    (never truncates it); rank N > 0 writes `path.rankN` with all_ranks, else nothing; a child whose rank is
    never known writes `path.pidPID` at exit with all_ranks, else nothing. A child keeps its lines in memory
    until its rank is known (init_process_group tells it)."""

    def __init__(
        self,
        path: Optional[str],
        *,
        all_ranks: bool = False,
        track: Optional[bool] = None,
        owner: Optional[bool] = None,
    ) -> None:
        # track: record call sites (costs a frame lookup per redirected call); default: when a log is written
        self.track = bool(path) if track is None else track
        self.sites: dict[tuple[object, int, str], Site] = {}
        self.notes: list[str] = []
        self.classify: Callable[[object], tuple[str, str]] = _no_classify
        # the name a new site is shown under (a notebook kernel names its cells: `In[3]`, `nb.ipynb:cell5`)
        self.label: Callable[[str], str] = _same_name
        # every line written so far, in order (what `%torchport log` shows in a notebook kernel)
        self.written: list[str] = []
        self.path: Optional[str] = None
        self.requested = path
        self.all_ranks = all_ranks
        self.owner = is_log_owner() if owner is None else owner
        self.rank: Optional[int] = current_rank()
        self._stream: Optional[IO[str]] = None
        self._pending: Optional[list[str]] = [] if path else None  # lines waiting for the file decision
        if path:
            self._decide(self.rank)

    def _decide(self, rank: Optional[int], at_exit: bool = False) -> None:
        """Choose the file once the rank is known (or the process is the owner); write what was pending."""
        if self._pending is None or self.requested is None:
            return
        if rank is None and not self.owner and not at_exit:
            return
        path: Optional[str] = self.requested
        append = not self.owner
        if rank is None and not self.owner:  # a child that never learnt its rank
            path = f"{path}.pid{os.getpid()}" if self.all_ranks else None
            append = False
        elif rank not in (None, 0):
            path = f"{path}.rank{rank}" if self.all_ranks else None  # only rank 0 writes unless asked
            append = False
        pending, self._pending = self._pending, None
        if rank is not None:
            self.rank = rank
        if not path:
            return
        if not append:
            open(path, "w", encoding="utf-8").close()  # the owner starts the file; children append below
        self.path = path
        # append mode (O_APPEND) in every process: lines of the owner and of its rank-0 child never overwrite
        # each other
        self._stream = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives with the session
        for line in pending:
            self._stream.write(line)

    def rank_known(self) -> None:
        """Called after init_process_group: a child process can now choose its file."""
        rank = current_rank()
        if rank is not None:
            self.rank = rank
            self._decide(rank)

    def note(self, text: str) -> None:
        """A line for the log and the summary that is not a call site (what `auto` decided, ...)."""
        self.notes.append(text)
        self._write(f"# {text}\n")

    def _write(self, line: str) -> None:
        self.written.append(line)
        if self._stream is not None:
            self._stream.write(line)
        elif self._pending is not None:
            self._pending.append(line)
            if not self.owner:
                self.rank_known()

    def prints_summary(self) -> bool:
        """The stderr summary comes from rank 0 only: the owner (rank 0 or not distributed) or a rank-0
        child."""
        rank = current_rank()
        if rank is None:
            rank = self.rank
        return rank == 0 or (rank is None and self.owner)

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
            cls, why = self.classify(before[1] if isinstance(before, tuple) and len(before) == 2 else before)
        return self._new_site(key, frame.f_code.co_filename, frame.f_lineno, api, before, after, cls, why)

    def at(
        self, code: object, lineno: int, api: str, before: object, after: object, cls: str, why: str
    ) -> Site:
        """A call site named by its code object and line, not by a frame on the stack (a torch.cuda question
        that dynamo asks while it traces the user's function: the line is the user's)."""
        key = (code, lineno, api)
        site = self.sites.get(key)
        if site is not None:
            site.count += 1
            return site
        filename = getattr(code, "co_filename", str(code))
        return self._new_site(key, filename, lineno, api, before, after, cls, why)

    def static(
        self, filename: str, lineno: int, api: str, before: object, after: object, cls: str, why: str = ""
    ) -> Site:
        """A site found in the source before it runs (the device-type comparisons a patch cannot see)."""
        key = (filename, lineno, api)
        site = self.sites.get(key)
        if site is not None:
            return site
        return self._new_site(key, filename, lineno, api, before, after, cls, why)

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
        site = Site(filename, lineno, api, b, a, cls, why, self.label(filename))
        self.sites[key] = site
        self._write(site.line() + "\n")
        return site

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(CLASSES, 0)
        for site in self.sites.values():
            out[site.cls] += 1
        return out

    def summary(self, top: int = 5) -> str:
        c = self.counts()
        total = sum(c.values())
        who = f"rank {self.rank}: " if self.rank is not None else ""
        lines = [f"torchport: {who}{n}" for n in self.notes]
        lines += [
            f"torchport: {who}{total} redirected call site(s): {c[MATCH]} match, {c[MODIFIED]} modified, "
            f"{c[MISMATCH]} mismatch"
        ]
        # Every site whose answer differs from the original (mismatch, then modified) is listed: none can
        # hide behind the most frequent matches. `top` bounds only the match sites shown.
        shown = sorted(
            (s for s in self.sites.values() if s.cls != MATCH),
            key=lambda s: (s.cls != MISMATCH, s.where, s.lineno),
        )
        matches = sorted(
            (s for s in self.sites.values() if s.cls == MATCH), key=lambda s: (-s.count, s.where, s.lineno)
        )
        for s in shown + matches[:top]:
            where = f"{s.where}:{s.lineno}" if s.lineno > 0 else s.where
            why = f" ({s.why})" if s.why and s.cls != MATCH else ""
            lines.append(f"torchport:   {s.count:>7}x {where} {s.api} [{s.cls}]{why}")
        if len(matches) > top:
            rest = f"{len(matches) - top} more match site(s)"
            where = f"see {self.path}" if self.path else "--log FILE lists them"
            lines.append(f"torchport: {rest}: {where}")
        if self.path:
            lines.append(f"torchport: per-call log: {self.path}")
        return "\n".join(lines)

    def close(self) -> None:
        if self._pending is not None:
            self._decide(self.rank if self.rank is not None else current_rank(), at_exit=True)
        if self._stream is not None:
            self._stream.write(self._summary_block())
            self._stream.close()
            self._stream = None

    def _summary_block(self) -> str:
        return "# summary\n" + "".join(f"# {line}\n" for line in self.summary(top=20).splitlines())

    def text(self) -> str:
        """The log so far as the log file has it (its lines, then the `# summary` block it ends with)."""
        return "".join(self.written) + self._summary_block()
