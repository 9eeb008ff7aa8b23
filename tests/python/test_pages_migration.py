"""torchport.pages.migration without a browser: the per-file rows and what index.html holds."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from torchport import report_json
from torchport._core import core_binary
from torchport.pages.migration import chunk_lines, file_chunk, write_migration_page

ROOT = Path(__file__).resolve().parents[2]


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "torchport", *args, "--no-config"]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_chunk_keeps_changed_and_flagged_lines_with_context():
    before = [f"line {i}" for i in range(1, 21)]
    after = before[:2] + ["import torch_npu"] + before[2:]  # one line inserted after line 2
    after[10] = "line 10 changed"  # old line 10 (now new line 11) changed
    chunk = file_chunk("a.py", before, after, finding_lines={18})
    assert chunk["diff"] is True
    # Stored compactly: a shared line is its text, left-out lines a count, a change tagged.
    assert chunk["rows"][:4] == ["line 1", "line 2", ["+", "import torch_npu"], "line 3"]
    assert chunk["rows"][6:8] == [1, "line 7"]
    assert ["~", "line 10", "line 10 changed"] in chunk["rows"]
    rows = chunk_lines(chunk["rows"])
    # lines 1-5 around the insertion, gap, 7-13 around the change, gap, 15-20 around the finding
    assert rows[0] == (1, "line 1", 1, "line 1", "=")
    assert rows[2] == (0, "", 3, "import torch_npu", "+")
    assert rows[3] == (3, "line 3", 4, "line 3", "=")
    assert [r for r in rows if r[0] == "gap"] == [("gap", 1), ("gap", 1)]
    assert (10, "line 10", 11, "line 10 changed", "~") in rows
    assert rows[-1] == (20, "line 20", 21, "line 20", "=")
    olds = [r[0] for r in rows if r[0] != "gap"]
    assert olds == [1, 2, 0, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20]


def test_analyze_chunk_is_the_source_around_findings():
    src = [f"l{i}" for i in range(1, 31)]
    chunk = file_chunk("b.py", src, None, finding_lines={15})
    assert chunk["diff"] is False
    assert chunk["rows"] == [11] + [f"l{i}" for i in range(12, 19)] + [12]
    assert chunk_lines(chunk["rows"]) == [("gap", 11)] + [
        (i, f"l{i}", i, f"l{i}", "=") for i in range(12, 19)
    ] + [("gap", 12)]


def test_chunk_numbers_lines_on_both_sides_through_removals_and_additions():
    before = [f"b{i}" for i in range(1, 13)]
    after = ["b1", "new a", "new b"] + before[1:5] + before[7:]  # 2 added after 1, b6 b7 removed
    rows = [
        r
        for r in chunk_lines(file_chunk("c.py", before, after, finding_lines=set())["rows"])
        if r[0] != "gap"
    ]
    assert [r for r in rows if r[4] == "+"] == [(0, "", 2, "new a", "+"), (0, "", 3, "new b", "+")]
    assert [r for r in rows if r[4] == "-"] == [(6, "b6", 0, "", "-"), (7, "b7", 0, "", "-")]
    assert (8, "b8", 8, "b8", "=") in rows and (5, "b5", 7, "b5", "=") in rows
    for old, old_text, new, new_text, _ in rows:
        assert (not old or before[old - 1] == old_text) and (not new or after[new - 1] == new_text)


def test_page_of_a_migration(tmp_path):
    proc = torchport(
        "migrate", str(ROOT / "examples" / "cuda_project"), "-o", str(tmp_path), "-t", "npu", "-q"
    )
    assert proc.returncode == 0, proc.stderr
    reports = tmp_path / "cuda_project_npu" / "torchport-report"
    page = (reports / "index.html").read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    data = json.loads(
        re.search(r'<script id="tp-data" type="application/json">(.*?)</script>', page, re.S)[1]
    )
    report = report_json.load(reports / "report.json")
    assert len(data["rows"]) == len(report["findings"])
    assert [f[0] for f in data["files"]] == [f["file"] for f in report["files"]]
    train = next(f for f in data["files"] if f[0] == "train.py")
    assert train[3] == 1 and train[7] >= 0  # changed, with a detail chunk
    chunk = (reports / "files" / f"{train[7]}.js").read_text()
    assert chunk.startswith(f"tpChunk({train[7]},") and 'map_location=\\"npu:0\\"' in chunk
    assert not (reports / "files" / f"{data['files'][0][7]}.js").exists()  # README.txt: no chunk
    # writing it again replaces it (no stale chunks)
    write_migration_page(reports)
    assert sorted(p.name for p in (reports / "files").iterdir()) == sorted(
        f"{f[7]}.js" for f in data["files"] if f[7] >= 0
    )


def test_script_end_tags_in_sources_cannot_break_the_page(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "evil.py").write_text(
        'import torch\nx = "</script><script>alert(1)</script>"\ntorch.cuda.synchronize()\n'
    )
    proc = torchport("analyze", str(proj), "-t", "cpu", "-o", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    assert page.count("</script>") == 2  # the data block and the page's script
    chunk = next((tmp_path / "r" / "files").iterdir()).read_text()
    assert "</script>" not in chunk


def test_page_of_an_in_place_migration_diffs_against_the_backup(tmp_path):
    import shutil

    proj = tmp_path / "proj"
    shutil.copytree(ROOT / "examples" / "cuda_project", proj)
    proc = torchport("migrate", str(proj), "--inplace", "-t", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    reports = tmp_path / "proj.torchport-backup" / "torchport-report"
    page = (reports / "index.html").read_text()
    data = json.loads(
        re.search(r'<script id="tp-data" type="application/json">(.*?)</script>', page, re.S)[1]
    )
    train = next(f for f in data["files"] if f[0] == "train.py")
    chunk = json.loads((reports / "files" / f"{train[7]}.js").read_text()[len(f"tpChunk({train[7]},") : -3])
    changed = [r for r in chunk_lines(chunk["rows"]) if r[0] != "gap" and r[4] == "~"]
    assert any("cuda" in r[1] and "cuda" not in r[3] for r in changed)  # original | rewritten in place


def page_files(reports: Path) -> dict[str, bytes]:
    files = {"index.html": (reports / "index.html").read_bytes()}
    files.update({f"files/{p.name}": p.read_bytes() for p in (reports / "files").iterdir()})
    return files


def test_the_core_writes_the_page_the_python_writer_writes(tmp_path):
    """The core alone writes index.html and files/ with its CSVs; torchport.pages.migration
    (which the front end runs only after --object-storage) writes the same bytes from
    report.json, for a project with a rewritten file, a notebook and a file left as it is."""
    proj = tmp_path / "proj"
    shutil.copytree(ROOT / "examples" / "cuda_project", proj)
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# notes\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["import torch\n", "x = torch.zeros(2).cuda()\n"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["%time y = x + 1\n", "print(torch.cuda.max_memory_allocated())"],
        },
    ]
    (proj / "nb.ipynb").write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    out = tmp_path / "out"
    core = subprocess.run(
        [core_binary(), "migrate", str(proj), "-o", str(out), "-t", "npu", "-q"],
        capture_output=True,
        text=True,
    )
    assert core.returncode == 0, core.stderr
    reports = out / "proj_npu" / "torchport-report"
    by_core = page_files(reports)
    assert len(by_core) > 2  # the page and its chunks
    assert any(b'"# %% cell 2"' in v for v in by_core.values())  # the notebook, shown as Python
    write_migration_page(reports)
    assert page_files(reports) == by_core


def test_analyze_again_into_the_same_directory_leaves_no_stale_chunk(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    (proj / "b.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    assert torchport("analyze", str(proj), "-t", "cpu", "-o", str(tmp_path / "r")).returncode == 1
    assert sorted(p.name for p in (tmp_path / "r" / "files").iterdir()) == ["0.js", "1.js"]
    (proj / "a.py").write_text("x = 1\n")  # no finding left in a.py: no chunk for it
    assert torchport("analyze", str(proj), "-t", "cpu", "-o", str(tmp_path / "r")).returncode == 1
    assert sorted(p.name for p in (tmp_path / "r" / "files").iterdir()) == ["1.js"]
