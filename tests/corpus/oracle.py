"""An oracle for CUDA-specific references, written on Python's own `ast` only.

It never imports torchport (neither the C++ core nor the Python package): it is the independent
judge of what a migration left behind. docs/fidelity.md defines every kind it finds and lists the
kinds it does not find, with examples.

`find_references(source)` lists the references in one file. `unflagged(...)` maps the references
left in a migrated file back to the input lines (a line diff) and keeps those that no report row
covers.
"""

from __future__ import annotations

import ast
import difflib
import re
import threading
from dataclasses import dataclass, field
from typing import Iterable, Optional

# CPython 3.11.7's ast.parse is not safe across threads ("AST constructor recursion depth
# mismatch", fixed in 3.11.8): the suite parses from a thread pool, so parses take turns.
PARSE_LOCK = threading.Lock()

# The kinds, in the order docs/fidelity.md describes them.
KINDS = (
    "cuda-api",  # torch.cuda.*, torch.backends.cudnn.*, torch.backends.cuda.* (any alias)
    "cuda-call",  # x.cuda(...)
    "is-cuda",  # x.is_cuda
    "device-string",  # "cuda", "cuda:0", f"cuda:{i}", "cuda:{}".format(i) as a value
    "device-compare",  # x.device.type == "cuda", "cuda" in device, device.startswith("cuda")
    "nccl",  # "nccl", torch.distributed.Backend.NCCL
    "int-device",  # .to(0), .cuda(0), device=0, torch.device(0), with an int literal or local_rank-like name
    "amp-cuda-default",  # torch.cuda.amp.*, GradScaler() without a device, *_autocast_gpu_dtype, ...
)

CUDA_PREFIXES = ("torch.cuda", "torch.backends.cudnn", "torch.backends.cuda")
# A device string: "cuda", "cuda:0", "cuda:{}", "cuda:%d" (no spaces: "cuda is slow" is prose).
DEVICE_STRING = re.compile(r"^cuda(:\S*)?$")
# Names that hold a CUDA device index in the projects' style. Deliberately short: a name that
# might hold a torch.device or a string ("device", "dev") is not listed.
INT_DEVICE_NAMES = re.compile(
    r"^(local_rank|ddp_local_rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|local_gpu)$"
)
# Calls whose arguments are messages for people, not code: strings inside them are not references.
MESSAGE_FUNCS = {"print", "warn"}
MESSAGE_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log", "write"}
AMP_NO_DEVICE = {"torch.amp.GradScaler", "torch.GradScaler", "torch.amp.grad_scaler.GradScaler"}
AMP_GPU_FUNCS = {"torch.get_autocast_gpu_dtype", "torch.set_autocast_gpu_dtype"}
AMP_NO_ARG = {"torch.is_autocast_enabled"}


# The catalogue entry (devices.json) of "cuda" as a GPU platform name beside "rocm".
PLATFORM = '"cuda" beside "rocm"'
# The catalogue entry (devices.json) of a comparison with "cuda" and-ed with a test of
# torch.version.hip / torch.version.cuda: the guard of a CUDA-only path.
CUDA_BUILD = '"cuda" and torch.version'


@dataclass(frozen=True, order=True)
class Reference:
    line: int
    col: int
    kind: str
    text: str  # the source segment (first line), for people
    # cuda-api: the qualified name of the API or imported module; a string given as a keyword
    # the catalogue names (`device_types="cuda"`): that keyword and value. For the catalogue's
    # "kept as is" entries (tests/corpus/kept.py); "" otherwise
    qualified: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.line}:{self.col + 1}: {self.kind}: {self.text}"


def _dotted(node: ast.AST) -> Optional[list[str]]:
    """`a.b.c` as ["a", "b", "c"]; None when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _is_cuda_qualname(q: str) -> bool:
    return any(q == p or q.startswith(p + ".") for p in CUDA_PREFIXES)


def _call_name(call: ast.Call) -> Optional[str]:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.source = source
        self.aliases: dict[str, str] = {}  # local name -> qualified name
        self.refs: list[Reference] = []
        self.message_depth = 0
        self.compare_strings: set[int] = set()  # ids of string nodes that sit in a comparison
        # ids of strings given as a keyword whose name says what they are (`device_types="cuda"`
        # names the device of a custom operator's kernel): the catalogue may keep them
        self.keyword_strings: dict[int, str] = {}

    # -- helpers ---------------------------------------------------------------------------
    def add(self, node: ast.AST, kind: str, qualified: str = "") -> None:
        seg = ast.get_source_segment(self.source, node) or ""
        if (
            isinstance(node, ast.Attribute)
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            # an attribute is where its name is: `Model(\n ...\n).cuda()` is on the `.cuda` line,
            # as a report row about it is
            line, col = node.end_lineno, node.end_col_offset - len(node.attr)
            seg = seg.splitlines()[-1].strip() if seg else ""
        else:
            line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
            seg = seg.splitlines()[0] if seg else ""
        self.refs.append(Reference(line, col, kind, seg[:80], qualified))

    def qualname(self, node: ast.AST) -> Optional[str]:
        parts = _dotted(node)
        if not parts:
            return None
        head = self.aliases.get(parts[0])
        if head is None:
            return None
        return ".".join([head, *parts[1:]])

    # -- imports: build the alias table (one table per file, scopes ignored) ----------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.aliases[top] = top
            if _is_cuda_qualname(a.name):
                kind = "amp-cuda-default" if a.name.startswith("torch.cuda.amp") else "cuda-api"
                self.add(node, kind, a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for a in node.names:
            if a.name == "*":
                continue
            q = f"{node.module}.{a.name}"
            self.aliases[a.asname or a.name] = q
        if _is_cuda_qualname(node.module) or any(
            _is_cuda_qualname(f"{node.module}.{a.name}") for a in node.names
        ):
            amp = node.module.startswith("torch.cuda.amp") or any(
                f"{node.module}.{a.name}" == "torch.cuda.amp" for a in node.names
            )
            names = [f"{node.module}.{a.name}" for a in node.names]
            cuda = [q for q in names if _is_cuda_qualname(q)]
            qualified = cuda[0] if len(cuda) == 1 else node.module
            self.add(node, "amp-cuda-default" if amp else "cuda-api", qualified)

    # -- names and attributes ---------------------------------------------------------------
    def _check_chain(self, node: ast.AST) -> bool:
        """Records node if it is a CUDA API chain; True when recorded (children are skipped)."""
        q = self.qualname(node)
        if q is None:
            return False
        if _is_cuda_qualname(q):
            self.add(node, "amp-cuda-default" if q.startswith("torch.cuda.amp") else "cuda-api", q)
            return True
        if q in AMP_GPU_FUNCS:
            self.add(node, "amp-cuda-default")
            return True
        if q in ("torch.distributed.Backend.NCCL", "torch.distributed.is_nccl_available"):
            self.add(node, "nccl")
            return True
        return False

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._check_chain(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and self._check_chain(node):
            return
        if not isinstance(node.ctx, ast.Load):
            # `torch.backends.cudnn.benchmark = True`: the reference is the chain being written
            # to (where the Load visit of node.value would put it), named by the whole chain
            q = self.qualname(node)
            if q and _is_cuda_qualname(q) and self.qualname(node.value):
                self.add(node.value, "amp-cuda-default" if q.startswith("torch.cuda.amp") else "cuda-api", q)
                return
        if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
            self.add(node, "is-cuda")
        self.generic_visit(node)

    # -- calls ------------------------------------------------------------------------------
    def _int_device(self, arg: ast.AST) -> bool:
        if isinstance(arg, ast.Constant) and type(arg.value) is int:
            return True
        if isinstance(arg, ast.Name) and INT_DEVICE_NAMES.match(arg.id):
            return True
        if isinstance(arg, ast.Attribute) and INT_DEVICE_NAMES.match(arg.attr):
            return True
        return False

    def _platform(self, node: ast.AST) -> None:
        """ "cuda" beside "rocm" in one call or comparison (`choices=["cuda", "rocm"]`,
        `getattr(args, "gpu_arch_type", "cuda") == "rocm"`) names the GPU platform a torch build
        targets, not a device: the reference is named by that entry of the catalogue."""
        strings = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if any(n.value == "rocm" for n in strings):
            for n in strings:
                if n.value == "cuda":
                    self.keyword_strings[id(n)] = PLATFORM

    def visit_Call(self, node: ast.Call) -> None:
        self._platform(node)
        for kw in node.keywords:
            if kw.arg == "device_types":
                for v in [kw.value, *getattr(kw.value, "elts", [])]:
                    if isinstance(v, ast.Constant) and isinstance(v.value, str):
                        self.keyword_strings[id(v)] = f'device_types="{v.value}"'
        f = node.func
        name = _call_name(node)
        q = self.qualname(f)
        # x.cuda(...): the attribute, unless it is torch.cuda itself (a cuda-api chain)
        if isinstance(f, ast.Attribute) and f.attr == "cuda" and not (q and _is_cuda_qualname(q)):
            self.add(f, "cuda-call")
            if node.args and self._int_device(node.args[0]):
                self.add(node.args[0], "int-device")
        # .to(0) / .to(local_rank)
        if isinstance(f, ast.Attribute) and f.attr == "to" and node.args and self._int_device(node.args[0]):
            self.add(node.args[0], "int-device")
        if q == "torch.device" and node.args and self._int_device(node.args[0]):
            self.add(node.args[0], "int-device")
        for kw in node.keywords:
            if kw.arg == "device" and self._int_device(kw.value):
                self.add(kw.value, "int-device")
        # AMP whose device is CUDA by default
        if q in AMP_NO_DEVICE and not node.args and not any(k.arg == "device" for k in node.keywords):
            self.add(node, "amp-cuda-default")
        if q in AMP_NO_ARG and not node.args and not node.keywords:
            self.add(node, "amp-cuda-default")
        # messages for people: strings inside are not references
        is_message = (
            name in MESSAGE_FUNCS
            or (isinstance(f, ast.Attribute) and f.attr in MESSAGE_METHODS)
            or (name is not None and name.endswith(("Error", "Exception", "Warning")))
        )
        # x.startswith("cuda"), self.assertEqual(p.device.type, "cuda"): comparisons too
        if isinstance(f, ast.Attribute) and f.attr in ("startswith", "assertEqual", "assertNotEqual"):
            for a in node.args:
                for s in ast.walk(a):
                    self.compare_strings.add(id(s))
        if not is_message and self.message_depth:
            # a call inside a message is code again: print(torch.zeros(1, device="cuda"))
            saved, self.message_depth = self.message_depth, 0
            self.generic_visit(node)
            self.message_depth = saved
            return
        if is_message:
            self.visit(f)
            self.message_depth += 1
            for a in node.args:
                self.visit(a)
            for k in node.keywords:
                self.visit(k)
            self.message_depth -= 1
            return
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        self.message_depth += 1
        self.generic_visit(node)
        self.message_depth -= 1

    def visit_Assert(self, node: ast.Assert) -> None:
        self.visit(node.test)
        if node.msg is not None:
            self.message_depth += 1
            self.visit(node.msg)
            self.message_depth -= 1

    # -- strings ----------------------------------------------------------------------------
    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        """`device_type == "cuda" and torch.version.hip is None`: and-ed with a test of the torch
        build (torch.version.hip / torch.version.cuda), the comparison guards a path only NVIDIA
        CUDA builds have; the reference is named by that entry of the catalogue."""
        if isinstance(node.op, ast.And) and any(
            self.qualname(n) in ("torch.version.hip", "torch.version.cuda")
            for v in node.values
            for n in ast.walk(v)
            if isinstance(n, ast.Attribute)
        ):
            for v in node.values:
                if isinstance(v, ast.Compare):
                    for n in [v.left, *v.comparators]:
                        if isinstance(n, ast.Constant) and n.value == "cuda":
                            self.keyword_strings[id(n)] = CUDA_BUILD
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        self._platform(node)
        for s in [node.left, *node.comparators]:
            for n in ast.walk(s):
                if isinstance(n, (ast.Constant, ast.JoinedStr)):
                    self.compare_strings.add(id(n))
        self.generic_visit(node)

    def _string_kind(self, node: ast.AST) -> str:
        return "device-compare" if id(node) in self.compare_strings else "device-string"

    def visit_Constant(self, node: ast.Constant) -> None:
        if self.message_depth or not isinstance(node.value, str):
            return
        if DEVICE_STRING.match(node.value):
            self.add(node, self._string_kind(node), self.keyword_strings.get(id(node), ""))
        elif node.value == "nccl":
            self.add(node, "nccl")

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if self.message_depth:
            return
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            head = first.value
            if head.startswith("cuda:") and " " not in head or (head == "cuda" and len(node.values) == 1):
                self.add(node, self._string_kind(node))
                return
        # a format spec or a nested f-string may hold a device string of its own
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                self.visit(v.value)

    def visit_Expr(self, node: ast.Expr) -> None:
        # a bare string statement is a docstring or a comment, not a reference
        if isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            return
        self.generic_visit(node)


def find_references(source: str, filename: str = "<input>") -> list[Reference]:
    """The CUDA-specific references in one Python source, sorted by position.

    Raises SyntaxError when the source does not parse."""
    with PARSE_LOCK:
        tree = ast.parse(source, filename=filename)
    finder = _Finder(source)
    # imports first, so that a name used above a later import still resolves
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if isinstance(node, ast.Import):
                    finder.aliases[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
                elif node.module and not node.level and a.name != "*":
                    finder.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    finder.visit(tree)
    return sorted(set(finder.refs))


# -- mapping references in a migrated file back to the input and to report rows ----------------


def map_lines(original: list[str], migrated: list[str]) -> dict[int, tuple[int, int]]:
    """For each 1-based line of `migrated`, the 1-based inclusive range of `original` lines it
    comes from (a line diff). Inserted lines map to the input line they were inserted at."""
    out: dict[int, tuple[int, int]] = {}
    sm = difflib.SequenceMatcher(a=original, b=migrated, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                out[j + 1] = (i1 + (j - j1) + 1, i1 + (j - j1) + 1)
            elif tag == "replace":
                out[j + 1] = (i1 + 1, max(i2, i1 + 1))
            else:  # insert: between original lines i1 and i1 + 1
                out[j + 1] = (max(i1, 1), i1 + 1)
    return out


@dataclass(frozen=True)
class Row:
    """One report row (a finding of report.json) for one file."""

    start_line: int
    end_line: int
    operation: str
    api: str
    message: str

    def covers(self, lo: int, hi: int) -> bool:
        """A row covers a reference when their input lines overlap, unless it is an operator-support
        row (UNKNOWN/UNSUPPORTED about an API that is not CUDA-specific): "torch.nn.Parameter is not in
        the npu list" on the same line says nothing about a .cuda() next to it."""
        if self.end_line < lo or self.start_line > hi:
            return False
        if self.operation in ("UNKNOWN", "UNSUPPORTED"):
            text = (self.api + " " + self.message).lower()
            return any(
                w in text for w in ("cuda", "nccl", "cudnn", "device", "autocast", "gradscaler", "amp")
            )
        return True


@dataclass(frozen=True)
class Unflagged:
    ref: Reference  # position in the migrated file
    input_lines: tuple[int, int]

    def __str__(self) -> str:
        lo, hi = self.input_lines
        where = f"input line {lo}" if lo == hi else f"input lines {lo}-{hi}"
        return f"{self.ref} (from {where}; no report row covers it)"


def unflagged(original: str, migrated: str, rows: Iterable[Row]) -> list[Unflagged]:
    """The references left in `migrated` that no report row covers."""
    refs = find_references(migrated)
    if not refs:
        return []
    mapping = map_lines(original.splitlines(), migrated.splitlines())
    rows = list(rows)
    out = []
    for r in refs:
        lo, hi = mapping.get(r.line, (r.line, r.line))
        if not any(row.covers(lo, hi) for row in rows):
            out.append(Unflagged(r, (lo, hi)))
    return out
