"""The Python half has one direction (docs/architecture.md, "Layers: imports point one way").

Every module of python/torchport is read with `ast` (nothing is imported) and its imports are resolved to the
package's own modules: at module level, inside functions and under `if TYPE_CHECKING:` alike, since each of
them is a dependency someone has to follow. The modules are grouped in rooms: a top-level module
(`targets.py`) or a subpackage (`verify/`). The test fails on:
- a cycle between modules, or between rooms;
- an upward import: a room importing a room of a higher layer than its own (LAYERS below);
- a private name crossing rooms: `from torchport.check_ops._trace import user_site`,
  `from torchport.runtime import _runner` or `rt._active` (rt being torchport.runtime) reaches into another
  room's private module or name. Rooms whose
  own name starts with an underscore (`_command`, `_leave`) are the package's shared internals: private to
  torchport, public to every room in it.
A room missing from LAYERS fails too: a new room says where it stands.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

PKG_DIR = Path(__file__).resolve().parents[2] / "python" / "torchport"
PKG = "torchport"
ROOT_ROOM = "torchport"  # torchport/__init__.py (the version)

# The layers, bottom first. A room may import rooms of its own layer (with no cycle) and of the layers below,
# never of a layer above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "shared core: per-target facts, versions, user frames, files, the command line, running a script,"
        " reading report.json",
        (
            ROOT_ROOM,
            "targets",
            "_versions",
            "_frames",
            "_files",
            "_core",
            "_leave",
            "_lazy",
            "_runner",
            "_command",
            "config",
            "third_party",
            "report_json",
        ),
    ),
    ("the runtime redirection and the report pages", ("runtime", "pages")),
    ("the runtime tools", ("check_ops", "probe", "cloud", "dev")),
    ("the rehearsal device (check-ops' classifier on a CPU-backed device)", ("rehearse",)),
    ("verify (runs the other tools)", ("verify",)),
    (
        "front ends: the command, the static commands, the import hooks",
        ("static_cli", "cli", "__main__", "auto", "_autohook"),
    ),
)


@dataclass(frozen=True)
class Edge:
    src: str  # importing module
    dst: str  # imported module
    line: int
    names: tuple[str, ...]  # the names taken from dst (`from dst import a, b`), () for `import dst`

    def where(self) -> str:
        return f"{module_path(self.src)}:{self.line}"


def module_path(mod: str) -> str:
    parts = mod.split(".")[1:]
    path = PKG_DIR.joinpath(*parts)
    if path.is_dir():
        return str((path / "__init__.py").relative_to(PKG_DIR.parent))
    return str(path.with_suffix(".py").relative_to(PKG_DIR.parent))


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PKG_DIR.rglob("*.py")):
        rel = path.relative_to(PKG_DIR.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def room_of(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ROOT_ROOM


def _resolve(name: str, known: dict[str, Path]) -> Optional[str]:
    """The longest prefix of `name` that is one of the package's modules."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in known:
            return cand
        parts.pop()
    return None


def _package_of(mod: str, path: Path) -> str:
    return mod if path.name == "__init__.py" else mod.rpartition(".")[0]


def imports(mod: str, path: Path, known: dict[str, Path]) -> Iterator[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PKG:
                    dst = _resolve(alias.name, known)
                    if dst:
                        yield Edge(mod, dst, node.lineno, ())
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(mod, path).split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != PKG:
                continue
            plain: list[str] = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from torchport.runtime import _runner`: the module itself
                    yield Edge(mod, sub, node.lineno, ())
                else:
                    plain.append(alias.name)
            dst = _resolve(target, known)
            if plain and dst:
                yield Edge(mod, dst, node.lineno, tuple(plain))


# The package's compiled extension modules (no .py file: built from C by CMakeLists.txt into the wheel), each
# with its source. They import nothing of the package, so they are leaves of the graph.
EXTENSIONS: dict[str, Path] = {
    "torchport.runtime._speedups": PKG_DIR.parent.parent / "src" / "speedups" / "_speedups.c",
}


def test_the_extension_modules_exist() -> None:
    for name, source in EXTENSIONS.items():
        assert source.is_file(), f"{name}: its source {source} is gone"
        assert module_path(name.rpartition(".")[0]).endswith("__init__.py"), f"{name}: no such package"


def graph() -> list[Edge]:
    py = modules()
    known = {**py, **EXTENSIONS}
    return [e for mod, path in py.items() for e in imports(mod, path, known) if e.src != e.dst]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_crossings(edges: list[Edge]) -> list[str]:
    out = []
    for e in edges:
        src_room, dst_room = room_of(e.src), room_of(e.dst)
        if src_room == dst_room:
            continue
        inner = e.dst.split(".")[2:]  # the module path inside the other room
        bad = [p for p in inner if _private(p)] + [n for n in e.names if _private(n)]
        if bad:
            out.append(f"{e.where()}: imports {', '.join(bad)} from {e.dst} (private to {dst_room})")
    return out


def _module_aliases(tree: ast.AST, mod: str, known: dict[str, Path]) -> dict[str, str]:
    """Local name -> the package module it is bound to (`import torchport.runtime as rt`,
    `from torchport import runtime`), for the names that stand for a module of another room."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in known:
                    out[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in known:
                    out[alias.asname or alias.name] = sub
    return {k: v for k, v in out.items() if room_of(v) != room_of(mod)}


def private_attributes() -> list[str]:
    """`rt._active` where rt is a module of another room: a private name reached through its module."""
    known = modules()
    out = []
    for mod, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases = _module_aliases(tree, mod, known)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
            ):
                target = aliases[node.value.id]
                out.append(
                    f"{module_path(mod)}:{node.lineno}: uses {node.value.id}.{node.attr} of {target} "
                    f"(private to {room_of(target)})"
                )
    return sorted(set(out))


def _cycles(nodes: set[str], succ: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


def module_cycles(edges: list[Edge]) -> list[str]:
    succ: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        succ[e.src].add(e.dst)
    out = []
    for comp in _cycles(set(modules()), succ):
        inside = sorted({f"{e.where()} -> {e.dst}" for e in edges if e.src in comp and e.dst in comp})
        out.append(" <-> ".join(module_path(m) for m in comp) + ": " + "; ".join(inside))
    return out


def room_cycles(edges: list[Edge]) -> list[str]:
    succ: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        if room_of(e.src) != room_of(e.dst):
            succ[room_of(e.src)].add(room_of(e.dst))
    rooms = {room_of(m) for m in modules()}
    out = []
    for comp in _cycles(rooms, succ):
        inside = sorted(
            {
                f"{e.where()} -> {e.dst}"
                for e in edges
                if room_of(e.src) in comp and room_of(e.dst) in comp and room_of(e.src) != room_of(e.dst)
            }
        )
        out.append(" <-> ".join(comp) + ": " + "; ".join(inside))
    return out


def layer_of() -> dict[str, int]:
    return {room: i for i, (_, rooms) in enumerate(LAYERS) for room in rooms}


def upward(edges: list[Edge]) -> list[str]:
    layer = layer_of()
    out = []
    for e in edges:
        a, b = room_of(e.src), room_of(e.dst)
        if a != b and a in layer and b in layer and layer[b] > layer[a]:
            out.append(
                f"{e.where()}: {a} (layer {layer[a]}: {LAYERS[layer[a]][0]}) imports {e.dst} "
                f"(layer {layer[b]}: {LAYERS[layer[b]][0]})"
            )
    return out


def test_every_room_has_a_layer() -> None:
    rooms = {room_of(m) for m in modules()}
    declared = [room for _, rs in LAYERS for room in rs]
    assert len(declared) == len(set(declared)), "a room is in two layers"
    assert sorted(rooms - set(declared)) == [], "rooms without a layer: add them to LAYERS"
    assert sorted(set(declared) - rooms) == [], "LAYERS names rooms that do not exist"


def test_no_cycle_between_modules() -> None:
    found = module_cycles(graph())
    assert not found, "import cycles between modules:\n" + "\n".join(found)


def test_no_cycle_between_rooms() -> None:
    found = room_cycles(graph())
    assert not found, "import cycles between rooms:\n" + "\n".join(found)


def test_no_upward_import() -> None:
    found = upward(graph())
    assert not found, "upward imports:\n" + "\n".join(found)


def test_private_names_stay_in_their_room() -> None:
    found = private_crossings(graph())
    assert not found, "private names imported from another room:\n" + "\n".join(found)


def test_private_attributes_stay_in_their_room() -> None:
    found = private_attributes()
    assert not found, "private names of another room used through its module:\n" + "\n".join(found)


def test_the_graph_is_read() -> None:
    """The reader sees what it must: a lazy import inside a function, a relative import, TYPE_CHECKING."""
    known = modules()
    edges = graph()
    assert "torchport.runtime" in known and "torchport.check_ops.classify" in known
    pairs = {(e.src, e.dst) for e in edges}
    assert ("torchport.check_ops.classify", "torchport.targets") in pairs  # module level
    assert ("torchport.cli", "torchport.static_cli") in pairs  # inside a function
    assert len(edges) > 100
