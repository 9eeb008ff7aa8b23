"""`torchport migrate / analyze / explain / targets` end to end, through the installed command.

Exit codes, the report files and their exact columns, the refusals, --inplace with backups, and
files that cannot be parsed (reported with path:line:col and still copied).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchport import report_json

REPO = Path(__file__).resolve().parents[2]

TRAIN = """\
import os
import torch
import flash_attn

# cuda is mentioned in this comment and must stay
URL = "https://example.com/cuda/docs"


def main():
    model = torch.nn.Linear(4, 2).cuda()
    x = torch.randn(8, 4).cuda()
    torch.cuda.synchronize()
    print("peak", torch.cuda.max_memory_allocated())
    return model(x)
"""


def torchport(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False, cwd=cwd)


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "train.py").write_text(TRAIN)
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "README.md").write_text("Runs on cuda.\n")
    (proj / "weights.bin").write_bytes(bytes(range(256)))
    return proj


def test_migrate_npu_writes_the_tree_and_ascend_reports(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = torchport("migrate", str(project), "-o", str(out), "--target", "npu")
    assert p.returncode == 0, p.stderr
    result = out / "proj_npu"
    new = (result / "train.py").read_text()
    assert "torch_npu.npu.synchronize()" in new
    assert "torch_npu.npu.max_memory_allocated()" in new
    assert "import torch_npu" in new
    # Comments and unrelated strings are never touched.
    assert "# cuda is mentioned in this comment and must stay" in new
    assert 'URL = "https://example.com/cuda/docs"' in new
    # Non-Python files are copied byte for byte.
    assert (result / "README.md").read_text() == "Runs on cuda.\n"
    assert (result / "weights.bin").read_bytes() == bytes(range(256))
    assert (result / "pkg" / "__init__.py").exists()

    reports = result / "torchport-report"
    changes = read_csv(reports / "change_list.csv")
    assert changes[0] == ["File", "Start Line", "End Line", "Operation Type", "Message"]
    sync = [r for r in changes[1:] if "synchronize" in r[4]]
    assert sync and sync[0][:4] == ["train.py", "12", "12", "MODIFY"], changes
    assert {r[3] for r in changes[1:]} <= {"INSERT", "MODIFY", "DELETE", "UNSUPPORTED"}
    unsupported = read_csv(reports / "unsupported_api.csv")
    assert unsupported[0] == ["File", "Start Line", "End Line", "OP", "Tips"]
    assert any(r[0] == "train.py" and r[1] == "3" and "flash_attn" in r[3] for r in unsupported[1:])
    assert read_csv(reports / "unknown_api.csv")[0] == ["File", "Start Line", "End Line", "OP", "Tips"]
    assert read_csv(reports / "cuda_op_list.csv") == [["File", "Api"]]
    report = report_json.load(reports / "report.json")
    assert report["target"] == "npu"
    assert report["summary"]["failure"] == 0
    assert report["summary"]["files"] == 4
    # The log keeps the warnings and the summary; a line per file and per finding only with --verbose.
    log = (reports / "torchport.log").read_text()
    assert "[Progress:" not in log and "Operation Type" not in log
    assert "changes (change_list.csv), 1 unsupported (unsupported_api.csv), 0 unknown" in log
    v = torchport("migrate", str(project), "-o", str(out), "--target", "npu", "--force", "--verbose", "-q")
    assert v.returncode == 0, v.stderr
    assert "[Progress: 100.00%]" in (reports / "torchport.log").read_text()
    # The summary table is printed.
    assert "| files" in p.stdout and "| change_list.csv" in p.stdout


def test_input_is_never_modified(project: Path, tmp_path: Path) -> None:
    before = {f: f.read_bytes() for f in project.rglob("*") if f.is_file()}
    assert torchport("migrate", str(project), "-o", str(tmp_path / "o"), "-t", "cpu").returncode == 0
    after = {f: f.read_bytes() for f in project.rglob("*") if f.is_file()}
    assert after == before


def test_refuses_outdir_inside_input(project: Path) -> None:
    p = torchport("migrate", str(project), "-o", str(project / "out"), "-t", "npu")
    assert p.returncode == 2
    assert "is inside INPUT" in p.stderr
    assert not (project / "out").exists()


def test_refuses_to_overwrite_without_force(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert torchport("migrate", str(project), "-o", str(out), "-t", "npu").returncode == 0
    (out / "proj_npu" / "mine.txt").write_text("keep?")
    p = torchport("migrate", str(project), "-o", str(out), "-t", "npu")
    assert p.returncode == 2
    assert "already exists (use --force" in p.stderr
    assert (out / "proj_npu" / "mine.txt").exists()
    assert torchport("migrate", str(project), "-o", str(out), "-t", "npu", "--force").returncode == 0
    assert not (out / "proj_npu" / "mine.txt").exists()


def test_bad_files_are_reported_with_location_and_copied(project: Path, tmp_path: Path) -> None:
    (project / "py2.py").write_text("print 'hello'\n")
    (project / "pkg" / "broken.py").write_text("x = 1\ndef f(:\n    pass\n")
    (project / "binary.py").write_bytes(b"x = '\xff'\n")
    out = tmp_path / "out"
    p = torchport("migrate", str(project), "-o", str(out), "-t", "npu")
    assert p.returncode == 3, "files not migrated make the run incomplete: exit status 3"
    assert "pkg/broken.py:2:" in p.stderr
    assert "py2.py:1:" in p.stderr
    assert "binary.py:1:6: cannot decode" in p.stderr
    result = out / "proj_npu"
    assert (result / "py2.py").read_text() == "print 'hello'\n"
    assert (result / "pkg" / "broken.py").read_text() == "x = 1\ndef f(:\n    pass\n"
    assert (result / "binary.py").read_bytes() == b"x = '\xff'\n"
    report = report_json.load(result / "torchport-report" / "report.json")
    outcomes = {f["file"]: f["outcome"] for f in report["files"]}
    assert outcomes["pkg/broken.py"] == "Failure"
    assert outcomes["train.py"] == "Success"
    assert outcomes["README.md"] == "Skip"


def test_inplace_keeps_backups_and_leaves_no_temporary_files(project: Path, tmp_path: Path) -> None:
    backup = tmp_path / "bak"
    p = torchport("migrate", str(project), "--inplace", "--backup", str(backup), "-t", "xpu")
    assert p.returncode == 0, p.stderr
    assert (backup / "train.py").read_text() == TRAIN
    assert "torch.xpu.synchronize()" in (project / "train.py").read_text()
    assert not (backup / "README.md").exists(), "unchanged files need no backup"
    assert (backup / "torchport-report" / "change_list.csv").exists()
    leftovers = [f for f in project.rglob("*") if "torchport-tmp" in f.name]
    assert leftovers == []
    again = torchport("migrate", str(project), "--inplace", "--backup", str(backup), "-t", "xpu")
    assert again.returncode == 2
    assert "already exists" in again.stderr


def test_diff_shows_each_change(project: Path, tmp_path: Path) -> None:
    p = torchport("migrate", str(project), "-o", str(tmp_path / "o"), "-t", "npu", "--diff", "-q")
    assert p.returncode == 0, p.stderr
    assert "--- a/train.py\n+++ b/train.py\n" in p.stdout
    assert "-    torch.cuda.synchronize()\n+    torch_npu.npu.synchronize()\n" in p.stdout
    if shutil.which("patch"):
        work = tmp_path / "patched"
        shutil.copytree(project, work)
        r = subprocess.run(["patch", "-p1", "-s"], input=p.stdout, text=True, cwd=work, check=False)
        assert r.returncode == 0
        assert (work / "train.py").read_text() == (tmp_path / "o" / "proj_npu" / "train.py").read_text()


def test_analyze_exit_codes_gate_ci(project: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "m.py").write_text("import torch\nx = torch.ones(2)\n")
    assert torchport("analyze", str(clean), "-t", "npu").returncode == 0
    p = torchport("analyze", str(project), "-t", "npu", "--format", "json")
    assert p.returncode == 1
    data = report_json.loads(p.stdout)
    assert data["command"] == "analyze"
    assert any(f["api"] == "torch.cuda.synchronize" for f in data["findings"])
    assert all(not f["applied"] for f in data["findings"])
    text = torchport("analyze", str(project), "-t", "npu")
    assert "train.py:12:" in text.stdout
    bad = torchport("analyze", str(project), "-t", "tpu")
    assert bad.returncode == 2
    assert "unknown target 'tpu'" in bad.stderr


def test_explain_prints_replacement_status_version_and_source() -> None:
    p = torchport("explain", "torch.cuda.max_memory_allocated", "--target", "npu")
    assert p.returncode == 0, p.stderr
    assert "npu: torch_npu.npu.max_memory_allocated" in p.stdout
    assert "status:        supported" in p.stdout
    assert "https://github.com/Ascend/pytorch/tree/9e73e708" in p.stdout, "a public source"
    acc = json.loads(torchport("explain", "torch.cuda.max_memory_allocated", "--format", "json").stdout)
    assert acc["targets"]["accelerator"]["replacement"] == "torch.accelerator.max_memory_allocated"
    assert acc["targets"]["accelerator"]["min_torch"] == "2.9"
    # torch.mps keeps no peak statistic: the call becomes 0 there, labelled (as on cpu)
    assert acc["targets"]["mps"]["status"] == "partial"
    assert acc["targets"]["mps"]["without_device"] == "0"
    nccl = torchport("explain", "nccl", "-t", "mlu")
    assert "mlu: cncl" in nccl.stdout
    cuda_method = torchport("explain", ".cuda", "-t", "xpu")
    assert "xpu: .xpu" in cuda_method.stdout
    missing = torchport("explain", "max_memory")
    assert missing.returncode == 1
    assert "max_memory is unknown to torchport's knowledge base for any target" in missing.stderr
    assert "did you mean: torch.cuda.max_memory_allocated" in missing.stderr


def test_targets_lists_every_target_with_its_facts() -> None:
    data = json.loads(torchport("targets", "--format", "json").stdout)
    by = {t["name"]: t for t in data}
    assert list(by) == ["npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu", "accelerator"]
    assert by["npu"]["backend"] == "hccl" and by["npu"]["import"] == "import torch_npu"
    assert by["npu"]["support_lists"] == ["2.1", "2.6", "2.7", "2.8"]
    # MPS has no collective backend of its own: default_device_backend_map["mps"] is gloo (CPU tensors)
    assert by["mps"]["backend"] == "gloo"
    assert "float64" in by["mps"]["no_dtypes"]
    text = torchport("targets").stdout
    assert "accelerator  device-agnostic" in text


def test_catalogue_docs_are_fresh() -> None:
    tool = REPO / "tools" / "gen_catalogue_docs.py"
    if not tool.exists():
        pytest.skip("needs the source tree (tools/)")
    p = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def test_generated_catalogue_data_is_fresh() -> None:
    tool = REPO / "tools" / "gen_catalogue.py"
    upstream = Path(os.environ.get("TORCHPORT_UPSTREAM", "/work/shared/upstream"))
    if not tool.exists() or not upstream.is_dir():
        pytest.skip("needs the source tree and the vendor lists (TORCHPORT_UPSTREAM)")
    pytest.importorskip("yaml")
    p = subprocess.run(
        [sys.executable, str(tool), "--check", "--upstream", str(upstream)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_custom_rules_in_ascends_legacy_format(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text("import CC.DD as CD\nCD.old_name()\n")
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {"rules": {"FuncNameModifyRule": [{"old_name": "CC.DD.old_name", "new_name": "AA.BB.new_name"}]}}
        )
    )
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", "npu", "--rules", str(rules))
    assert p.returncode == 0, p.stderr
    # Ascend's own example (test_rules.py): the call is renamed through the import alias.
    out = (tmp_path / "o" / "p_npu" / "a.py").read_text()
    assert out.startswith("import CC.DD as CD\n")
    assert out.endswith("\nAA.BB.new_name()\n")
    assert "old_name" not in out


def test_custom_args_modify_rule_rewrites_and_deletes_arguments(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text(
        "import torch as t\n"
        "x = t.ones(2).to(dev)\n"
        "y = x.to('cpu')\n"
        "z = t.zeros(2, pin_memory=True, device=dev)\n"
    )
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {
                "rules": {
                    "ArgsModifyRule": [
                        {
                            "func_name": "to",
                            "arg_idx": 0,
                            "arg_new": "f'npu:{DEVICE_ID}'",
                            "white_list": ["cpu"],
                        },
                        {"func_name": "torch.zeros", "arg_keyword": "pin_memory", "arg_new": ""},
                    ]
                }
            }
        )
    )
    out_dir = tmp_path / "o"
    p = torchport("migrate", str(proj), "-o", str(out_dir), "-t", "npu", "--rules", str(rules))
    assert p.returncode == 0, p.stderr
    out = (out_dir / "p_npu" / "a.py").read_text()
    assert "x = t.ones(2).to(f'npu:{DEVICE_ID}')\n" in out
    assert "y = x.to('cpu')\n" in out
    assert "z = t.zeros(2, device=dev)\n" in out
    # arg_new uses DEVICE_ID: it is defined, so the output runs.
    assert 'DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))\n' in out
    rows = read_csv(out_dir / "p_npu" / "torchport-report" / "change_list.csv")
    custom = [(r[1], r[3], r[4]) for r in rows[1:] if r[3] in ("MODIFY", "DELETE") and r[1] in ("2", "4")]
    assert custom == [
        ("2", "MODIFY", "change the arg at position 0 of function to to f'npu:{DEVICE_ID}'"),
        ("4", "DELETE", "delete the keyword arg pin_memory of function torch.zeros"),
    ]
    # A bad rule is an error naming the field.
    rules.write_text(
        json.dumps({"rules": {"ArgsModifyRule": [{"func_name": "to", "arg_idx": -1, "arg_new": ""}]}})
    )
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o2"), "-t", "npu", "--rules", str(rules))
    assert p.returncode == 2
    assert f"{rules}: rules.ArgsModifyRule[0].arg_idx: expected a non-negative integer, got -1" in p.stderr


def test_bad_rule_file_gets_an_error_naming_the_field(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text("x = 1\n")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": {"ModuleNameModifyRule": [{"old_name": "cuda"}]}}))
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", "npu", "--rules", str(rules))
    assert p.returncode == 2
    assert f'{rules}: rules.ModuleNameModifyRule[0]: missing field "new_name"' in p.stderr
    assert not (tmp_path / "o" / "p_npu").exists()


@pytest.mark.parametrize("target", ["npu", "cpu", "accelerator"])
def test_migrating_the_output_again_changes_nothing(project: Path, tmp_path: Path, target: str) -> None:
    first = tmp_path / "first"
    assert torchport("migrate", str(project), "-o", str(first), "-t", target).returncode == 0
    out1 = first / f"proj_{target}"
    second = tmp_path / "second"
    p = torchport("migrate", str(out1), "-o", str(second), "-t", target)
    assert p.returncode == 0, p.stderr
    out2 = second / f"proj_{target}_{target}"
    for f in out1.rglob("*.py"):
        rel = f.relative_to(out1)
        assert (out2 / rel).read_text() == f.read_text(), rel
    rows = read_csv(out2 / "torchport-report" / "change_list.csv")[1:]
    assert [r for r in rows if r[3] in ("INSERT", "MODIFY", "DELETE")] == []
    # The first run's reports are not treated as part of the project.
    report = report_json.load(out2 / "torchport-report" / "report.json")
    assert not any(f["file"].startswith("torchport-report/") for f in report["files"])


def test_an_output_that_does_not_parse_keeps_the_original(tmp_path: Path) -> None:
    # A custom rule whose replacement is not valid Python: the self-check re-parses the rewritten
    # file before writing it, reports an internal error and copies the original unchanged.
    proj = tmp_path / "proj"
    proj.mkdir()
    original = "import torch\ntorch.cuda.synchronize()\n"
    (proj / "a.py").write_text(original)
    rules = tmp_path / "r.json"
    entry = {
        "api": "torch.cuda.synchronize",
        "kind": "function",
        "family": "device",
        "targets": {"npu": {"replacement": "torch_npu.npu.(", "status": "supported", "source": "test"}},
    }
    rules.write_text(json.dumps({"entries": [entry]}))
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", "npu", "--rules", str(rules))
    assert p.returncode == 3, p.stderr
    assert "a.py: internal error: the rewritten file does not parse (a.py:3:15:" in p.stderr
    assert (tmp_path / "o" / "proj_npu" / "a.py").read_text() == original
    report = report_json.load(tmp_path / "o" / "proj_npu" / "torchport-report" / "report.json")
    (entry_row,) = [f for f in report["files"] if f["file"] == "a.py"]
    assert entry_row["outcome"] == "Failure"
    assert entry_row["changed"] is False
    assert "the original is kept" in entry_row["reason"]


# Applicability (docs/cli.md "Which fixes are applied"): one default for the command line and
# the library, unsafe fixes applied and labelled; display-only fixes never applied.
APPLICABILITY = """\
import torch

choices = ("cuda", "cpu")
with torch.autocast("cuda"):
    y = torch.ones(2).cuda()
print(torch.cuda.max_memory_allocated())
"""
ALL_FIXES = """\
import torch

choices = ("cuda", "cpu")
with torch.autocast("cpu", dtype=torch.float16):
    y = torch.ones(2).to("cpu")
print(0)
"""
SAFE_FIXES = """\
import torch

choices = ("cuda", "cpu")
with torch.autocast("cpu"):
    y = torch.ones(2).to("cpu")
print(torch.cuda.max_memory_allocated())
"""


@pytest.mark.parametrize(
    ("flags", "unsafe_applied", "output"),
    [
        ([], True, ALL_FIXES),
        (["--unsafe-fixes"], True, ALL_FIXES),
        (["--no-unsafe-fixes"], False, SAFE_FIXES),
    ],
)
def test_unsafe_fixes_are_applied_by_default_and_display_only_ones_never(
    tmp_path: Path, flags: list[str], unsafe_applied: bool, output: str
) -> None:
    script = tmp_path / "s.py"
    script.write_text(APPLICABILITY)
    r = torchport("migrate", str(script), "-t", "cpu", "-o", str(tmp_path / "out"), "-q", *flags)
    assert r.returncode == 0, r.stderr
    result = tmp_path / "out" / "s_cpu"
    assert (result / "s.py").read_text() == output
    report = report_json.load(result / "torchport-report" / "report.json")
    seen = {f["code"]: (f.get("applicability"), f["applied"]) for f in report["findings"]}
    assert seen == {
        "TP700": ("display-only", False),  # "cuda" in a tuple: its use as a device is not clear
        "TP300": ("safe", True),
        "TP201": ("unsafe", unsafe_applied),  # autocast's dtype pinned: a numerics choice
        "TP301": ("safe", True),
        "TP100": ("unsafe", unsafe_applied),  # a value replaced by a constant
    }
    tp700 = next(f for f in report["findings"] if f["code"] == "TP700")
    assert tp700["message"].startswith("not applied (display-only fix): a CUDA device string")


def test_the_printed_paths_are_all_absolute_and_lead_to_the_outputs(project: Path, tmp_path: Path) -> None:
    # `-o out` relative to the working directory: result:, reports: and report page: all print absolute
    # paths (report page: was relative while the other two were absolute)
    p = torchport("migrate", str(project), "-o", "out", "--target", "npu", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    named = dict(
        ln.split(": ", 1)
        for ln in p.stdout.splitlines()
        if ln.startswith(("result:", "reports:", "report page:"))
    )
    assert set(named) == {"result", "reports", "report page"}, p.stdout
    result = tmp_path / "out" / "proj_npu"
    assert named == {
        "result": str(result),
        "reports": str(result / "torchport-report"),
        "report page": str(result / "torchport-report" / "index.html"),
    }
    assert all(Path(v).is_absolute() and Path(v).exists() for v in named.values())


def test_analyze_with_reports_prints_where_they_are_as_migrate_does(project: Path, tmp_path: Path) -> None:
    p = torchport("analyze", str(project), "-o", "rep", "--target", "npu", cwd=tmp_path)
    assert p.returncode == 1, p.stderr  # findings
    named = dict(
        ln.split(": ", 1) for ln in p.stdout.splitlines() if ln.startswith(("reports:", "report page:"))
    )
    assert named == {"reports": str(tmp_path / "rep"), "report page": str(tmp_path / "rep" / "index.html")}
    q = torchport("analyze", str(project), "-o", "rep2", "--target", "npu", "-q", cwd=tmp_path)
    assert "reports:" not in q.stdout and "report page:" not in q.stdout
