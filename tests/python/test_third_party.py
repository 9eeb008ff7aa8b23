"""`torchport analyze --third-party` (issue 20 §3): the library functions a project calls that reach
a CUDA-only or unsupported API, with the chain of calls, Ascend's five CSV files, and
full_unsupported_results.csv read back with --api.

Every expected chain below was written by hand from reading the library source (the fixture library
in fixtures/third_party/site, accelerate 1.15.0 and transformers 5.24.0 from the shared venv), not
copied from torchport's output.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FIX = Path(__file__).parent / "fixtures" / "third_party"
SITE = FIX / "site"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def analyze(project: Path, *extra: str, target: str = "npu") -> tuple[int, dict[str, Any]]:
    p = torchport("analyze", str(project), "--target", target, "--third-party", "--format", "json", *extra)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def chains(doc: dict[str, Any], root: Path) -> dict[tuple[str, int, str], list[tuple[str, str, int]]]:
    """(3rd-party API, project line, API reached) -> [(function, file under root, line)]."""
    out: dict[tuple[str, int, str], list[tuple[str, str, int]]] = {}
    for f in doc["findings"]:
        hops = []
        for h in f["chain"]:
            file = Path(h["file"])
            hops.append(
                (
                    h["function"],
                    file.relative_to(root).as_posix() if file.is_absolute() else h["file"],
                    h["line"],
                )
            )
        out[(f["api"], f["line"], f["reaches"])] = hops
    return out


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_fixture_library_chains(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIX / "project", project)
    rc, doc = analyze(project, "--env", str(SITE))
    assert rc == 1
    assert doc["libraries"] == ["fakelib"]
    got = chains(doc, SITE)
    # By hand, from fixtures/third_party/site/fakelib (line numbers of the calls):
    expected = {
        # train.py:7 fakelib.fused_step -> fakelib/__init__ re-exports ops.fused_step, which calls
        # synchronize (from torch.cuda) at ops.py:8 and _impl.kernel at :7; kernel calls
        # flash_attn.flash_attn_func at _impl.py:5 (flash_attn: a CUDA-only package).
        ("fakelib.fused_step", 7, "torch.cuda.synchronize"): [
            ("fakelib.ops.fused_step", "fakelib/ops.py", 8)
        ],
        ("fakelib.fused_step", 7, "flash_attn.flash_attn_func"): [
            ("fakelib.ops.fused_step", "fakelib/ops.py", 7),
            ("fakelib._impl.kernel", "fakelib/_impl.py", 5),
        ],
        # net = Net() (Net through `from .models import *` and models.__all__); net.run is
        # Net.run (models.py:17 self.to_device), inherited from Base (models.py:8 and :9).
        # (torch.backends.cudnn.benchmark at models.py:8 works unchanged on npu: not reported.)
        ("fakelib.Net.run", 9, ".cuda"): [
            ("fakelib.models.Net.run", "fakelib/models.py", 17),
            ("fakelib.models.Base.to_device", "fakelib/models.py", 9),
        ],
        # loop and loop2 call each other: the cycle still reaches empty_cache (models.py:23).
        ("fakelib.Net.loop", 10, "torch.cuda.empty_cache"): [
            ("fakelib.models.Net.loop", "fakelib/models.py", 20),
            ("fakelib.models.Net.loop2", "fakelib/models.py", 23),
        ],
    }
    assert got == expected
    # Net() (Net.__init__), fakelib.harmless (len) and the project's own helpers reach nothing.
    categories = {(f["reaches"], f["category"]) for f in doc["findings"]}
    assert ("flash_attn.flash_attn_func", "CUDA-only package") in categories
    assert ("torch.cuda.synchronize", "migration needed") in categories
    # On mlu the catalogue marks cudnn.benchmark unsupported (Cambricon's torch_api.yaml): a
    # reference that is not a call, reached through the inherited method.
    rc, doc = analyze(project, "--env", str(SITE), target="mlu")
    got = chains(doc, SITE)
    assert got[("fakelib.Net.run", 9, "torch.backends.cudnn.benchmark")] == [
        ("fakelib.models.Net.run", "fakelib/models.py", 17),
        ("fakelib.models.Base.to_device", "fakelib/models.py", 8),
    ]
    assert {f["category"] for f in doc["findings"] if f["reaches"] == "torch.backends.cudnn.benchmark"} == {
        "unsupported"
    }


def test_ascend_csvs_and_results_read_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = torchport(
        "analyze", str(FIX / "project"), "-t", "npu", "--third-party", "--env", str(SITE), "-o", str(out)
    )
    assert p.returncode == 1, p.stderr
    names = sorted(x.name for x in out.iterdir())
    for f in (
        "framework_unsupported_op.csv",
        "unknown_op.csv",
        "migration_needed_op.csv",
        "cuda_op.csv",
        "full_unsupported_results.csv",
    ):
        assert f in names
    # Ascend's headers (msFmkTransplt third_party_analyzer.py, ../shared/reference/peer-migration-tools.md)
    with (out / "migration_needed_op.csv").open(newline="") as fh:
        assert next(csv.reader(fh)) == ["Torch API", "Affected 3rd-party API"]
    with (out / "cuda_op.csv").open(newline="") as fh:
        assert next(csv.reader(fh)) == ["OP Name", "Affected 3rd-party API"]
    migration = {
        r["Torch API"]: set(r["Affected 3rd-party API"].split("\n"))
        for r in read_csv(out / "migration_needed_op.csv")
    }
    assert migration["torch.cuda.synchronize"] == {"fakelib.ops.fused_step", "fakelib.fused_step"}
    assert migration["torch.cuda.empty_cache"] == {
        "fakelib.models.Net.loop",
        "fakelib.models.Net.loop2",
        "fakelib.Net.loop",
    }
    cuda = {r["OP Name"]: set(r["Affected 3rd-party API"].split("\n")) for r in read_csv(out / "cuda_op.csv")}
    assert cuda == {
        "flash_attn.flash_attn_func": {"fakelib._impl.kernel", "fakelib.ops.fused_step", "fakelib.fused_step"}
    }
    full = {r["3rd-party API"].split("\n")[0]: r for r in read_csv(out / "full_unsupported_results.csv")}
    kernel = full["fakelib._impl.kernel"]
    assert kernel["File"] == str(SITE / "fakelib" / "_impl.py")
    assert (
        kernel["Message"].strip()
        == f"file_path:{SITE / 'fakelib' / '_impl.py'}, start_line:5, api_name:flash_attn.flash_attn_func"
    )

    # Read back: the library is gone from the search path, its results stand in for it.
    empty = tmp_path / "empty-site"
    empty.mkdir()
    rc, doc = analyze(
        FIX / "project", "--env", str(empty), "--api", str(out / "full_unsupported_results.csv")
    )
    assert rc == 1
    reached = {(f["api"], f["line"], f["reaches"]) for f in doc["findings"]}
    assert reached == {
        ("fakelib.fused_step", 7, "torch.cuda.synchronize"),
        ("fakelib.fused_step", 7, "flash_attn.flash_attn_func"),
        ("fakelib.Net.run", 9, ".cuda"),
        ("fakelib.Net.loop", 10, "torch.cuda.empty_cache"),
    }
    # The call of the leaf comes from the results file: fused_step's synchronize at ops.py:8.
    chain = next(f["chain"] for f in doc["findings"] if f["reaches"] == "torch.cuda.synchronize")
    assert chain == [
        {"function": "fakelib.ops.fused_step", "file": str(SITE / "fakelib" / "ops.py"), "line": 8}
    ]


def test_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("File,3rd-party API,Message\nx.py,a.b,not a message line\n")
    p = torchport(
        "analyze", str(FIX / "project"), "-t", "npu", "--third-party", "--env", str(SITE), "--api", str(bad)
    )
    assert p.returncode == 2
    assert f"{bad}:2: message line 'not a message line'" in p.stderr
    assert "Traceback" not in p.stderr
    p = torchport(
        "analyze", str(FIX / "project"), "-t", "npu", "--third-party", "--env", str(SITE), "--format", "sarif"
    )
    assert p.returncode == 2
    assert "--third-party prints text or json" in p.stderr
    p = torchport("analyze", str(tmp_path / "missing"), "-t", "npu", "--third-party", "--env", str(SITE))
    assert p.returncode == 2
    p = torchport("analyze", str(FIX / "project"), "-t", "npu", "--env", str(SITE))
    assert p.returncode == 2
    assert "--env requires --third-party" in p.stderr


def _installed(name: str, version: str) -> Path | None:
    """The site-packages directory holding `name` at `version` in this interpreter's environment."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution
    except ImportError:  # pragma: no cover
        return None
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return None
    if dist.version != version:
        return None
    return Path(str(dist.locate_file("")))


def test_accelerate_release_memory(tmp_path: Path) -> None:
    site = _installed("accelerate", "1.15.0")
    if site is None:
        pytest.skip("accelerate 1.15.0 (PyPI) is not installed: the chain below was checked on it")
    project = tmp_path / "accel_project"
    shutil.copytree(FIX / "accel_project", project)
    rc, doc = analyze(project, "--env", str(site))
    assert rc == 1
    assert "accelerate" in doc["libraries"]
    got = chains(doc, site)
    # By hand, accelerate 1.15.0: accelerate/utils/__init__.py:277 re-exports memory.release_memory,
    # which calls clear_device_cache(garbage_collection=True) at utils/memory.py:96; that one calls
    # torch.cuda.empty_cache() at utils/memory.py:61.
    assert got[("accelerate.utils.release_memory", 7, "torch.cuda.empty_cache")] == [
        ("accelerate.utils.memory.release_memory", "accelerate/utils/memory.py", 96),
        ("accelerate.utils.memory.clear_device_cache", "accelerate/utils/memory.py", 61),
    ]
    # is_cuda_available (utils/imports.py:125) calls torch.cuda.is_available: reached too.
    reached = {k[2] for k in got}
    assert "torch.cuda.is_available" in reached
    is_available = got[("accelerate.utils.release_memory", 7, "torch.cuda.is_available")]
    assert is_available[-1] == (
        "accelerate.utils.imports.is_cuda_available",
        "accelerate/utils/imports.py",
        125,
    )


def test_corpus_llm_c_with_transformers(tmp_path: Path) -> None:
    """A corpus project (karpathy/llm.c, copied) against the PyPI transformers + accelerate."""
    site = _installed("transformers", "5.24.0")
    if site is None or _installed("accelerate", "1.15.0") != site:
        pytest.skip("transformers 5.24.0 and accelerate 1.15.0 (PyPI) are not installed side by side")
    src = CORPUS / "karpathy__llm.c"
    if not src.is_dir():
        pytest.skip("../shared/corpus is not present")
    project = tmp_path / "llm.c"
    shutil.copytree(src, project, symlinks=True)
    out = tmp_path / "out"
    rc, doc = analyze(project, "--env", str(site), "-o", str(out))
    assert rc == 1
    assert "transformers" in doc["libraries"]  # accelerate is reached through it, not imported
    got = chains(doc, site)
    # By hand: train_gpt2.py:216 `GPT2LMHeadModel.from_pretrained` (imported from transformers,
    # TYPE_CHECKING star imports down to models/gpt2/modeling_gpt2.py; the method is inherited:
    # GPT2LMHeadModel -> GPT2PreTrainedModel -> PreTrainedModel). modeling_utils.py:4418 calls
    # _get_device_map; integrations/accelerate.py:354 get_balanced_memory, :276 get_max_memory,
    # :210 accelerate_max_memory (accelerate.utils.get_max_memory, from utils/modeling.py), which
    # calls torch.cuda.get_device_properties at accelerate/utils/modeling.py:820.
    assert got[("transformers.GPT2LMHeadModel.from_pretrained", 216, "torch.cuda.get_device_properties")] == [
        (
            "transformers.modeling_utils.PreTrainedModel.from_pretrained",
            "transformers/modeling_utils.py",
            4418,
        ),
        (
            "transformers.integrations.accelerate._get_device_map",
            "transformers/integrations/accelerate.py",
            354,
        ),
        (
            "transformers.integrations.accelerate.get_balanced_memory",
            "transformers/integrations/accelerate.py",
            276,
        ),
        (
            "transformers.integrations.accelerate.get_max_memory",
            "transformers/integrations/accelerate.py",
            210,
        ),
        ("accelerate.utils.modeling.get_max_memory", "accelerate/utils/modeling.py", 820),
    ]
    finding = next(
        f for f in doc["findings"] if f["line"] == 216 and f["reaches"] == "torch.cuda.get_device_properties"
    )
    assert finding["file"] == "train_gpt2.py"
    assert finding["category"] == "migration needed"
    migration = {
        r["Torch API"]: set(r["Affected 3rd-party API"].split("\n"))
        for r in read_csv(out / "migration_needed_op.csv")
    }
    assert "accelerate.utils.modeling.get_max_memory" in migration["torch.cuda.get_device_properties"]
    # The corpus copy is left as it was: the analysis writes only into -o.
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == sorted(
        p.relative_to(src) for p in src.rglob("*")
    )


def test_default_env_is_the_active_environment(tmp_path: Path) -> None:
    """Without --env, the `torchport` command passes this interpreter's site-packages."""
    site = _installed("accelerate", "1.15.0")
    if site is None:
        pytest.skip("accelerate 1.15.0 (PyPI) is not installed")
    project = tmp_path / "accel_project"
    shutil.copytree(FIX / "accel_project", project)
    rc, doc = analyze(project)
    assert rc == 1
    assert str(site.resolve()) in doc["env"]
    assert ("accelerate.utils.release_memory", 7, "torch.cuda.empty_cache") in chains(doc, site)


def test_reads_an_ascend_results_file(tmp_path: Path) -> None:
    """A full_unsupported_results.csv in Ascend's layout, written by hand (names one a line, the
    message one `file_path:F, start_line:N, api_name:API ` line per API, each ending in a space),
    for a library that is not installed: the project's call is reported from it alone."""
    empty = tmp_path / "site"
    empty.mkdir()
    rc, doc = analyze(
        FIX / "mmcv_project", "--env", str(empty), "--api", str(FIX / "ascend_full_unsupported_results.csv")
    )
    assert rc == 1
    got = {(f["api"], f["line"], f["reaches"], f["category"]): f["chain"] for f in doc["findings"]}
    assert got == {
        ("mmcv.ops.nms", 5, "torch.cuda.current_device", "migration needed"): [
            {
                "function": "mmcv.ops.nms.nms",
                "file": "/usr/lib/python3/site-packages/mmcv/ops/nms.py",
                "line": 42,
            }
        ],
        ("mmcv.ops.nms", 5, "torch.cuda.is_available", "migration needed"): [
            {
                "function": "mmcv.ops.nms.nms",
                "file": "/usr/lib/python3/site-packages/mmcv/utils/ext_loader.py",
                "line": 13,
            }
        ],
    }
