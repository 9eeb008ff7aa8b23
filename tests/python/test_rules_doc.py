"""docs/rules.md is generated from the rule families' doc comments and must be current; every
family documents the fixed headings; tools/new_rule.py scaffolds a family everywhere."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tools_testlib import load_tool

REPO = Path(__file__).resolve().parents[2]


def load(name: str) -> ModuleType:
    return load_tool(name)


def test_rules_doc_is_current() -> None:
    gen = load("gen_rules_doc")
    fams = gen.families()
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == gen.render(fams), (
        "docs/rules.md is stale: run python tools/gen_rules_doc.py"
    )


def test_every_family_has_the_fixed_headings_and_a_registered_code() -> None:
    gen = load("gen_rules_doc")
    fams = gen.families()
    assert len(fams) >= 8
    engine = (REPO / "src" / "torchport" / "rules" / "engine.cc").read_text()
    registered = set(re.findall(r'\{"(TP\d{3})"', engine))
    for fam in fams:
        assert gen.missing_headings(fam) == [], fam.path
        assert fam.codes.split("-")[0] in registered, fam.codes


def test_every_code_a_run_can_emit_is_registered_and_documented() -> None:
    gen = load("gen_rules_doc")
    codes, table = gen.registry()
    registered = {c.code for c in codes}
    # Every code literal in the core's sources (tests aside) is a registered code.
    emitted: set[str] = set()
    for p in (REPO / "src" / "torchport").rglob("*.cc"):
        if not p.name.endswith("_test.cc"):
            emitted |= set(re.findall(r'"(TP\d{3})"', p.read_text(encoding="utf-8")))
    assert emitted - registered == set(), "emitted but not registered"
    assert {"TP901", "TP902", "TP903", "TP950"} <= emitted  # the project-level checks too
    # Every registered code is in docs/rules.md, and its family has a documented file.
    doc = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    documented = {gen.family_of_file(f) for f in gen.families()}
    names = {f.name for f in table}
    for c in codes:
        assert f"| {c.code} | {c.name} |" in doc, c.code
        assert c.family in names and c.family in documented, c.code


def test_a_family_without_a_heading_is_rejected(tmp_path: Path) -> None:
    gen = load("gen_rules_doc")
    p = tmp_path / "x.cc"
    p.write_text("// Rule family TP777: example.\n//\n// What it does:\n//   x\n// Why:\n//   y\n")
    fam = gen.parse(p)
    assert fam is not None
    assert gen.missing_headings(fam) == ["Example", "Becomes", "Safety"]


def test_new_rule_scaffolds_every_place(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "src" / "torchport" / "rules", root / "src" / "torchport" / "rules")
    shutil.copytree(REPO / "tools", root / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "docs").mkdir()
    p = subprocess.run(
        [sys.executable, str(root / "tools" / "new_rule.py"), "TP750", "cuda-graphs",
         "torch.cuda graphs", "--root", str(root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rules = root / "src" / "torchport" / "rules"
    assert "void run_cuda_graphs(Context& ctx)" in (rules / "cuda_graphs.cc").read_text()
    # The code's one producer, where tools/rule_codes.py looks for it.
    assert (
        'void tp750(Context& ctx, Draft d) { ctx.add("TP750", std::move(d)); }'
        in (rules / "cuda_graphs.cc").read_text()
    )
    assert load("rule_codes").check(root) == []
    assert "void run_cuda_graphs(Context& ctx);" in (rules / "context.h").read_text()
    engine = (rules / "engine.cc").read_text()
    family = '    {"cuda_graphs", Input::PythonFile, NeedModel | NeedCatalogue, {}, run_cuda_graphs},\n'
    assert family + "    // tools/new_rule.py: families\n" in engine
    assert '{"TP750", "cuda-graphs", "torch.cuda graphs", "cuda_graphs"},' in engine
    codes = re.findall(r'^    \{"(TP\d{3})"', engine, re.M)
    assert "TP750" in codes and codes == sorted(codes)
    assert (root / "tests" / "fixtures" / "rules" / "cuda_graphs" / "input.py").is_file()
    assert "## TP750: torch.cuda graphs" in (root / "docs" / "rules.md").read_text()
    # A second scaffold with the same code is refused.
    again = subprocess.run(
        [sys.executable, str(root / "tools" / "new_rule.py"), "TP750", "other", "x",
         "--root", str(root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert again.returncode != 0
    # The scaffolded C++ compiles against the real headers.
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx:
        for name in ["cuda_graphs.cc", "engine.cc"]:
            c = subprocess.run(
                [cxx, "-std=c++20", "-fsyntax-only", f"-I{root / 'src'}", f"-I{REPO / 'src'}",
                 str(rules / name)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            assert c.returncode == 0, c.stderr
