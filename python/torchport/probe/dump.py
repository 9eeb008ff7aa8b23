"""The probe dump directory: writing it atomically and reading it back with validation.

Layout (docs/probe.md has the full description)::

    DUMP/
      manifest.json    written last; its presence marks a complete dump
      records.jsonl    one JSON object per recorded tensor, in execution order
      tensors/         optional full tensors, one .npy per record (``--full-tensors``)

This module needs only the standard library and numpy, so ``torchport compare`` runs without torch.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np

FORMAT_NAME = "torchport-probe"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
TENSORS = "tensors"

# Path components that wrappers put between a module and the module they wrap. These private names
# are never a real submodule, so they are removed wherever they appear in a path: torch.compile's
# OptimizedModule keeps the model as `._orig_mod` (also for a compiled submodule:
# `encoder._orig_mod.layers.0`), FullyShardedDataParallel as `._fsdp_wrapped_module`, and
# activation checkpointing's `checkpoint_wrapper` as `._checkpoint_wrapped_module`.
WRAPPER_COMPONENTS = frozenset({"_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"})
# DistributedDataParallel / DataParallel keep the model as `.module`, a name real modules use too.
# A dump lists the paths of the wrappers it saw (manifest "wrappers"), and `module` is removed only
# right below one of them (`module.layer1`, or `encoder.module.layer1` for a wrapped submodule);
# for a dump without that list, only leading `module` components are removed.
DDP_CHILD = "module"
WRAPPER_CHILDREN = WRAPPER_COMPONENTS | {DDP_CHILD}


class DumpError(Exception):
    """A dump cannot be read. The message starts with the path at fault."""


def normalize_name(name: str, wrappers: Optional[frozenset[str]] = None) -> str:
    """A module path without wrapper components.

    `wrappers` holds the (raw) paths of the modules that wrap a `module` child; None means
    unknown, and then leading `module` components are removed.
    """
    if not name:
        return ""
    parts = name.split(".")
    if not any(p in WRAPPER_CHILDREN for p in parts):
        return name
    kept: list[str] = []
    for i, p in enumerate(parts):
        if p in WRAPPER_COMPONENTS:
            continue
        if p == DDP_CHILD:
            if wrappers is None:
                if not kept:
                    continue
            elif ".".join(parts[:i]) in wrappers:
                continue
        kept.append(p)
    return ".".join(kept)


def encode_float(v: float) -> Any:
    """JSON has no NaN/Infinity: non-finite values are written as strings."""
    if math.isfinite(v):
        return v
    if math.isnan(v):
        return "nan"
    return "inf" if v > 0 else "-inf"


def decode_float(v: Any) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, str):
        return float(v)
    return float(v)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        # mkstemp creates the file 0600; the result is a report for people: the user's umask decides
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class DumpWriter:
    """Writes a dump into a temporary sibling directory and moves it into place on close().

    A crashed run leaves ``DUMP.partial-*`` without a manifest, never a half-written ``DUMP``.
    """

    def __init__(self, out: os.PathLike | str, *, overwrite: bool = True) -> None:
        self.out = Path(out)
        if self.out.exists() and not (self.out / MANIFEST).exists():
            if not self.out.is_dir() or any(self.out.iterdir()):
                raise DumpError(f"{self.out}: exists and is not a torchport dump; refusing to overwrite it")
        if self.out.exists() and not overwrite:
            raise DumpError(f"{self.out}: already exists")
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.out.name}.partial-", dir=str(self.out.parent)))
        os.chmod(self.tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700: the dump follows the user's umask
        self._records = open(self.tmp / RECORDS, "w", encoding="utf-8")
        self.count = 0
        self.tensor_bytes = 0
        self.tensors_saved = 0
        self.tensors_dropped = 0
        self.tensor_bytes_dropped = 0
        self._tensor_dir: Optional[Path] = None

    def write_records(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        lines = [json.dumps(r, separators=(",", ":"), allow_nan=False) for r in records]
        self._records.write("\n".join(lines))
        self._records.write("\n")
        self.count += len(records)

    def save_tensor(self, seq: int, array: np.ndarray, budget: Optional[int]) -> Optional[str]:
        """Save one tensor as .npy unless the budget is spent; returns its relative path."""
        nbytes = int(array.nbytes)
        if budget is not None and self.tensor_bytes + nbytes > budget:
            self.tensors_dropped += 1
            self.tensor_bytes_dropped += nbytes
            return None
        if self._tensor_dir is None:
            self._tensor_dir = self.tmp / TENSORS
            self._tensor_dir.mkdir()
        rel = f"{TENSORS}/{seq:08d}.npy"
        np.save(self.tmp / rel, array, allow_pickle=False)
        self.tensor_bytes += nbytes
        self.tensors_saved += 1
        return rel

    def close(self, manifest: dict[str, Any]) -> Path:
        self._records.close()
        manifest = dict(manifest)
        manifest.update(
            {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "records": self.count,
                "records_file": RECORDS,
                "records_bytes": (self.tmp / RECORDS).stat().st_size,
                "tensors": {
                    "saved": self.tensors_saved,
                    "bytes": self.tensor_bytes,
                    "dropped": self.tensors_dropped,
                    "dropped_bytes": self.tensor_bytes_dropped,
                },
            }
        )
        atomic_write_text(self.tmp / MANIFEST, json.dumps(manifest, indent=1, allow_nan=False) + "\n")
        old: Optional[Path] = None
        if self.out.exists():
            old = Path(tempfile.mkdtemp(prefix=f"{self.out.name}.old-", dir=str(self.out.parent)))
            os.rmdir(old)
            os.replace(self.out, old)
        os.replace(self.tmp, self.out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.out

    def abort(self) -> None:
        try:
            self._records.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


_NONFINITE = ("nan", "inf", "-inf")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in _NONFINITE


def _what(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 40 else text[:37] + "..."


# field -> (check, what it must be); fields marked required must be present.
_FIELDS: dict[str, tuple[Any, str, bool]] = {
    "name": (lambda v: isinstance(v, str), "a string", True),
    "dir": (lambda v: v in ("forward", "backward"), '"forward" or "backward"', True),
    "call": (lambda v: _is_int(v) and v >= 0, "a non-negative integer", True),
    "io": (lambda v: v in ("in", "out", "grad"), '"in", "out" or "grad"', True),
    "slot": (lambda v: _is_int(v) and v >= 0, "a non-negative integer", True),
    "seq": (lambda v: _is_int(v) and v >= 0, "a non-negative integer", False),
    "step": (lambda v: _is_int(v) and v >= 0, "a non-negative integer", False),
    "numel": (lambda v: _is_int(v) and v >= 0, "a non-negative integer", False),
    "shape": (
        lambda v: isinstance(v, list) and all(_is_int(d) and d >= 0 for d in v),
        "a list of sizes",
        False,
    ),
    "type": (lambda v: isinstance(v, str), "a string", False),
    "module": (lambda v: isinstance(v, str), "a string", False),
    "node": (lambda v: isinstance(v, str), "a string", False),
    "kwarg": (lambda v: isinstance(v, str), "a string", False),
    "dtype": (lambda v: isinstance(v, str), "a string", False),
    "device": (lambda v: isinstance(v, str), "a string", False),
    "leaf": (lambda v: isinstance(v, bool), "true or false", False),
    "min": (lambda v: v is None or _is_num(v), 'a number or "nan"/"inf"/"-inf"', False),
    "max": (lambda v: v is None or _is_num(v), 'a number or "nan"/"inf"/"-inf"', False),
    "mean": (lambda v: v is None or _is_num(v), 'a number or "nan"/"inf"/"-inf"', False),
    "norm": (lambda v: v is None or _is_num(v), 'a number or "nan"/"inf"/"-inf"', False),
    "nan": (lambda v: v is None or (_is_int(v) and v >= 0), "a count", False),
    "inf": (lambda v: v is None or (_is_int(v) and v >= 0), "a count", False),
    "hash": (lambda v: v is None or isinstance(v, str), "a string", False),
    "stored_as": (lambda v: v is None or v == "bfloat16-bits", '"bfloat16-bits"', False),
    # A tensor path stays inside the dump: tensors/NAME.npy.
    "tensor": (
        lambda v: (
            v is None
            or (
                isinstance(v, str)
                and v.startswith(TENSORS + "/")
                and v.endswith(".npy")
                and "/" not in v[len(TENSORS) + 1 :]
                and v[len(TENSORS) + 1 :] not in ("", ".", "..")
            )
        ),
        'null or "tensors/NAME.npy"',
        False,
    ),
}


def check_record(rec: dict[str, Any]) -> Optional[str]:
    """Why a decoded record is unusable (field and value), or None if it is well-formed."""
    for key, (ok, want, required) in _FIELDS.items():
        if key not in rec:
            if required:
                return f'field "{key}" is missing'
            continue
        v = rec[key]
        if not ok(v):
            return f'field "{key}" is {_what(v)}, expected {want}'
    shape, numel = rec.get("shape"), rec.get("numel")
    if shape is not None and numel is not None and math.prod(shape) != numel:
        return f'field "numel" is {numel}, but the shape {shape} holds {math.prod(shape)} elements'
    return None


def _check_manifest(mpath: Path, m: dict[str, Any]) -> None:
    """The manifest fields compare relies on have the right types."""
    model = m.get("model")
    if model is not None:
        if not isinstance(model, dict):
            raise DumpError(f'{mpath}: field "model" is not an object')
        if not isinstance(model.get("signature", ""), str):
            raise DumpError(f'{mpath}: field "model.signature" is not a string')
        params = model.get("parameters", [])
        if not isinstance(params, list) or not all(
            isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and isinstance(x[1], list)
            for x in params
        ):
            raise DumpError(f'{mpath}: field "model.parameters" is not a list of [name, shape]')
        roots = model.get("roots", [])
        if not isinstance(roots, list) or not all(
            isinstance(r, dict) and isinstance(r.get("type"), str) for r in roots
        ):
            raise DumpError(f'{mpath}: field "model.roots" is not a list of {{prefix, type}}')
    w = m.get("wrappers")
    if w is not None and not (isinstance(w, list) and all(isinstance(x, str) for x in w)):
        raise DumpError(f'{mpath}: field "wrappers" is not a list of module paths')
    if m.get("level", "module") not in ("module", "op"):
        raise DumpError(f'{mpath}: field "level" is {_what(m.get("level"))}, expected "module" or "op"')
    rf = m.get("records_file", RECORDS)
    # a name in the dump's own folder: not empty, ".", ".." (the folder itself: found by
    # fuzz/python/probe_dump_fuzz.py, an IsADirectoryError), nor a path
    if not isinstance(rf, str) or rf in ("", ".", "..") or "/" in rf or "\0" in rf:
        raise DumpError(f'{mpath}: field "records_file" is not a file name')
    t = m.get("tensors")
    if t is not None and not (isinstance(t, dict) and all(_is_int(v) for v in t.values())):
        raise DumpError(f'{mpath}: field "tensors" is not an object of counts')


@dataclass
class Dump:
    """A validated dump: its manifest, plus a way to stream its records."""

    path: Path
    manifest: dict[str, Any]
    records_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.records_path = self.path / self.manifest.get("records_file", RECORDS)

    @property
    def level(self) -> str:
        return str(self.manifest.get("level", "module"))

    @property
    def count(self) -> int:
        return int(self.manifest["records"])

    @property
    def wrappers(self) -> Optional[frozenset[str]]:
        """Paths of the modules that wrap a `module` child (None for a dump that does not say)."""
        w = self.manifest.get("wrappers")
        return None if w is None else frozenset(w)

    def records(self) -> Iterator[dict[str, Any]]:
        """Stream the records, checking each line; a short or corrupt file is a DumpError."""
        n = 0
        with open(self.records_path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n"):
                    raise DumpError(
                        f"{self.records_path}:{lineno}: truncated record (the line has no end); "
                        f"the dump is incomplete"
                    )
                try:
                    rec = json.loads(raw)
                except ValueError as e:
                    raise DumpError(f"{self.records_path}:{lineno}: not a JSON record ({e})") from None
                if not isinstance(rec, dict):
                    raise DumpError(f"{self.records_path}:{lineno}: not a probe record (not a JSON object)")
                problem = check_record(rec)
                if problem:
                    raise DumpError(f"{self.records_path}:{lineno}: bad record {lineno}: {problem}")
                n += 1
                yield rec
        if n != self.count:
            raise DumpError(
                f"{self.records_path}: holds {n} records but {self.path / MANIFEST} says "
                f"{self.count}; the dump is truncated"
            )

    @property
    def tensors_dropped(self) -> int:
        """Tensors not saved because the --max-tensor-bytes budget was spent."""
        t = self.manifest.get("tensors") or {}
        return int(t.get("dropped", 0))

    def tensor_path(self, rec: dict[str, Any]) -> Optional[Path]:
        rel = rec.get("tensor")
        return None if rel is None else self.path / rel


def open_dump(path: os.PathLike | str) -> Dump:
    """Open and validate a dump directory; raises DumpError with a clear reason."""
    p = Path(path)
    if not p.exists():
        raise DumpError(f"{p}: no such directory")
    if not p.is_dir():
        raise DumpError(f"{p}: not a directory (a dump is a directory written by `torchport probe`)")
    mpath = p / MANIFEST
    if not mpath.exists():
        partial = " (it looks like an interrupted run)" if ".partial-" in p.name else ""
        raise DumpError(f"{mpath}: missing; {p} is not a complete torchport probe dump{partial}")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DumpError(f"{mpath}: unreadable manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise DumpError(f"{mpath}: not a torchport probe manifest")
    if manifest.get("version") != FORMAT_VERSION:
        raise DumpError(
            f"{mpath}: dump format version {manifest.get('version')} (this torchport reads {FORMAT_VERSION})"
        )
    if not _is_int(manifest.get("records")) or manifest["records"] < 0:
        raise DumpError(f"{mpath}: no record count")
    _check_manifest(mpath, manifest)
    dump = Dump(p, manifest)
    if not dump.records_path.exists():
        raise DumpError(f"{dump.records_path}: missing; the dump is truncated")
    size = dump.records_path.stat().st_size
    want = manifest.get("records_bytes")
    if isinstance(want, int) and size != want:
        raise DumpError(
            f"{dump.records_path}: {size} bytes but the manifest says {want}; "
            "the dump is truncated or was edited"
        )
    return dump


# numpy reads a .npy header with ast.literal_eval. CPython before 3.11.9 / 3.12.3 keeps the AST
# converter's recursion depth in interpreter-wide state (python/cpython#106905): two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch", which
# CI saw under `compare --workers`. Headers are a few hundred bytes, so one lock costs nothing.
_HEADER_LOCK = threading.Lock()


class NpyStream:
    """Sequential reader of a saved .npy tensor, in chunks. Checks the header and the file size up
    front.

    The file is memory-mapped and the chunks are views of the page cache (no copy); the kernel is
    told the access is sequential and asked to read a few MiB ahead asynchronously
    (MADV_WILLNEED), so that reading from disk overlaps the arithmetic. Where mmap is not available
    the chunks are read with `readinto` into one reused buffer.
    """

    # Ask the kernel to read this far ahead of the chunk being compared.
    PREFETCH = 8 << 20

    def __init__(self, path: Path, rec: dict[str, Any]) -> None:
        self.path = path
        try:
            self._f = open(path, "rb")
        except FileNotFoundError:
            raise DumpError(f"{path}: missing tensor file; the dump is truncated") from None
        except OSError as e:
            raise DumpError(f"{path}: unreadable tensor ({e.strerror or e})") from None
        try:
            with _HEADER_LOCK:
                version = np.lib.format.read_magic(self._f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(self._f)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(self._f)
        except (OSError, ValueError) as e:
            self._f.close()
            raise DumpError(f"{path}: not a .npy tensor ({e}); the dump is corrupt") from None
        if dtype.hasobject:
            self._f.close()
            raise DumpError(f"{path}: holds Python objects, not a tensor")
        self.dtype = dtype
        self.count = int(np.prod(shape, dtype=np.int64))
        want = rec.get("numel")
        if isinstance(want, int) and self.count != want:
            self._f.close()
            raise DumpError(f"{path}: {self.count} elements, the record says {want}")
        self.offset = self._f.tell()
        end = self.offset + self.count * dtype.itemsize
        size = os.fstat(self._f.fileno()).st_size
        if size < end:
            self._f.close()
            raise DumpError(f"{path}: {size} bytes, {end} expected; the tensor file is truncated")
        self.size = self.count

    def close(self) -> None:
        self._f.close()

    def chunks(self, chunk: int) -> Iterator[np.ndarray]:
        """Consecutive flat views of at most `chunk` elements. A view is valid until the next one
        is requested."""
        if self.count == 0:
            self._f.close()
            return
        try:
            mm = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError, OverflowError):
            yield from self._read_chunks(chunk)
            return
        advise = getattr(mm, "madvise", None)
        if advise is not None:
            advise(mmap.MADV_SEQUENTIAL)
        arr: Optional[np.ndarray] = np.frombuffer(mm, dtype=self.dtype, count=self.count, offset=self.offset)
        assert arr is not None
        ahead = 0  # file offset up to which read-ahead was requested
        try:
            for i in range(0, self.count, chunk):
                if advise is not None and hasattr(mmap, "MADV_WILLNEED"):
                    pos = self.offset + i * self.dtype.itemsize
                    if ahead < min(len(mm), pos + self.PREFETCH // 2):
                        start = max(ahead, pos) // mmap.PAGESIZE * mmap.PAGESIZE
                        ahead = min(len(mm), pos + self.PREFETCH)
                        advise(mmap.MADV_WILLNEED, start, ahead - start)
                yield arr[i : i + chunk]
        finally:
            arr = None
            try:
                mm.close()
            except BufferError:  # the caller still holds a chunk: the mapping goes with it
                pass
            self._f.close()

    def _read_chunks(self, chunk: int) -> Iterator[np.ndarray]:
        buf = np.empty(min(chunk, max(self.count, 1)), dtype=self.dtype)
        left = self.count
        try:
            while left > 0:
                k = min(left, buf.size)
                view = buf[:k]
                got = self._f.readinto(memoryview(view).cast("B"))
                if got != k * self.dtype.itemsize:
                    raise DumpError(f"{self.path}: ends early; the tensor file is truncated")
                left -= k
                yield view
        finally:
            self._f.close()
