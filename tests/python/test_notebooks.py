"""Jupyter notebooks (.ipynb) through `torchport migrate` and `analyze` (issue 34, docs/notebooks.md).

On the real notebooks of ../shared/notebooks (test input, read in place, never copied into the
repository), for every target:
- every notebook migrates (exit 0, a Success row), and every code cell of the output parses with
  Python's own `ast` once its IPython lines are masked (by this file's masker, or IPython's own
  input transformer when IPython is installed: an oracle independent of torchport's parser);
- no CUDA-specific reference is left that no report row covers (tests/corpus/oracle.py on the
  cells as one module, as the kernel runs them);
- the JSON is the same outside the cells' sources (same objects, same key order, and every line
  of the file that changed is a line of a code cell's source list);
- a second migrate of the output changes nothing, and a notebook without CUDA comes out
  byte-identical.
Then the reports (cell columns, SARIF), --diff, --inplace, --clear-outputs and broken notebooks,
on small notebooks written here.
"""

from __future__ import annotations

import ast
import csv
import difflib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tests.corpus import oracle, static  # noqa: E402
from tests.corpus.notebooks import AUTOMAGIC, cell_text, mask, module_of, notebooks_dir  # noqa: E402

from torchport import report_json  # noqa: E402

TARGETS = static.TARGETS
SPACE_NAME = "diffusers/exploring_simple optimizations_for_sdxl.ipynb"
NOTEBOOKS = notebooks_dir()
needs_notebooks = pytest.mark.skipif(NOTEBOOKS is None, reason="../shared/notebooks is not here")


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def parse_error(src: str) -> Optional[str]:
    """Why the cell does not compile as the kernel would compile it ("" when it does)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        masked = mask(src)
        code = masked if masked is not None else ""
    else:
        if mask(src) is None:  # %%bash and the like: not Python
            return None
        # IPython's transformer does not do automagic (its prefilter does, when the line runs).
        lines = src.splitlines(keepends=True)
        for i, line in enumerate(lines):
            body = line.lstrip(" \t")
            if AUTOMAGIC.match(body):
                lines[i] = line[: len(line) - len(body)] + "pass\n"
        code = TransformerManager().transform_cell("".join(lines))
    try:
        ast.parse(code)
    except SyntaxError as e:
        return f"{e.lineno}:{e.offset}: {e.msg}"
    return None


def notebook_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.ipynb"))


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every target's result directory of the whole notebook folder."""
    assert NOTEBOOKS is not None
    out = tmp_path_factory.mktemp("notebooks")
    results = {}
    for target in TARGETS:
        p = torchport("migrate", str(NOTEBOOKS), "--target", target, "-o", str(out / target), "-q")
        assert p.returncode == 0, (target, p.stdout, p.stderr)
        results[target] = out / target / f"{NOTEBOOKS.name}_{target}"
    return results


def report_of(result: Path) -> dict[str, Any]:
    return report_json.load(result / "torchport-report" / "report.json")


@needs_notebooks
def test_the_six_notebooks_are_here() -> None:
    assert NOTEBOOKS is not None
    names = notebook_files(NOTEBOOKS)
    assert len(names) == 6 and SPACE_NAME in names


@needs_notebooks
@pytest.mark.parametrize("target", TARGETS)
def test_every_notebook_migrates_and_every_cell_parses(migrated: dict[str, Path], target: str) -> None:
    assert NOTEBOOKS is not None
    result = migrated[target]
    rep = report_of(result)
    entries = {f["file"]: f for f in rep["files"] if f["file"].endswith(".ipynb")}
    assert sorted(entries) == notebook_files(NOTEBOOKS)
    for name, entry in entries.items():
        assert entry["outcome"] == "Success", (name, entry)
        assert entry["python"] is True
        out = json.loads((result / name).read_bytes())
        for n, cell in enumerate(out["cells"], 1):
            if cell["cell_type"] == "code":
                assert parse_error(cell_text(cell)) is None, (name, n, cell_text(cell))
    # Some notebooks do put things on CUDA: the run changed something for every target.
    assert any(e.get("changed") for e in entries.values())


@needs_notebooks
@pytest.mark.parametrize("target", TARGETS)
def test_no_unflagged_cuda_reference(migrated: dict[str, Path], target: str) -> None:
    assert NOTEBOOKS is not None
    result = migrated[target]
    rows_by_file: dict[str, list[dict[str, Any]]] = {}
    for r in report_of(result)["findings"]:
        rows_by_file.setdefault(r["file"], []).append(r)
    problems = []
    for name in notebook_files(NOTEBOOKS):
        before, first = module_of(json.loads((NOTEBOOKS / name).read_bytes()))
        after, _ = module_of(json.loads((result / name).read_bytes()))
        rows = []
        for r in rows_by_file.get(name, []):
            assert r["cell"] in first, (name, r)
            base = first[r["cell"]] - 1
            rows.append(
                oracle.Row(
                    base + r["start_line"], base + r["end_line"], r["operation"], r["api"], r["message"]
                )
            )
        problems += [(name, str(u)) for u in oracle.unflagged(before, after, rows)]
    assert problems == []


def used_before_bound(module: str, names: set[str]) -> list[str]:
    """The names of `names` the module reads, outside a function body, before it binds them (a
    cell that uses a name a later cell defines fails when the notebook runs top to bottom)."""
    tree = ast.parse(module)
    bound: dict[str, int] = {}
    loads: dict[str, int] = {}

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                name = (a.asname or a.name).split(".")[0]
                bound.setdefault(name, node.lineno)
        if isinstance(node, ast.Name) and node.id in names:
            if isinstance(node.ctx, ast.Store):
                bound.setdefault(node.id, node.lineno)
            elif not in_function:
                loads.setdefault(node.id, node.lineno)
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        # An assignment's value is read before its targets are bound.
        children = [node.value, *node.targets] if isinstance(node, ast.Assign) else ast.iter_child_nodes(node)
        for child in children:
            visit(child, inner)

    visit(tree, False)
    return [n for n, line in loads.items() if n in names and bound.get(n, line + 1) > line]


@needs_notebooks
@pytest.mark.parametrize("target", TARGETS)
def test_what_migrate_inserts_is_bound_before_it_is_used(migrated: dict[str, Path], target: str) -> None:
    """Cells run in order: the target's package and the device variable must be bound before
    the first cell that uses them (an insertion after a later `import torch` would not be)."""
    assert NOTEBOOKS is not None
    names = {"torch_npu", "torch_mlu", "torch_musa", "accel_device", "device", "torch"}
    for name in notebook_files(NOTEBOOKS):
        before, _ = module_of(json.loads((NOTEBOOKS / name).read_bytes()))
        after, _ = module_of(json.loads((migrated[target] / name).read_bytes()))
        # Only what migrate made worse counts (the input may read a name early itself).
        assert set(used_before_bound(after, names)) <= set(used_before_bound(before, names)), name
        # The vendor package is imported before the first line migrate rewrote (a device string
        # "npu" means nothing to torch before `import torch_npu`).
        if target in ("npu", "mlu", "musa"):
            a, b = before.splitlines(), after.splitlines()
            sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
            changed = [
                j + 1 for tag, _, _, j1, j2 in sm.get_opcodes() if tag != "equal" for j in range(j1, j2)
            ]
            imports = [n for n in changed if b[n - 1].strip() == f"import torch_{target}"]
            if changed:
                assert imports and imports[0] <= min(changed), (name, imports, changed[:3])


def without_sources(nb: dict[str, Any]) -> str:
    """The notebook's JSON with every code cell's source emptied, keys in file order."""
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code":
            cell["source"] = None
    return json.dumps(nb)


@needs_notebooks
@pytest.mark.parametrize("target", TARGETS)
def test_bytes_outside_the_sources_are_the_same(migrated: dict[str, Path], target: str) -> None:
    assert NOTEBOOKS is not None
    result = migrated[target]
    for name in notebook_files(NOTEBOOKS):
        a = (NOTEBOOKS / name).read_text(encoding="utf-8")
        b = (result / name).read_text(encoding="utf-8")
        assert without_sources(json.loads(a)) == without_sources(json.loads(b)), name
        # Every changed line of the file is an element of a source list: a JSON string on a line
        # of its own (the files indent them by 4 or 8 spaces).
        element = re.compile(r'^ +"(?:[^"\\]|\\.)*",?$')
        for line in difflib.ndiff(a.splitlines(), b.splitlines()):
            if line.startswith(("+ ", "- ")):
                assert element.match(line[2:]), (name, line)
        # The file ends as it did (with or without a final line break).
        assert a.endswith("\n") == b.endswith("\n")


@needs_notebooks
@pytest.mark.parametrize("target", TARGETS)
def test_a_second_migrate_changes_nothing(migrated: dict[str, Path], target: str, tmp_path: Path) -> None:
    result = migrated[target]
    p = torchport("migrate", str(result), "--target", target, "-o", str(tmp_path), "-q")
    assert p.returncode == 0, p.stderr
    again = tmp_path / f"{result.name}_{target}"
    for name in notebook_files(result):
        assert (again / name).read_bytes() == (result / name).read_bytes(), name
    assert not any(f.get("changed") for f in report_of(again)["files"] if f["file"].endswith(".ipynb"))


@needs_notebooks
def test_a_notebook_without_cuda_comes_out_byte_identical(tmp_path: Path) -> None:
    """Each real notebook without its code cells that touch torch or devices, written as nbformat
    writes (one-space indentation, raw UTF-8): every target leaves it byte for byte."""
    assert NOTEBOOKS is not None
    src = tmp_path / "in"
    for name in notebook_files(NOTEBOOKS):
        nb = json.loads((NOTEBOOKS / name).read_bytes())
        words = ("cuda", "torch", "device", "gpu", "nccl", ".to(", "Generator")
        nb["cells"] = [
            c for c in nb["cells"] if c["cell_type"] != "code" or not any(w in cell_text(c) for w in words)
        ]
        dst = src / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for target in TARGETS:
        p = torchport("migrate", str(src), "--target", target, "-o", str(tmp_path / target), "-q")
        assert p.returncode == 0, (target, p.stderr)
        for name in notebook_files(src):
            out = tmp_path / target / f"in_{target}" / name
            assert out.read_bytes() == (src / name).read_bytes(), (target, name)


# Small notebooks written here: the reports, --diff, --inplace, --clear-outputs, broken input.

NB = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# D\u00e9mo"]},
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
            "source": ["!pip install diffusers\n", "import torch\n", 'device = "cuda"'],
        },
        {
            "cell_type": "code",
            "execution_count": 2,
            "metadata": {},
            "outputs": [],
            "source": ["x = torch.ones(2).to(device)\n", "torch.cuda.empty_cache()\n", "x?"],
        },
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def write_nb(path: Path, nb: dict[str, Any]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()
    path.write_bytes(data)
    return data


def test_rows_name_the_cell_and_its_line(tmp_path: Path) -> None:
    write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    p = torchport("migrate", str(tmp_path / "proj"), "--target", "npu", "-o", str(tmp_path / "out"), "-q")
    assert p.returncode == 0, p.stderr
    result = tmp_path / "out" / "proj_npu"
    rep = report_of(result)
    rows = {(r["cell"], r["start_line"], r["code"]) for r in rep["findings"]}
    # `device = "cuda"` is cell 2, line 3; torch.cuda.empty_cache() is cell 3, line 2.
    assert any(c == 2 and line == 3 for c, line, _ in rows), rows
    assert any(c == 3 and line == 2 for c, line, _ in rows), rows
    with (result / "torchport-report" / "change_list.csv").open(newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["File", "Start Line", "End Line", "Operation Type", "Message"]
    assert {"nb.ipynb:cell2", "nb.ipynb:cell3"} <= {r[0] for r in table[1:]}
    out = json.loads((result / "nb.ipynb").read_bytes())
    # The target import goes after the first torch import, in cell 2; the pip line stays first.
    assert out["cells"][1]["source"] == [
        "!pip install diffusers\n",
        "import torch\n",
        "import torch_npu\n",
        'device = "npu"',
    ]
    assert out["cells"][2]["source"] == [
        "x = torch.ones(2).to(device)\n",
        "torch_npu.npu.empty_cache()\n",
        "x?",
    ]
    assert out["cells"][1]["outputs"] == NB["cells"][1]["outputs"]  # type: ignore[index]


def test_shell_lines_that_name_cuda_tools_are_rows_and_stay(tmp_path: Path) -> None:
    """IPython lines are never edited: one that runs nvidia-smi or sets CUDA_VISIBLE_DEVICES is a
    row (with the target's variable), in its cell and line, and the cell keeps its bytes."""
    nb = json.loads(json.dumps(NB))
    nb["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": [
                "%env CUDA_VISIBLE_DEVICES=0\n",
                "if torch.cuda.is_available():\n",
                "    !nvidia-smi -L\n",
                "!nvidia-smi-like --help\n",
                "!CUDA_VISIBLE_DEVICES=1 python train.py",
            ],
        }
    )
    write_nb(tmp_path / "proj" / "nb.ipynb", nb)
    p = torchport("migrate", str(tmp_path / "proj"), "--target", "npu", "-o", str(tmp_path / "out"), "-q")
    assert p.returncode == 0, p.stderr
    result = tmp_path / "out" / "proj_npu"
    rows = sorted(
        (r["cell"], r["start_line"], r["code"], r["api"], r["operation"])
        for r in report_of(result)["findings"]
        if r["cell"] == 4
    )
    assert rows == [
        (4, 1, "TP500", "CUDA_VISIBLE_DEVICES", "UNSUPPORTED"),
        (4, 2, "TP100", "torch.cuda.is_available", "MODIFY"),
        (4, 3, "TP130", "nvidia-smi", "UNSUPPORTED"),
        (4, 5, "TP500", "CUDA_VISIBLE_DEVICES", "UNSUPPORTED"),
    ], rows
    findings = report_of(result)["findings"]
    messages = [r["message"] for r in findings if r["code"] == "TP500" and r["cell"] == 4]
    assert all("ASCEND_RT_VISIBLE_DEVICES" in m for m in messages), messages
    out = json.loads((result / "nb.ipynb").read_bytes())
    assert out["cells"][3]["source"] == [
        "%env CUDA_VISIBLE_DEVICES=0\n",
        "if torch_npu.npu.is_available():\n",
        "    !nvidia-smi -L\n",
        "!nvidia-smi-like --help\n",
        "!CUDA_VISIBLE_DEVICES=1 python train.py",
    ]


def test_sarif_shows_the_cell(tmp_path: Path) -> None:
    write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    p = torchport("analyze", str(tmp_path / "proj"), "--target", "npu", "--format", "sarif")
    assert p.returncode == 1, p.stderr
    log = json.loads(p.stdout)
    results = log["runs"][0]["results"]
    cells = {loc["properties"]["cell"] for r in results for loc in r["locations"]}
    assert cells == {2, 3}
    for r in results:
        loc = r["locations"][0]
        assert "region" not in loc["physicalLocation"]  # the lines are the cell's, not the file's
        assert loc["logicalLocations"][0]["name"].startswith("cell")
        assert r["message"]["text"].startswith("cell ")


def test_diff_shows_changed_cells_as_python(tmp_path: Path) -> None:
    write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    p = torchport(
        "migrate", str(tmp_path / "proj"), "--target", "npu", "-o", str(tmp_path / "out"), "-q", "--diff"
    )
    assert p.returncode == 0, p.stderr
    assert "--- a/nb.ipynb:cell2\n+++ b/nb.ipynb:cell2\n" in p.stdout
    assert "-x = torch.ones(2).to(device)" not in p.stdout
    assert "-torch.cuda.empty_cache()\n+torch_npu.npu.empty_cache()\n" in p.stdout
    assert "+import torch_npu\n" in p.stdout
    assert '"source"' not in p.stdout  # Python, not JSON


def test_inplace_rewrites_only_the_notebook_and_keeps_a_backup(tmp_path: Path) -> None:
    original = write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    p = torchport("migrate", str(tmp_path / "proj"), "--target", "npu", "--inplace", "-q")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "proj.torchport-backup" / "nb.ipynb").read_bytes() == original
    after = json.loads((tmp_path / "proj" / "nb.ipynb").read_bytes())
    assert after["cells"][2]["source"][1] == "torch_npu.npu.empty_cache()\n"


def test_clear_outputs_clears_outputs_and_counts(tmp_path: Path) -> None:
    write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    base = ["migrate", str(tmp_path / "proj"), "--target", "npu", "-q"]
    p = torchport(*base, "-o", str(tmp_path / "kept"))
    assert p.returncode == 0, p.stderr
    kept = json.loads((tmp_path / "kept" / "proj_npu" / "nb.ipynb").read_bytes())
    assert kept["cells"][1]["outputs"] and kept["cells"][1]["execution_count"] == 1
    p = torchport(*base, "-o", str(tmp_path / "cleared"), "--clear-outputs")
    assert p.returncode == 0, p.stderr
    cleared = json.loads((tmp_path / "cleared" / "proj_npu" / "nb.ipynb").read_bytes())
    for cell in cleared["cells"][1:]:
        assert cell["outputs"] == [] and cell["execution_count"] is None
    assert cleared["cells"][1]["source"] == kept["cells"][1]["source"]
    assert cleared["metadata"] == NB["metadata"]


def test_broken_json_is_a_row_with_line_and_column(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    broken = '{\n "cells": [\n  {"cell_type": "code", "source": ["x = 1"],}\n ]\n}\n'
    (proj / "bad.ipynb").write_text(broken)
    p = torchport("migrate", str(proj), "--target", "npu", "-o", str(tmp_path / "out"), "-q")
    assert p.returncode == 3, (p.stdout, p.stderr)
    result = tmp_path / "out" / "proj_npu"
    assert (result / "bad.ipynb").read_text() == broken  # copied as it was
    with (result / "torchport-report" / "not_migrated.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[1][0] == "bad.ipynb" and rows[1][1] == "Failure"
    # Line 3, column 45: the "}" after the trailing comma.
    assert rows[1][2].startswith("bad.ipynb:3:45: not valid JSON: "), rows[1][2]


def test_a_cell_that_does_not_parse_is_a_row_with_its_cell(tmp_path: Path) -> None:
    nb = json.loads(json.dumps(NB))
    nb["cells"][2]["source"] = ["x = torch.ones(2).cuda()\n", "y = (1,\n"]
    original = write_nb(tmp_path / "proj" / "nb.ipynb", nb)
    p = torchport("analyze", str(tmp_path / "proj"), "--target", "npu", "--format", "text")
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "nb.ipynb:cell3:2:" in p.stdout + p.stderr
    assert (tmp_path / "proj" / "nb.ipynb").read_bytes() == original


def test_a_bash_cell_is_left_as_it_is(tmp_path: Path) -> None:
    nb = json.loads(json.dumps(NB))
    bash = ["%%bash\n", "export CUDA_VISIBLE_DEVICES=0\n", "python -c 'import torch; torch.ones(1).cuda()'"]
    nb["cells"].append(
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": bash}
    )
    write_nb(tmp_path / "proj" / "nb.ipynb", nb)
    p = torchport("migrate", str(tmp_path / "proj"), "--target", "npu", "-o", str(tmp_path / "out"), "-q")
    assert p.returncode == 0, p.stderr
    out = json.loads((tmp_path / "out" / "proj_npu" / "nb.ipynb").read_bytes())
    assert out["cells"][3]["source"] == bash
    assert not [r for r in report_of(tmp_path / "out" / "proj_npu")["findings"] if r["cell"] == 4]


def test_names_flow_across_cells(tmp_path: Path) -> None:
    """`device` is bound in cell 2 and used in cell 3: the rewrite of the string in cell 2 is what
    makes cell 3 right, and cell 3's `.to(device)` is not reported as unknown."""
    write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    p = torchport("analyze", str(tmp_path / "proj"), "--target", "npu", "--format", "text")
    assert p.returncode == 1, p.stderr
    assert "nb.ipynb:cell3:1:" not in p.stdout


def test_the_report_page_shows_cells_as_python(tmp_path: Path) -> None:
    write_nb(tmp_path / "proj" / "nb.ipynb", NB)
    p = torchport("migrate", str(tmp_path / "proj"), "--target", "npu", "-o", str(tmp_path / "out"), "-q")
    assert p.returncode == 0, p.stderr
    reports = tmp_path / "out" / "proj_npu" / "torchport-report"
    page = (reports / "index.html").read_text()
    data = json.loads(
        re.search(r'<script id="tp-data" type="application/json">(.*?)</script>', page, re.S)[1]
    )
    # Cell 3 line 2 (torch.cuda.empty_cache) is line 7 of the page's Python view: "# %% cell 2"
    # (1), its 3 lines (2-4), "# %% cell 3" (5), cell 3's line 1 (6) and line 2 (7).
    row = next(r for r in data["rows"] if r[8:] == [3, 2])
    assert row[1] == 7
    f = next(i for i, x in enumerate(data["files"]) if x[0] == "nb.ipynb")
    chunk = (reports / "files" / f"{data['files'][f][7]}.js").read_text()
    assert "# %% cell 3" in chunk and "torch.cuda.empty_cache()" in chunk and '"source"' not in chunk


@needs_notebooks
def test_the_corpus_suite_columns_are_zero_on_the_notebooks() -> None:
    """`python -m tests.corpus --notebooks`: the corpus suite's columns (crash, failed, parse,
    unflagged, remigrate, not_migrated) are 0 on the notebooks, for every target."""
    cells = static.run_notebooks()
    assert len(cells) == len(TARGETS)
    for c in cells:
        assert c.files == 6 and c.changed > 0, c.key
        problems = [str(p) for p in c.problems]
        # unfixed (a reported reference the catalogue has no replacement for on the target, such as
        # torch.cuda.reset_peak_memory_stats on mps) is the catalogue's, as for .py files: not 0.
        zero = [k for k in static.RATCHETED if k != "unfixed"]
        assert {k: getattr(c, k) for k in zero} == dict.fromkeys(zero, 0), problems


def test_an_import_after_the_last_line_of_a_cell_stays_in_that_cell(tmp_path: Path) -> None:
    """`import torch` ends cell 1 without a line break: `import torch_npu` goes after it in cell
    1 (still without a final line break), and its row says cell 1, line 3."""
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "source": ["%pip install x\n", "import torch"],
            },
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["x = torch.ones(1).cuda()"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    write_nb(tmp_path / "p" / "nb.ipynb", nb)
    p = torchport("migrate", str(tmp_path / "p"), "--target", "npu", "-o", str(tmp_path / "o"), "-q")
    assert p.returncode == 0, p.stderr
    out = json.loads((tmp_path / "o" / "p_npu" / "nb.ipynb").read_bytes())
    assert out["cells"][0]["source"] == ["%pip install x\n", "import torch\n", "import torch_npu"]
    assert out["cells"][1]["source"] == ["x = torch.ones(1).npu()"]
    rows = report_of(tmp_path / "o" / "p_npu")["findings"]
    insert = next(r for r in rows if r["operation"] == "INSERT")
    assert (insert["cell"], insert["start_line"]) == (1, 3)
