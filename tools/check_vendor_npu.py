#!/usr/bin/env python3
"""Check the catalogue's npu mappings against the vendor's own torch_npu (issue 31 §1).

Downloads the torch-npu wheels pinned in data/vendor/torch_npu_wheels.json (one per torch line
torchport supports for npu) with pip, verifies their sha256, and reads their Python source as
text with `ast`: nothing of the vendor's is imported or run. For every npu mapping of
data/catalogue/*.json that names a replacement, it checks that the name resolves in each wheel:

- torch_npu.* names: defined, imported (followed to the defining module), re-exported through
  `from .x import *`, a submodule, listed in `__all__`, exported by the C extension (a name the
  vendor's Python takes from torch_npu._C), or an operator of torch.ops.npu that torch_npu
  exports as a module attribute (csrc/aten/npu_native_functions_by_codegen.yaml + the
  `dir(torch.ops.npu)` export loop);
- attributes of config objects (a module-level instance of a class with __setattr__, such as
  torch_npu.npu.matmul): the attribute must be one that __setattr__ handles, or the write is
  silently dropped;
- torch.* names: the installed torch, else a patch torch_npu applies to torch;
- device strings, the collective backend, tensor methods: torch_npu's registration calls;
- environment variables: the name in the wheel's Python source or its shared libraries.

It also checks the catalogue's claims of absence ("torch_npu.npu has no X") and flags functions
that return None where the CUDA function returns a value: the catalogue must record those in
the mapping's "returns" field.

Writes data/vendor/torch_npu_check.json (read by tests/python/test_vendor_npu.py).

Usage: tools/check_vendor_npu.py [--wheels DIR] [--check] [--offline]
  --wheels DIR  where the wheels are downloaded (default build/torch_npu_wheels)
  --check       compare with the committed result; exit 1 when it is stale or a mapping fails
  --offline     do not download: use the wheels already in --wheels
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
WHEELS_FILE = ROOT / "data/vendor/torch_npu_wheels.json"
RESULT_FILE = ROOT / "data/vendor/torch_npu_check.json"
NAMESPACE_FILE = ROOT / "data/vendor/torch_npu_namespace.json"
NAMESPACE_MODULE = "torch_npu.npu"
PACKAGE = "torch_npu"
CODEGEN_YAML = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
PLACEHOLDERS = ("device", "module", "backend", "visible_devices", "amp_device")
ABSENCE = re.compile(r"^torch_npu\.npu has no (\w+)")


# --- one module's top-level namespace, read with ast ---------------------------------------------


@dataclass
class Binding:
    kind: str  # def, class, assign, import, from, ann
    line: int
    module: str = ""  # from-imports: the absolute module; import: the module bound
    name: str = ""  # from-imports: the name in that module
    call: str = ""  # assign: the dotted callee when the value is a call (an instance of it)


@dataclass
class ClassInfo:
    line: int
    attrs: dict[str, int] = field(default_factory=dict)  # class-level names -> line
    setattr_names: Optional[set[str]] = None  # names __setattr__ handles; None: no __setattr__
    setattr_stores: bool = False  # __setattr__ falls through to object/super: any name is kept
    setattr_line: int = 0


@dataclass
class ModuleInfo:
    name: str
    path: str
    is_package: bool
    all_names: Optional[list[str]] = None
    all_line: int = 0
    bindings: dict[str, Binding] = field(default_factory=dict)
    stars: list[tuple[str, int]] = field(default_factory=list)  # (absolute module, line)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    defs: dict[str, ast.AST] = field(default_factory=dict)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _absolute(module: str, is_package: bool, level: int, target: Optional[str]) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    return f"{base}.{target}" if target else base


def _str_list(node: ast.AST) -> Optional[list[str]]:
    if isinstance(node, (ast.List, ast.Tuple)):
        out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return out if len(out) == len(node.elts) else None
    return None


def _class_info(node: ast.ClassDef) -> ClassInfo:
    info = ClassInfo(line=node.lineno)
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info.attrs[stmt.name] = stmt.lineno
            if stmt.name == "__setattr__":
                info.setattr_line = stmt.lineno
                info.setattr_names, info.setattr_stores = _setattr_handled(stmt)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    info.attrs[t.id] = stmt.lineno
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            info.attrs[stmt.target.id] = stmt.lineno
    return info


def _setattr_handled(fn: ast.FunctionDef) -> tuple[set[str], bool]:
    """The attribute names a __setattr__(self_or_cls, name, value) acts on, and whether any other
    name is stored anyway (a call of object.__setattr__ / super().__setattr__ / __dict__ write)."""
    args = [a.arg for a in fn.args.args]
    pname = args[1] if len(args) > 1 else "name"
    names: set[str] = set()
    stores = False
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == pname:
            for comp in node.comparators:
                if isinstance(comp, ast.Constant) and isinstance(comp.value, str):
                    names.add(comp.value)
                else:
                    names.update(_str_list(comp) or [])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "__setattr__":
                stores = True
        if isinstance(node, ast.Subscript) and _dotted(node.value).endswith("__dict__"):
            stores = True
    return names, stores


def parse_module(name: str, path: str, source: str) -> ModuleInfo:
    is_package = path.endswith("__init__.py") or path.endswith("__init__.pyi")
    info = ModuleInfo(name=name, path=path, is_package=is_package)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return info

    def bind(target: ast.AST, b: Binding) -> None:
        if isinstance(target, ast.Name):
            info.bindings.setdefault(target.id, b)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                bind(elt, Binding("assign", b.line))

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                info.bindings.setdefault(stmt.name, Binding("def", stmt.lineno))
                info.defs.setdefault(stmt.name, stmt)
            elif isinstance(stmt, ast.ClassDef):
                info.bindings.setdefault(stmt.name, Binding("class", stmt.lineno))
                info.classes.setdefault(stmt.name, _class_info(stmt))
            elif isinstance(stmt, ast.Assign):
                call = _dotted(stmt.value.func) if isinstance(stmt.value, ast.Call) else ""
                for t in stmt.targets:
                    if isinstance(t, ast.Name) and t.id == "__all__":
                        names = _str_list(stmt.value)
                        if names is not None:
                            info.all_names, info.all_line = names, stmt.lineno
                    bind(t, Binding("assign", stmt.lineno, call=call))
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                call = _dotted(stmt.value.func) if isinstance(stmt.value, ast.Call) else ""
                info.bindings.setdefault(stmt.target.id, Binding("assign", stmt.lineno, call=call))
            elif isinstance(stmt, ast.AugAssign) and _dotted(stmt.target) == "__all__":
                more = _str_list(stmt.value)
                if more is not None:
                    info.all_names = (info.all_names or []) + more
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                fn = _dotted(stmt.value.func)
                if fn == "__all__.extend" and stmt.value.args:
                    info.all_names = (info.all_names or []) + (_str_list(stmt.value.args[0]) or [])
                elif fn == "__all__.append" and stmt.value.args:
                    arg = stmt.value.args[0]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        info.all_names = (info.all_names or []) + [arg.value]
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        info.bindings.setdefault(
                            alias.asname, Binding("import", stmt.lineno, module=alias.name)
                        )
                    else:
                        top = alias.name.split(".")[0]
                        info.bindings.setdefault(top, Binding("import", stmt.lineno, module=top))
            elif isinstance(stmt, ast.ImportFrom):
                mod = _absolute(name, is_package, stmt.level, stmt.module)
                for alias in stmt.names:
                    if alias.name == "*":
                        info.stars.append((mod, stmt.lineno))
                    else:
                        info.bindings.setdefault(
                            alias.asname or alias.name,
                            Binding("from", stmt.lineno, module=mod, name=alias.name),
                        )
            elif isinstance(stmt, ast.If):
                visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                visit(stmt.body)
                for h in stmt.handlers:
                    visit(h.body)
                visit(stmt.orelse)
                visit(stmt.finalbody)
            elif isinstance(stmt, (ast.With, ast.For, ast.While)):
                visit(stmt.body)

    visit(tree.body)
    return info


# --- a wheel: its modules, C-extension names, operators and binaries -----------------------------


@dataclass
class Found:
    ok: bool
    how: str
    where: str = ""
    # what the name is, for the next attribute: ("module", name) ("class", module, class)
    # ("instance", module, class) ("cext", dotted) ("op",) ("def", module, name)
    what: tuple[str, ...] = ()


class Wheel:
    """The Python layer of one torch_npu wheel, as text: {module name: source}."""

    def __init__(self, version: str, sources: dict[str, str], extra: Optional[dict[str, str]] = None):
        self.version = version
        self.paths: dict[str, str] = {}
        self.sources: dict[str, str] = {}
        for path, text in sources.items():
            mod = path[: -len("/__init__.py")] if path.endswith("/__init__.py") else path[:-3]
            if path.endswith(".pyi"):
                mod = path[: -len("/__init__.pyi")] if path.endswith("/__init__.pyi") else path[:-4]
                if mod.replace("/", ".") in self.paths:
                    continue
            self.paths[mod.replace("/", ".")] = path
            self.sources[path] = text
        self.extra = extra or {}  # other text files of the wheel (the codegen yaml)
        self.binaries: dict[str, bytes] = {}
        self._mods: dict[str, ModuleInfo] = {}
        self._cext: Optional[set[str]] = None
        self._ops: Optional[tuple[set[str], str]] = None

    @classmethod
    def from_file(cls, path: Path, version: str) -> Wheel:
        sources: dict[str, str] = {}
        extra: dict[str, str] = {}
        binaries: dict[str, bytes] = {}
        with zipfile.ZipFile(path) as zf:
            for n in zf.namelist():
                if not n.startswith(PACKAGE + "/"):
                    continue
                if n.endswith((".py", ".pyi")):
                    sources[n] = zf.read(n).decode("utf-8", "replace")
                elif n == CODEGEN_YAML:
                    extra[n] = zf.read(n).decode("utf-8", "replace")
                elif n.endswith(".so") or ".so." in n:
                    binaries[n] = zf.read(n)
        w = cls(version, sources, extra)
        w.binaries = binaries
        return w

    def module(self, name: str) -> Optional[ModuleInfo]:
        if name not in self.paths:
            return None
        if name not in self._mods:
            path = self.paths[name]
            self._mods[name] = parse_module(name, path, self.sources[path])
        return self._mods[name]

    # names the Python source takes from the C extension: torch_npu._C.X, from torch_npu._C import X
    def cext_names(self) -> set[str]:
        if self._cext is None:
            out: set[str] = set()
            pat = re.compile(r"\btorch_npu\._C((?:\.\w+)+)")
            for text in self.sources.values():
                for m in pat.finditer(text):
                    parts = m.group(1).strip(".").split(".")
                    for i in range(1, len(parts) + 1):
                        out.add("torch_npu._C." + ".".join(parts[:i]))
                for m in re.finditer(
                    r"from\s+torch_npu\._C((?:\.\w+)*)\s+import\s+(?:\(([^)]*)\)|([^\n#]*))", text
                ):
                    for n in (
                        (m.group(2) or m.group(3) or "").replace("\n", " ").replace("\\", " ").split(",")
                    ):
                        n = n.strip().split(" as ")[0].strip()
                        if n:
                            out.add(f"torch_npu._C{m.group(1)}.{n}")
            self._cext = out
        return self._cext

    def npu_ops(self) -> tuple[set[str], str]:
        """Operators of torch.ops.npu (the codegen yaml) and where torch_npu exports them as module
        attributes (a `for name in dir(torch.ops.npu)` loop); empty without either."""
        if self._ops is None:
            loop = ""
            for path, text in sorted(self.sources.items()):
                for i, line in enumerate(text.splitlines(), 1):
                    if re.match(r"\s*for\s+\w+\s+in\s+dir\(torch\.ops\.npu\)", line):
                        loop = loop or f"{path}:{i}"
            names: set[str] = set()
            yaml = self.extra.get(CODEGEN_YAML, "")
            for m in re.finditer(r"^\s*-?\s*func:\s*([A-Za-z_]\w*)", yaml, re.M):
                names.add(m.group(1))
            self._ops = (names if loop else set(), loop)
        return self._ops

    def uses_attribute(self, owner: str, attr: str) -> str:
        """file:line of a use of `owner.attr` in the Python source ("" = none)."""
        pat = re.compile(rf"\b{re.escape(owner)}\.{re.escape(attr)}\b")
        for path, text in sorted(self.sources.items()):
            m = pat.search(text)
            if m:
                return f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
        return ""

    def find_env(self, name: str) -> tuple[str, str]:
        """(how, where) the wheel reads the environment variable `name`, best evidence first: a read in
        the Python source (os.getenv / os.environ), a string in a shared library (the C++ side reads
        it there), any other mention in the Python source. ("", "") = nowhere."""
        read = re.compile(
            rf"(getenv|environ\.get|environ\[|environ\.setdefault)\(?\s*[\"']{re.escape(name)}[\"']"
        )
        word = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
        for path, text in sorted(self.sources.items()):
            m = read.search(text)
            if m:
                return "read by the Python source", f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
        raw = name.encode()
        for path, data in sorted(self.binaries.items()):
            i = data.find(raw + b"\0")
            if i >= 0 and (i == 0 or not (chr(data[i - 1]).isalnum() or data[i - 1] == ord("_"))):
                return "a string in a shared library of the wheel", path
        for path, text in sorted(self.sources.items()):
            m = word.search(text)
            if m:
                return "named by the Python source", f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
        return "", ""

    # --- resolving ----------------------------------------------------------------------------

    def resolve(self, dotted: str) -> Found:
        parts = dotted.split(".")
        if parts[0] != PACKAGE:
            return Found(False, f"not a {PACKAGE} name")
        mod = PACKAGE
        i = 1
        while i < len(parts) and f"{mod}.{parts[i]}" in self.paths:
            mod = f"{mod}.{parts[i]}"
            i += 1
        if i == len(parts):
            return Found(True, "module", self.paths[mod], ("module", mod))
        found = self.in_module(mod, parts[i], set())
        i += 1
        while found.ok and i < len(parts):
            found = self.attribute(found, parts[i])
            i += 1
        return found

    def in_module(self, mod: str, name: str, seen: set[tuple[str, str]]) -> Found:
        if (mod, name) in seen:
            return Found(False, f"import cycle at {mod}.{name}")
        seen = seen | {(mod, name)}
        if mod == f"{PACKAGE}._C" or mod.startswith(f"{PACKAGE}._C."):
            return self.cext(f"{mod}.{name}")
        info = self.module(mod)
        if info is None:
            if mod.split(".")[0] != PACKAGE:
                return Found(True, f"imported from {mod} (outside torch_npu: not checked here)", "", ())
            return Found(False, f"no module {mod} in the wheel")
        b = info.bindings.get(name)
        if b is not None:
            where = f"{info.path}:{b.line}"
            if b.kind == "from":
                inner = self.in_module(b.module, b.name, seen)
                if not inner.ok and f"{b.module}.{b.name}" in self.paths:  # from pkg import submodule
                    return Found(
                        True,
                        "submodule",
                        self.paths[f"{b.module}.{b.name}"],
                        ("module", f"{b.module}.{b.name}"),
                    )
                if inner.ok:
                    return Found(True, inner.how, inner.where or where, inner.what)
                return Found(False, f"imported at {where} from {b.module}, where: {inner.how}", where)
            if b.kind == "import":
                return Found(True, "module", where, ("module", b.module))
            if b.kind == "class":
                return Found(True, "class", where, ("class", mod, name))
            if b.kind == "def":
                return Found(True, "function", where, ("def", mod, name))
            if b.call:
                cls = self.class_of(mod, b.call)
                if cls is not None:
                    return Found(True, f"instance of {cls[1]}", where, ("instance", cls[0], cls[1]))
            return Found(True, "assigned", where, ())
        sub = f"{mod}.{name}"
        if sub in self.paths:
            return Found(True, "submodule", self.paths[sub], ("module", sub))
        for star, _line in info.stars:
            star_info = self.module(star)
            if star_info is None:
                continue
            exported = star_info.all_names
            if exported is None:
                exported = [n for n in star_info.bindings if not n.startswith("_")]
            if name in exported:
                inner = self.in_module(star, name, seen)
                if inner.ok:
                    return inner
        if info.all_names is not None and name in info.all_names:
            return Found(True, "listed in __all__ only", f"{info.path}:{info.all_line}", ())
        if mod == PACKAGE:
            ops, loop = self.npu_ops()
            if name in ops:
                return Found(
                    True,
                    "operator of torch.ops.npu, exported by the dir(torch.ops.npu) loop",
                    f"{CODEGEN_YAML}; {loop}",
                    ("op",),
                )
        return Found(False, f"{mod} has no {name}", info.path)

    def class_of(self, mod: str, call: str) -> Optional[tuple[str, str]]:
        """The (module, class) a dotted callee names, followed through imports."""
        head, _, rest = call.partition(".")
        info = self.module(mod)
        if info is None:
            return None
        if not rest:
            if head in info.classes:
                return (mod, head)
            b = info.bindings.get(head)
            if b and b.kind == "from":
                target = self.module(b.module)
                if target and b.name in target.classes:
                    return (b.module, b.name)
            return None
        b = info.bindings.get(head)
        target_mod = ""
        if b and b.kind == "from" and f"{b.module}.{b.name}" in self.paths:
            target_mod = f"{b.module}.{b.name}"
        elif b and b.kind == "import":
            target_mod = b.module
        elif f"{mod}.{head}" in self.paths:
            target_mod = f"{mod}.{head}"
        if not target_mod:
            return None
        for part in rest.split(".")[:-1]:
            target_mod = f"{target_mod}.{part}"
        last = rest.split(".")[-1]
        target = self.module(target_mod)
        if target and last in target.classes:
            return (target_mod, last)
        return None

    def attribute(self, found: Found, attr: str) -> Found:
        what = found.what
        if not what:
            return Found(
                False, f"{found.how}: its attribute {attr} cannot be checked from the source", found.where
            )
        if what[0] == "module":
            return self.in_module(what[1], attr, set())
        if what[0] == "cext":
            return self.cext(f"{what[1]}.{attr}")
        if what[0] in ("class", "instance"):
            info = self.module(what[1])
            cls = info.classes.get(what[2]) if info else None
            if cls is None:
                return Found(False, f"class {what[2]} not found")
            if what[0] == "instance" and cls.setattr_names is not None:
                where = f"{info.path}:{cls.setattr_line}" if info else ""
                if attr in cls.setattr_names:
                    return Found(True, f"handled by {what[2]}.__setattr__", where, ())
                if not cls.setattr_stores:
                    handled = ", ".join(sorted(cls.setattr_names)) or "nothing"
                    return Found(
                        False,
                        f"{what[2]}.__setattr__ handles only {handled}: a write of "
                        f"{attr} is silently ignored",
                        where,
                    )
                if attr not in cls.attrs:
                    return Found(True, f"stored by {what[2]}.__setattr__ (it keeps any name)", where, ())
            if attr in cls.attrs:
                return Found(True, f"attribute of class {what[2]}", f"{info.path}:{cls.attrs[attr]}", ())
            return Found(False, f"class {what[2]} has no {attr}", f"{info.path}:{cls.line}" if info else "")
        return Found(
            False, f"{found.how}: its attribute {attr} cannot be checked from the source", found.where
        )

    def cext(self, dotted: str) -> Found:
        if dotted in self.cext_names():
            owner, _, last = dotted.rpartition(".")
            return Found(
                True, "C extension (the vendor's Python takes it from torch_npu._C)", "", ("cext", dotted)
            )
        # an attribute of a C-extension object (an enum member): a use of Owner.attr in the source
        owner, _, attr = dotted.rpartition(".")
        short = owner.rsplit(".", 1)[-1]
        if owner in self.cext_names():
            where = self.uses_attribute(short, attr)
            if where:
                return Found(
                    True,
                    f"C extension: {short}.{attr} is used by the vendor's Python",
                    where,
                    ("cext", dotted),
                )
            return Found(
                False,
                f"{dotted}: the vendor's Python never names it (C extension: "
                "cannot be checked without the binary)",
            )
        return Found(False, f"{dotted} is not named by the vendor's Python")

    def namespace(self, mod: str) -> list[str]:
        """The public names `mod` resolves: bindings, submodules, star re-exports, __all__."""
        info = self.module(mod)
        if info is None:
            return []
        names = {
            n
            for n, b in info.bindings.items()  # not what it imports from outside torch_npu
            if b.kind not in ("import", "from") or b.module.split(".")[0] == PACKAGE
        }
        names |= set(info.all_names or [])
        names |= {
            m[len(mod) + 1 :] for m in self.paths if m.startswith(mod + ".") and "." not in m[len(mod) + 1 :]
        }
        for star, _ in info.stars:
            star_info = self.module(star)
            if star_info is not None:
                names |= set(star_info.all_names if star_info.all_names is not None else star_info.bindings)
        return sorted(n for n in names if not n.startswith("_") and self.in_module(mod, n, set()).ok)

    def returns_none(self, dotted: str) -> list[int]:
        """Lines where the Python function `dotted` returns None explicitly ([] if none)."""
        found = self.resolve(dotted)
        if not found.ok or not found.what or found.what[0] != "def":
            return []
        info = self.module(found.what[1])
        fn = info.defs.get(found.what[2]) if info else None
        if fn is None:
            return []
        lines = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and (
                node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)
            ):
                lines.append(node.lineno)
        return lines


# --- the catalogue's npu mappings ----------------------------------------------------------------


def npu_target() -> dict[str, Any]:
    doc = json.loads((ROOT / "data/targets.json").read_text())
    return next(t for t in doc["targets"] if t["name"] == "npu")


def catalogue_mappings(root: Path = ROOT) -> list[dict[str, Any]]:
    """Every npu mapping (explicit, or the '*' default) of data/catalogue/*.json."""
    out = []
    for path in sorted((root / "data/catalogue").glob("*.json")):
        doc = json.loads(path.read_text())
        for e in doc.get("entries", []):
            targets = e.get("targets", {})
            m = targets.get("npu", targets.get("*"))
            if m is None:
                continue
            out.append(
                {
                    "file": path.name,
                    "api": e["api"],
                    "kind": e["kind"],
                    "mapping": m,
                    "explicit": "npu" in targets,
                }
            )
    return out


def expand(text: str, target: dict[str, Any]) -> str:
    for key in PLACEHOLDERS:
        text = text.replace("{" + key + "}", str(target.get(key, "")))
    return text


def name_of(replacement: str) -> str:
    """The dotted name a replacement starts with ('torch.x(\"high\")' -> 'torch.x')."""
    m = re.match(r"\.?[A-Za-z_][\w.]*", replacement.strip().strip('"'))
    return m.group(0).rstrip(".") if m else ""


def _ver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:2])


class Checker:
    def __init__(self, wheels: list[tuple[dict[str, Any], Wheel]], torch_mod: Any = None):
        self.wheels = wheels
        self.torch = torch_mod
        self.target = npu_target()

    def torch_name(self, dotted: str) -> tuple[bool, str]:
        obj = self.torch
        if obj is None:
            return False, "torch is not installed"
        for part in dotted.split(".")[1:]:
            if not hasattr(obj, part):
                return False, f"installed torch {self.torch.__version__.split('+')[0]} has no {dotted}"
            obj = getattr(obj, part)
        return True, f"installed torch {self.torch.__version__.split('+')[0]}"

    def torch_patch(self, wheel: Wheel, dotted: str) -> str:
        """Where torch_npu writes `dotted` (a torch.* name) into torch: `torch.a.b = ...`, or the path
        as a string in a patch table ('a.b')."""
        assign = re.compile(rf"^\s*{re.escape(dotted)}\s*=(?!=)", re.M)
        rel = dotted.split(".", 1)[1]
        table = re.compile(rf"[\"']{re.escape(rel)}[\"']")
        for path, text in sorted(wheel.sources.items()):
            if "/contrib/transfer_to_npu" in path or "/testing/" in path:
                continue  # not applied by `import torch_npu`
            for pat in (assign, table):
                m = pat.search(text)
                if m:
                    return f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
        return ""

    def check_one(self, kind: str, name: str, wheel: Wheel) -> dict[str, Any]:
        """Does `name` (expanded) resolve in `wheel`? {ok, how, where}."""
        if kind == "env_var":
            how, where = wheel.find_env(name)
            if not where:
                how = "the name occurs nowhere in the wheel (Python source or shared libraries)"
            return {"ok": bool(where), "how": how, "where": where}
        if kind == "device_string":
            pat = re.compile(rf"rename_privateuse1_backend\(\s*[\"']{re.escape(name)}[\"']")
            for path, text in sorted(wheel.sources.items()):
                m = pat.search(text)
                if m:
                    return {
                        "ok": True,
                        "how": "torch.utils.rename_privateuse1_backend",
                        "where": f"{path}:{text.count(chr(10), 0, m.start()) + 1}",
                    }
            return {"ok": False, "how": f"torch_npu does not register the device {name!r}", "where": ""}
        if kind == "backend_string":
            pat = re.compile(rf"register_backend\(\s*[\"']{re.escape(name)}[\"']")
            for path, text in sorted(wheel.sources.items()):
                m = pat.search(text)
                if m:
                    return {
                        "ok": True,
                        "how": "torch.distributed.Backend.register_backend",
                        "where": f"{path}:{text.count(chr(10), 0, m.start()) + 1}",
                    }
            return {"ok": False, "how": f"torch_npu does not register the backend {name!r}", "where": ""}
        if kind == "method":  # .npu / .is_npu: generated by torch for the renamed PrivateUse1 backend
            dev = self.target["device"]
            if name not in (f".{dev}", f".is_{dev}"):
                return {"ok": False, "how": f"not a method torch generates for {dev}", "where": ""}
            pat = re.compile(r"generate_methods_for_privateuse1_backend\((?:[^)]*)for_tensor=True", re.S)
            for path, text in sorted(wheel.sources.items()):
                m = pat.search(text)
                if m:
                    return {
                        "ok": True,
                        "how": "torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True)",
                        "where": f"{path}:{text.count(chr(10), 0, m.start()) + 1}",
                    }
            return {"ok": False, "how": "torch_npu does not generate the tensor methods", "where": ""}
        if name.startswith(PACKAGE + "."):
            f = wheel.resolve(name)
            return {"ok": f.ok, "how": f.how, "where": f.where}
        if name.startswith("torch.") or name == "torch":
            ok, how = self.torch_name(name)
            if ok:
                return {"ok": True, "how": how, "where": ""}
            where = self.torch_patch(wheel, name)
            if where:
                return {"ok": True, "how": "patched into torch by `import torch_npu`", "where": where}
            return {"ok": False, "how": how + ", and torch_npu does not patch it in", "where": ""}
        return {"ok": False, "how": f"not a name the check knows how to resolve: {name!r}", "where": ""}

    def kind_of(self, entry: dict[str, Any], text: str) -> tuple[str, str]:
        """(how to check, what to check) for an expanded replacement."""
        if entry["kind"] == "env":
            return "env_var", text
        if entry["kind"] == "method":
            return "method", text
        if entry["kind"] == "string" or re.fullmatch(r'"[^"]*"', text):
            name = text.strip('"').split(":")[0]  # "npu:N" -> the device
            return ("backend_string" if name == self.target["backend"] else "device_string"), name
        return "name", name_of(text)

    def run(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        rows = []
        for e in entries:
            m = e["mapping"]
            repl = m.get("replacement", "")
            if not repl:
                continue
            if e["kind"] == "string" and repl == e["api"]:
                continue  # a string kept as it is (`device_types="cuda"`) names nothing of torch_npu
            if m.get("rewritten_by"):
                continue  # a rewrite of the code by a rule (comparisons), not a name of torch_npu
            rows.append(self.row(e, m, e["api"], repl))
            for api, moved in m.get("moves_with", {}).items():  # names the vendor moves with this one
                rows.append(self.row(e, m, api, moved, moved_with=e["api"]))
        outside = [r for r in rows if r.get("outside")]
        checked = [r for r in rows if not r.get("outside")]
        unresolved = [r for r in checked if not r["ok"]]
        absences = self.absences(entries)
        returns = self.returns(entries)
        unresolved = [r for r in rows if not r["ok"]]
        return {
            "about": "GENERATED by tools/check_vendor_npu.py from the torch-npu wheels of "
            "data/vendor/torch_npu_wheels.json (their Python source read with ast, never imported) and "
            "data/catalogue/*.json: do not edit. tests/python/test_vendor_npu.py reads it.",
            "torch": self.torch.__version__.split("+")[0] if self.torch else "",
            "wheels": [pin["version"] for pin, _ in self.wheels],
            "summary": {
                "mappings_checked": len(checked),
                "resolved": len(checked) - len(unresolved),
                "unresolved": len(unresolved),
                "outside_the_wheel": len(outside),
                "absence_claims": len(absences),
                "absence_contradicted": sum(1 for a in absences if a["contradicted"]),
                "returns_none": len(returns),
                "returns_unrecorded": sum(1 for r in returns if not r["recorded"]),
            },
            "mappings": rows,
            "absences": absences,
            "returns": returns,
        }

    def row(
        self, e: dict[str, Any], m: dict[str, Any], api: str, repl: str, moved_with: str = ""
    ) -> dict[str, Any]:
        kind, name = self.kind_of(e, expand(repl, self.target))
        row: dict[str, Any] = {
            "file": e["file"],
            "api": api,
            "replacement": repl,
            "checked": name,
            "kind": kind,
            "status": m.get("status", ""),
        }
        if moved_with:
            row["moved_with"] = moved_with
        if m.get("read_by"):  # read by something outside the wheel (CANN): said, not checked
            row.update(ok=True, outside=m["read_by"], wheels={})
            return row
        per: dict[str, Any] = {}
        for pin, wheel in self.wheels:
            min_torch = m.get("min_torch", "")
            if min_torch and _ver(pin["torch"]) < _ver(min_torch):
                per[pin["version"]] = {"ok": True, "how": f"not required: min_torch {min_torch}", "where": ""}
                continue
            per[pin["version"]] = self.check_one(kind, name, wheel)
        row.update(ok=all(r["ok"] for r in per.values()), wheels=per)
        return row

    def absences(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The catalogue's "torch_npu.npu has no X": is X really missing in every wheel?"""
        out = []
        for e in entries:
            m = e["mapping"]
            hit = ABSENCE.match(m.get("note", ""))
            if m.get("replacement") or not hit:
                continue
            name = f"torch_npu.npu.{hit.group(1)}"
            found = {pin["version"]: self.check_one("name", name, w) for pin, w in self.wheels}
            out.append(
                {
                    "api": e["api"],
                    "claim": m["note"],
                    "checked": name,
                    "contradicted": [v for v, r in found.items() if r["ok"]],
                    "where": next((r["where"] for r in found.values() if r["ok"]), ""),
                }
            )
        return out

    def returns(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """torch_npu functions that return None where the CUDA function returns a value."""
        out = []
        for e in entries:
            m = e["mapping"]
            name = name_of(expand(m.get("replacement", ""), self.target))
            if (
                e["kind"] != "function"
                or not name.startswith(PACKAGE + ".")
                or not e["api"].startswith("torch.")
            ):
                continue
            cuda_ret = self.cuda_return(e["api"])
            if not cuda_ret:
                continue
            lines = {pin["version"]: w.returns_none(name) for pin, w in self.wheels}
            lines = {v: ls for v, ls in lines.items() if ls}
            if lines:
                out.append(
                    {
                        "api": e["api"],
                        "replacement": name,
                        "cuda_returns": cuda_ret,
                        "returns_none_at": lines,
                        "recorded": bool(m.get("returns")),
                    }
                )
        return out

    def cuda_return(self, api: str) -> str:
        """The return annotation of the installed torch's CUDA function, when it is not None."""
        import inspect

        obj = self.torch
        if obj is None:
            return ""
        for part in api.split(".")[1:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return ""
        try:
            ann = inspect.signature(obj).return_annotation
        except (TypeError, ValueError):
            return ""
        if ann is inspect.Signature.empty or ann is None or "None" in str(ann):
            return ""
        return ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)).replace("typing.", "")


# --- wheels: download and verify --------------------------------------------------------------


def pins() -> list[dict[str, Any]]:
    return json.loads(WHEELS_FILE.read_text())["wheels"]


def fetch(pin: dict[str, Any], wheels_dir: Path, offline: bool) -> Path:
    path = wheels_dir / pin["filename"]
    if not path.exists() and not offline:
        wheels_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            pin["python"],
            "--platform",
            pin["platform"],
            f"torch-npu=={pin['version']}",
            "-d",
            str(wheels_dir),
            "--quiet",
        ]
        subprocess.run(cmd, check=True)
    if not path.exists():
        raise SystemExit(f"check_vendor_npu: {path} is missing (download failed, or --offline)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pin["sha256"]:
        raise SystemExit(f"check_vendor_npu: {path.name}: sha256 {digest}, expected {pin['sha256']}")
    return path


def namespace_doc(loaded: list[tuple[dict[str, Any], Wheel]]) -> dict[str, Any]:
    return {
        "about": f"GENERATED by tools/check_vendor_npu.py: the public names of {NAMESPACE_MODULE} in each "
        "torch-npu wheel of data/vendor/torch_npu_wheels.json, read from its Python source (defined, "
        "imported, submodules, star re-exports, __all__). tools/gen_catalogue.py maps torch.cuda.X to "
        f"{NAMESPACE_MODULE}.X from it: do not edit.",
        "module": NAMESPACE_MODULE,
        "wheels": {
            pin["version"]: {"torch": pin["torch"], "names": w.namespace(NAMESPACE_MODULE)}
            for pin, w in loaded
        },
    }


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheels", type=Path, default=ROOT / "build/torch_npu_wheels")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--offline", action="store_true")
    args = ap.parse_args(argv)
    try:
        import torch  # the installed torch: torch.* replacements and the CUDA return types
    except ImportError:
        torch = None
    loaded = []
    for pin in pins():
        path = fetch(pin, args.wheels, args.offline)
        loaded.append((pin, Wheel.from_file(path, pin["version"])))
    result = Checker(loaded, torch).run(catalogue_mappings())
    outputs = {RESULT_FILE: _dump(result), NAMESPACE_FILE: _dump(namespace_doc(loaded))}
    s = result["summary"]
    print(
        f"check_vendor_npu: {s['mappings_checked']} npu mappings checked against torch_npu "
        f"{', '.join(result['wheels'])}: {s['resolved']} resolved, {s['unresolved']} unresolved, "
        f"{s['outside_the_wheel']} read outside the wheel; "
        f"{s['absence_contradicted']} of {s['absence_claims']} claims of absence contradicted; "
        f"{s['returns_unrecorded']} of {s['returns_none']} None returns unrecorded"
    )
    failures = 0
    for r in result["mappings"]:
        if r.get("outside"):
            print(f"  not checked: {r['api']} -> {r['checked']} ({r['file']}): read by {r['outside']}")
        if not r["ok"]:
            failures += 1
            bad = {v: w["how"] for v, w in r["wheels"].items() if not w["ok"]}
            print(f"  unresolved: {r['api']} -> {r['checked']} ({r['file']}): {bad}")
    for a in result["absences"]:
        if a["contradicted"]:
            failures += 1
            print(
                f"  absence contradicted: {a['api']}: {a['checked']} exists in {a['contradicted']} "
                f"({a['where']})"
            )
    for r in result["returns"]:
        if not r["recorded"]:
            failures += 1
            print(f"  None return not recorded: {r['api']} -> {r['replacement']} {r['returns_none_at']}")
    for path, text in outputs.items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            diff = difflib.unified_diff(
                old.splitlines(), text.splitlines(), str(path), "regenerated", lineterm=""
            )
            print("\n".join(list(diff)[:80]))
            print(f"{path.relative_to(ROOT)} is stale: run tools/check_vendor_npu.py", file=sys.stderr)
            failures += 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
