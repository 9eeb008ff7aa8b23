"""Scaffold a new rule family everywhere it must appear.

    python tools/new_rule.py TP600 cuda-graphs "torch.cuda.graphs and CUDAGraph"

creates src/torchport/rules/cuda_graphs.cc (the doc comment with the fixed headings, the code's
producer `tp600` and an empty `run_cuda_graphs`), declares it in rules/context.h, adds the
family to the family table of rules/engine.cc (what it needs; check() runs it), registers the
code in the registry (in code order, with its family), creates the fixture directory
tests/fixtures/rules/cuda_graphs/ with an input.py to fill in, and regenerates docs/rules.md.
Write the expected outputs (<target>.py, <target>.findings) by hand: the fixture
test fails until they exist and match.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEMPLATE = """\
// Rule family {code}: {summary}.
//
// What it does:
//   TODO: what the rule recognises (through the semantic model) and what it produces.
// Why:
//   TODO: why the CUDA form does not work on the targets.
// Example:
//   TODO: CUDA code
// Becomes (npu):
//   TODO: the rewritten code (and the accelerator form)
// Safety:
//   TODO: what is left in place and reported, and why.
#include <torchport/rules/context.h>

namespace torchport::rules {{

namespace {{

/// {code} ({name}): {summary}. Its one producer: every {code} finding is made here
/// (tools/rule_codes.py).
void {producer}(Context& ctx, Draft d) {{ ctx.add("{code}", std::move(d)); }}

}}  // namespace

void run_{ident}(Context& ctx) {{
  // TODO: find the sites through the semantic model; make each finding, complete, with
  // {producer}(ctx, ctx.rewrite(...)) (a fix) or {producer}(ctx, report(...)) (a report row).
  (void)ctx;
  (void)&{producer};
}}

}}  // namespace torchport::rules
"""


def insert_before(text: str, marker: str, line: str) -> str:
    idx = text.index(marker)
    start = text.rfind("\n", 0, idx) + 1
    return text[:start] + line + text[start:]


def scaffold(root: Path, code: str, name: str, summary: str) -> list[Path]:
    if not re.fullmatch(r"TP\d{3}", code):
        raise SystemExit(f"bad code {code!r}: expected TP followed by three digits")
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise SystemExit(f"bad name {name!r}: expected kebab-case")
    ident = name.replace("-", "_")
    rules = root / "src" / "torchport" / "rules"
    source = rules / f"{ident}.cc"
    if source.exists():
        raise SystemExit(f"{source} already exists")
    engine = (rules / "engine.cc").read_text()
    if f'{{"{code}"' in engine:
        raise SystemExit(f"{code} is already registered")
    source.write_text(
        TEMPLATE.format(code=code, name=name, summary=summary, ident=ident, producer=code.lower())
    )

    context = rules / "context.h"
    ctx = context.read_text()
    ctx = insert_before(
        ctx,
        "// tools/new_rule.py: declarations",
        f"void run_{ident}(Context& ctx);  // {code} {ident}.cc\n",
    )
    context.write_text(ctx)

    # The family: it reads the semantic model and the catalogue; declare more needs or an
    # `after` list in engine.cc's family table when the rule needs them.
    engine = insert_before(
        engine,
        "// tools/new_rule.py: families",
        f'    {{"{ident}", Input::PythonFile, NeedModel | NeedCatalogue, {{}}, run_{ident}}},\n',
    )
    # The registry stays in code order.
    entries = list(re.finditer(r'^    \{"(TP\d{3})".*$', engine, re.M))
    entry = f'    {{"{code}", "{name}", "{summary}", "{ident}"}},\n'
    after = [m for m in entries if m.group(1) > code]
    pos = after[0].start() if after else engine.index("    // tools/new_rule.py: registry")
    engine = engine[:pos] + entry + engine[pos:]
    (rules / "engine.cc").write_text(engine)

    fixture = root / "tests" / "fixtures" / "rules" / ident
    fixture.mkdir(parents=True, exist_ok=True)
    (fixture / "input.py").write_text("import torch\n\n# TODO: the CUDA code this rule rewrites\n")
    return [source, context, rules / "engine.cc", fixture / "input.py"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="scaffold a new rule family")
    ap.add_argument("code", help="first code of the family, e.g. TP600")
    ap.add_argument("name", help="kebab-case name, e.g. cuda-graphs")
    ap.add_argument("summary", help="one line")
    ap.add_argument("--root", type=Path, default=ROOT, help="repository root (for tests)")
    args = ap.parse_args(argv)
    for p in scaffold(args.root, args.code, args.name, args.summary):
        print(f"wrote {p}")
    gen = args.root / "tools" / "gen_rules_doc.py"
    if gen.exists():
        subprocess.run([sys.executable, str(gen)], check=False)
    print(
        "now: fill in the doc comment, write the rule, and the fixture's expected outputs by hand; "
        "then read them once more and run tools/review_fixture.py NAME --accept"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
