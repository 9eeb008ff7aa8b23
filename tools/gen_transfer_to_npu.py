#!/usr/bin/env python3
"""What the vendor's transfer_to_npu patches, next to what torchport does (issue 31 §3).

Reads torch_npu/contrib/transfer_to_npu.py of the newest pinned torch-npu wheel
(data/vendor/torch_npu_wheels.json) with `ast`, never importing it: starting at its `_init()`, it
follows the helper functions it calls and collects every patch:
- an assignment to a torch attribute (`torch.Tensor.cuda = torch.Tensor.npu`), with what the new
  value does (a wrapper that rewrites 'cuda' device arguments to 'npu', 'nccl' to 'hccl', ...);
- `_device_wrapper(obj, [names])`: each function gets its device arguments rewritten;
- a patch table applied with `_apply_patches` (`['cuda', torch_npu.npu]`: torch.cuda becomes
  torch_npu.npu; the profiler names);
- the third-party functions of contrib/apis_config.json.

Writes data/vendor/transfer_to_npu.json and docs/transfer-to-npu.md, which sets each patch next to
torchport's npu catalogue (`migrate`) and the runtime coverage table (`torchport run`,
data/runtime/coverage.json).

Usage: tools/gen_transfer_to_npu.py [--wheels DIR] [--offline] [--check]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import sys
import zipfile
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_vendor_npu as cvn  # noqa: E402

ROOT = cvn.ROOT
SCRIPT = "torch_npu/contrib/transfer_to_npu.py"
APIS_CONFIG = "torch_npu/contrib/apis_config.json"
DATA = ROOT / "data/vendor/transfer_to_npu.json"
DOC = ROOT / "docs/transfer-to-npu.md"

# What the script's wrappers do, read from their definitions in the script (the docs cite them).
WRAPPERS = {
    "_wrapper_cuda": "device args cuda→npu",
    "_wrapper_hccl": "backend args nccl→hccl",
    "_wrapper_profiler": "drops an experimental_config that is not torch_npu's",
    "_patch_is_autocast_enabled": "device_type None or 'cuda' becomes 'npu'",
    "_patch_set_autocast_enabled": "device_type absent or 'cuda' becomes 'npu'",
    "_wrapper_libraries_func": "runs with the real torch.cuda.is_available",
}


LEGEND = {
    "device args cuda→npu": "_wrapper_cuda: 'cuda' strings and torch.device('cuda') in the arguments "
    "become npu (positional, device=, device_type=, map_location=, device_id=, device_ids=; integers too "
    "for to and to_empty)",
    "backend args nccl→hccl": "_wrapper_hccl: 'nccl' in a backend argument becomes 'hccl' "
    "('cuda' becomes 'npu')",
}


def _dotted(node: ast.AST) -> str:
    return cvn._dotted(node)


def _is_torch_module(dest: str) -> bool:
    """Whether torch.<dest> is a module in the installed torch (a patch table entry that swaps a module)."""
    import importlib.util
    import types

    try:
        import torch
    except ImportError:
        return False
    obj: Any = torch
    for part in dest.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return importlib.util.find_spec(f"torch.{dest}") is not None
    return isinstance(obj, types.ModuleType)


class Reader:
    def __init__(self, source: str, apis_config: dict[str, Any]):
        self.tree = ast.parse(source)
        self.apis_config = apis_config
        self.funcs = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        self.classes = {n.name for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.lists: dict[str, list[str]] = {}
        for n in self.tree.body:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                names = cvn._str_list(n.value)
                if names is not None:
                    self.lists[n.targets[0].id] = names
        self.aliases: dict[str, str] = {}  # local names of imports: filesystem -> torch.distributed...
        self.rows: list[dict[str, Any]] = []
        self.seen: set[str] = set()

    def run(self) -> list[dict[str, Any]]:
        self.visit_function("_init")
        return self.rows

    def add(self, target: str, action: str, how: str, line: int) -> None:
        self.rows.append({"target": target, "action": action, "how": how, "line": line})

    def value(self, node: ast.AST) -> tuple[str, str]:
        """(action, how) for an assigned value."""
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Call) and _dotted(fn.func) == "_compose_wrappers":
                names = [_dotted(a) for a in fn.args]
                return "wrapped", "; ".join(WRAPPERS.get(n, n) for n in names)
            name = _dotted(fn)
            if name in WRAPPERS:
                return "wrapped", WRAPPERS[name]
            return "replaced", ast.unparse(node)
        text = ast.unparse(node)
        if isinstance(node, ast.Name) and node.id in self.classes:
            return "replaced", f"{node.id} (a subclass whose __new__ rewrites 'cuda' device arguments)"
        if isinstance(node, ast.Name) and node.id in self.funcs:
            fn = self.funcs[node.id]
            doc = ast.get_docstring(fn) or ""
            return "replaced", f"{node.id}()" + (f": {doc.splitlines()[0]}" if doc else "")
        return "replaced", text

    def target_name(self, node: ast.AST) -> str:
        name = _dotted(node)
        head, _, rest = name.partition(".")
        if head in self.aliases:
            return f"{self.aliases[head]}.{rest}" if rest else self.aliases[head]
        return name

    def visit_function(self, name: str) -> None:
        if name in self.seen or name not in self.funcs:
            return
        self.seen.add(name)
        self.visit_body(self.funcs[name].body)

    def visit_body(self, body: list[ast.stmt]) -> None:
        patches: dict[str, list[tuple[str, str]]] = {}
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("torch."):
                    for a in node.names:
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            if isinstance(stmt, ast.FunctionDef):
                self.funcs.setdefault(stmt.name, stmt)
                continue
            if isinstance(stmt, ast.If):
                self.visit_body(stmt.body)
                self.visit_body(stmt.orelse)
                continue
            if isinstance(stmt, ast.Assign):
                if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    rows = self.patch_table(stmt.value)
                    if rows is not None:
                        patches[stmt.targets[0].id] = rows
                        continue
                for t in stmt.targets:
                    target = self.target_name(t)
                    if "." in target and target.split(".")[0] in ("torch", "torch_npu"):
                        action, how = self.value(stmt.value)
                        self.add(target, action, how, stmt.lineno)
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                fn = _dotted(call.func)
                if fn == "_device_wrapper" and len(call.args) == 2:
                    owner = self.target_name(call.args[0])
                    names = cvn._str_list(call.args[1])
                    if names is None and isinstance(call.args[1], ast.Name):
                        names = self.lists.get(call.args[1].id, [])
                    for n in names or []:
                        self.add(f"{owner}.{n}", "wrapped", WRAPPERS["_wrapper_cuda"], stmt.lineno)
                elif fn == "_apply_patches" and call.args and isinstance(call.args[0], ast.Name):
                    for dest, value in patches.get(call.args[0].id, []):
                        what = "module replaced" if _is_torch_module(dest) else "replaced"
                        self.add(f"torch.{dest}", what, value, stmt.lineno)
                elif fn.endswith("_lazy_call") and call.args and isinstance(call.args[0], ast.Name):
                    self.visit_function(call.args[0].id)
                elif fn == "_do_wrapper_libraries_func":
                    for package, spec in sorted(self.apis_config.items()):
                        for api, kind in sorted(spec.get("apis", {}).items()):
                            how = (
                                f"{WRAPPERS['_wrapper_libraries_func']} ({package} >= {spec.get('version')}, "
                                f"a {kind})"
                            )
                            self.add(api, "wrapped", how, stmt.lineno)
                elif fn in self.funcs:
                    self.visit_function(fn)

    def patch_table(self, node: ast.AST) -> Optional[list[tuple[str, str]]]:
        """[['dest', value], ...] of _apply_patches, or None."""
        if not isinstance(node, ast.List) or not node.elts:
            return None
        out = []
        for e in node.elts:
            if not (
                isinstance(e, ast.List)
                and len(e.elts) == 2
                and isinstance(e.elts[0], ast.Constant)
                and isinstance(e.elts[0].value, str)
            ):
                return None
            out.append((e.elts[0].value, ast.unparse(e.elts[1])))
        return out


# --- torchport's side ------------------------------------------------------------------------------


def catalogue_npu() -> dict[str, dict[str, Any]]:
    """The npu mapping per API, with the names a mapping moves with (the profiler) as their own rows."""
    out = {e["api"]: e["mapping"] for e in cvn.catalogue_mappings(ROOT)}
    for api, m in list(out.items()):
        for moved_api, moved in m.get("moves_with", {}).items():
            out.setdefault(moved_api, {"replacement": moved, "status": f"moves_with of {api}, no rule yet"})
    return out


def coverage_rows() -> list[dict[str, Any]]:
    return json.loads((ROOT / "data/runtime/coverage.json").read_text())["rows"]


def caller_rules() -> list[dict[str, Any]]:
    return json.loads((ROOT / "data/runtime/callers.json").read_text())["rules"]


def caller_match(target: str, rules: list[dict[str, Any]]) -> list[str]:
    """torchport run's rules for who sees the truth about CUDA (data/runtime/callers.json), for a function
    transfer_to_npu runs with the real torch.cuda.is_available (its apis_config.json)."""
    out = []
    for r in rules:
        if target == r["caller"] or target.startswith(r["caller"] + "."):
            where = f" (targets: {', '.join(r['targets'])})" if r.get("targets") else ""
            out.append(f"callers.json {r['caller']}: sees {r['sees']}{where}")
    return out


def coverage_match(target: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    short = target
    for prefix, repl in (("torch.Tensor.", "Tensor."), ("torch.nn.Module.", "Module.")):
        if target.startswith(prefix):
            short = repl + target[len(prefix) :]
    last = target.split(".")[-1]
    if last == "__init__" or last == "__new__":
        last = target.split(".")[-2]
    bare = target.rsplit(".", 1)[0] if target.endswith((".__init__", ".__new__")) else target
    out = [r for r in rows if r["api"] in (target, short, bare)]
    if not out:
        out = [r for r in rows if r["api"].startswith((f"{last}(", f"torch.{last}(")) or r["api"] == last]
    return out


def torchport_side(row: dict[str, Any], cat: dict[str, dict[str, Any]], cov: list[dict[str, Any]]) -> dict:
    target = row["target"]
    migrate = ""
    m = cat.get(target) or cat.get(
        target.rsplit(".", 1)[0] if target.endswith((".__init__", ".__new__")) else ""
    )
    if m is not None:
        repl = m.get("replacement") or "(left in place)"
        migrate = f"{repl} ({m.get('status')})"
    run = [f"{r['api']}: {r.get('device', '') or r.get('cpu', '')}" for r in coverage_match(target, cov)]
    if not target.startswith("torch"):
        run += caller_match(target, caller_rules())
    peers_say = any("transfer_to_npu" in r.get("peers", "") for r in coverage_match(target, cov))
    return {"migrate": migrate, "run": run, "coverage_names_transfer_to_npu": peers_say}


def cuda_module_rows(
    namespace: set[str], cat: dict[str, dict[str, Any]], patches: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """torch.cuda is replaced by torch_npu.npu: each catalogued torch.cuda.X next to torch_npu.npu.X, or
    what a later patch assigns to torch.cuda.X (torch.cuda.DoubleTensor = torch.npu.FloatTensor)."""
    explicit = {p["target"]: p["how"] for p in patches if p["action"] == "replaced"}
    out = []
    for api, m in sorted(cat.items()):
        if not api.startswith("torch.cuda.") or api.count(".") != 2:
            continue
        name = api.split(".")[-1]
        vendor = f"torch_npu.npu.{name}" if name in namespace else ""
        if api in explicit:  # torch.npu is torch_npu.npu (torch._register_device_module)
            vendor = explicit[api].replace("torch.npu.", "torch_npu.npu.")
        ours = m.get("replacement", "")
        if vendor and ours == vendor:
            verdict = "same"
        elif not vendor and not ours:
            verdict = "neither"
        elif not vendor:
            verdict = "torchport only"
        elif not ours:
            verdict = "transfer_to_npu only"
        else:
            verdict = "different"
        out.append(
            {
                "api": api,
                "transfer_to_npu": vendor or "AttributeError (torch_npu.npu has no such name)",
                "torchport": ours or "(left in place and reported)",
                "status": m.get("status", ""),
                "verdict": verdict,
                "note": m.get("note", ""),
            }
        )
    return out


# --- output ---------------------------------------------------------------------------------------


def read_patches(wheel_path: Path) -> list[dict[str, Any]]:
    """The patches transfer_to_npu applies, read from the wheel."""
    with zipfile.ZipFile(wheel_path) as zf:
        source = zf.read(SCRIPT).decode()
        apis = json.loads(zf.read(APIS_CONFIG)) if APIS_CONFIG in zf.namelist() else {}
    return Reader(source, apis).run()


def build(pin: dict[str, Any], patches: list[dict[str, Any]], namespace: set[str]) -> dict[str, Any]:
    """The table: the vendor's patches (without a torchport side) next to the catalogue and coverage."""
    cat = catalogue_npu()
    cov = coverage_rows()
    rows = []
    for p in patches:
        r = {k: p[k] for k in ("target", "action", "how", "line")}
        r["torchport"] = torchport_side(r, cat, cov)
        rows.append(r)
    return {
        "about": "GENERATED by tools/gen_transfer_to_npu.py from torch_npu/contrib/transfer_to_npu.py of the "
        "torch-npu wheel named here (read with ast, never imported), data/catalogue/*.json and "
        "data/runtime/coverage.json: do not edit.",
        "wheel": pin["version"],
        "sha256": pin["sha256"],
        "patches": rows,
        "torch_cuda": cuda_module_rows(namespace, cat, rows),
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "—"


def render(doc: dict[str, Any]) -> str:
    rows = doc["patches"]
    cuda = doc["torch_cuda"]
    verdicts: dict[str, int] = {}
    for r in cuda:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    no_run = [r for r in rows if not r["torchport"]["run"] and not r["torchport"]["migrate"]]
    lines = [
        "# transfer_to_npu next to torchport",
        "",
        "<!-- GENERATED by tools/gen_transfer_to_npu.py: do not edit by hand. -->",
        "",
        f"Ascend's runtime patch `torch_npu.contrib.transfer_to_npu` (torch-npu {doc['wheel']}, read from "
        "the wheel with `ast`: `_init()` and the helpers it calls) makes CUDA code run unchanged on an "
        "Ascend NPU. This page lists every patch it applies and, for each, what torchport does with the "
        "same API: `migrate --target npu` (the catalogue, data/catalogue/) and `torchport run --target npu` "
        "(the runtime coverage table, data/runtime/coverage.json; the `device` rule there: `same-name` "
        "redirects to torch_npu.npu's function of the same name).",
        "",
        f"{len(rows)} patches; {sum(1 for r in rows if r['torchport']['migrate'])} name an API the catalogue "
        f"has, {sum(1 for r in rows if r['torchport']['run'])} match a row of the runtime coverage table or "
        f"of data/runtime/callers.json, {len(no_run)} match neither (listed last).",
        "",
        "## torch.cuda becomes torch_npu.npu",
        "",
        "`_patch_cuda` replaces the module `torch.cuda` (and `torch.cuda.amp`, `.random`, ...) by "
        "`torch_npu.npu`: every `torch.cuda.X` is then `torch_npu.npu.X`, or an AttributeError where "
        "torch_npu.npu has no X (its names: data/vendor/torch_npu_namespace.json). Each catalogued "
        "torch.cuda name, next to what `migrate --target npu` writes:",
        "",
        "| verdict | count |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in sorted(verdicts.items())]
    lines += [
        "",
        "Where they differ (`same` and `neither` rows left out):",
        "",
        "| torch.cuda API | transfer_to_npu | torchport migrate | status | why (the catalogue's note) |",
        "|---|---|---|---|---|",
    ]
    for r in cuda:
        if r["verdict"] in ("same", "neither"):
            continue
        lines.append(
            f"| `{r['api']}` | {_cell(r['transfer_to_npu'])} | {_cell(r['torchport'])} | {r['status']} | "
            f"{_cell(r['note'])} |"
        )
    lines += [
        "",
        "## Every patch",
        "",
        "Wrappers: " + "; ".join(f"**{k}**: {v}" for k, v in LEGEND.items()) + ".",
        "",
        "| line | patched | what transfer_to_npu does | torchport migrate (npu) "
        "| torchport run (coverage row: npu rule) |",
        "|---|---|---|---|---|",
    ]
    ordered = [r for r in rows if r not in no_run] + no_run
    for r in ordered:
        t = r["torchport"]
        run = "<br>".join(_cell(x) for x in t["run"][:3]) or "—"
        what = f"{r['action']}: {_cell(r['how'])}"
        lines.append(f"| {r['line']} | `{r['target']}` | {what} | {_cell(t['migrate'])} | {run} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheels", type=Path, default=ROOT / "build/torch_npu_wheels")
    ap.add_argument("--offline", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    pin = cvn.pins()[-1]  # the newest line (the torch CI runs on)
    path = cvn.fetch(pin, args.wheels, args.offline)
    ns = json.loads(cvn.NAMESPACE_FILE.read_text())["wheels"][pin["version"]]["names"]
    doc = build(pin, read_patches(path), set(ns))
    outputs = {DATA: cvn._dump(doc), DOC: render(doc)}
    stale = 0
    for out, text in outputs.items():
        old = out.read_text() if out.exists() else ""
        if old == text:
            continue
        if args.check:
            stale += 1
            diff = difflib.unified_diff(
                old.splitlines(), text.splitlines(), str(out), "regenerated", lineterm=""
            )
            print("\n".join(list(diff)[:60]))
        else:
            out.write_text(text)
            print(f"wrote {out.relative_to(ROOT)}")
    if stale:
        print(f"{stale} file(s) stale: run tools/gen_transfer_to_npu.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
