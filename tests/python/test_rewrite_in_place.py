"""Every rewrite of a catalogued call leaves the code around it as it was.

The migrate fuzzer found `torch.cuda.max_memory_allocated().real` rewritten for mps into
`0.real`, which is not Python (`0.` is a float literal). A call's replacement is written in place
of the call, and the place may bind tighter than the replacement: an attribute's object, a
subscript's object, a call's function, an operand of `**`, `-`, `not`, `await`, `%`, a
comprehension's condition.

For every function the catalogue (data/catalogue/*.json) names, and every target, each such place
is written once around a call of it; after `torchport migrate`, each statement's tree must be the
original's with the call's subtree replaced by some expression. A replacement that a place would
split (`-a if b else c`) or one that does not parse fails here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGETS = [t["name"] for t in json.loads((REPO / "data" / "targets.json").read_text())["targets"]]

# The places, with SITE standing for the call. Each is one statement `vN = <place>`; `await`
# needs an async function.
PLACES = [
    "SITE.real",
    "SITE[0]",
    "SITE()",
    "SITE ** 2",
    "2 ** SITE",
    "-SITE",
    "not SITE",
    "SITE + 1",
    "7 % SITE",
    "SITE if v else 0",
    "[w for w in v if SITE]",
    "[w for w in SITE]",
    "(*SITE,)",
    "f'{SITE}'",
    "SITE < 3 < SITE",
    "SITE or SITE",
    "await SITE",
]


def catalogued(kind: str) -> list[str]:
    apis: set[str] = set()
    for path in sorted((REPO / "data" / "catalogue").glob("*.json")):
        doc = json.loads(path.read_text())
        entries = doc.get("entries") if isinstance(doc, dict) else None
        for e in entries or []:
            if e.get("kind") == kind and e.get("api", "").startswith("torch."):
                apis.add(e["api"])
    return sorted(apis)


# The sites: each catalogued function called, each catalogued class constructed, each catalogued
# attribute read (torch.backends.cudnn.benchmark, ProfilerActivity.CUDA), and the method and
# device-string forms the device rules rewrite.
APIS = catalogued("function")
CLASSES = catalogued("class")
ATTRIBUTES = catalogued("attribute")
OTHER_SITES = [
    "t.cuda()",
    "t.cuda(0)",
    "t.cuda(non_blocking=True)",
    "t.is_cuda",
    't.to("cuda")',
    'torch.device("cuda")',
    'torch.device("cuda", 0)',
    'torch.zeros(2, device="cuda:0")',
    'torch.autocast("cuda")',
    "torch.backends.cudnn.is_available()",
]


def sites() -> list[str]:
    return [api + "()" for api in APIS] + [api + "()" for api in CLASSES] + ATTRIBUTES + OTHER_SITES


def write_source(site_list: list[str]) -> tuple[str, dict[str, str]]:
    """The test file, and for each assigned name the site it holds."""
    lines = ["import torch", "", "v = [1]", "t = torch.zeros(2)", "", "async def main():"]
    site_of: dict[str, str] = {}
    for n, site in enumerate(s for s in site_list for _ in PLACES):
        place = PLACES[n % len(PLACES)]
        name = f"v{n}"
        site_of[name] = site
        lines.append(f"    {name} = {place.replace('SITE', site)}")
    return "\n".join(lines) + "\n", site_of


def same_around_site(before: ast.AST, after: ast.AST, site: str) -> bool:
    """True when `after` is `before` with each occurrence of the expression `site` replaced by
    any expression."""
    return _same(before, after, ast.dump(ast.parse(site, mode="eval").body))


def _same(before: ast.AST, after: ast.AST, site: str) -> bool:
    if isinstance(before, ast.expr) and ast.dump(before) == site:
        return isinstance(after, ast.expr)
    # `not t.is_cuda` becomes one comparison (`t.device.type != "npu"`): the negation is folded
    # into the site's replacement, as a whole.
    if (
        isinstance(before, ast.UnaryOp)
        and isinstance(before.op, ast.Not)
        and ast.dump(before.operand) == site
        and isinstance(after, ast.Compare)
    ):
        return True
    if type(before) is not type(after):
        return False
    for field in before._fields:
        b = getattr(before, field, None)
        a = getattr(after, field, None)
        if isinstance(b, list):
            if not isinstance(a, list) or len(a) != len(b):
                return False
            if not all(_same(x, y, site) for x, y in zip(b, a, strict=True)):
                return False
        elif isinstance(b, ast.AST):
            if not isinstance(a, ast.AST) or not _same(b, a, site):
                return False
        elif b != a:
            return False
    return True


def assignments(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def test_the_places_cover_the_catalogue() -> None:
    # The catalogue's functions are the subject: an empty or tiny list would test nothing.
    assert len(APIS) > 60
    assert "torch.cuda.max_memory_allocated" in APIS and "torch.cuda.device_count" in APIS
    assert "torch.backends.cudnn.benchmark" in ATTRIBUTES and "torch.cuda.Event" in CLASSES


def test_the_tree_comparison_sees_a_place_split() -> None:
    site = "torch.cuda.device_count()"
    before = ast.parse(f"x = -{site} ** 2\n")
    assert same_around_site(before, ast.parse("x = -(1 if a else 0) ** 2\n"), site)
    assert not same_around_site(before, ast.parse("x = -1 if a else 0 ** 2\n"), site)
    assert not same_around_site(before, ast.parse("x = -(1) + 2\n"), site)
    # Only the site itself may change: its arguments are part of it, its neighbours are not.
    assert not same_around_site(ast.parse("x = f(t.cuda())\n"), ast.parse("x = g(t)\n"), "t.cuda()")


@pytest.mark.parametrize("target", TARGETS)
def test_each_rewritten_call_keeps_its_place(target: str, tmp_path: Path) -> None:
    src, site_of = write_source(sites())
    project = tmp_path / "proj"
    project.mkdir()
    (project / "places.py").write_text(src)
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "torchport", "migrate", str(project), "-t", target, "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "does not parse" not in r.stderr, r.stderr[-3000:]
    migrated = next(out.rglob("places.py")).read_text()
    assert migrated != src, "no call was rewritten: the test would prove nothing"
    before = assignments(ast.parse(src))
    after = assignments(ast.parse(migrated))
    wrong = [
        f"{before_line}  ->  {ast.unparse(after[name])}"
        for name, value in before.items()
        if name in site_of and (name not in after or not same_around_site(value, after[name], site_of[name]))
        for before_line in [ast.unparse(value)]
    ]
    assert not wrong, "\n".join(wrong[:40])
