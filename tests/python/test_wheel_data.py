"""The wheel ships the knowledge base torchport.targets reads: an installed layout built from CMakeLists.txt's
SKBUILD install rules gives the same targets as the source checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CODE = (
    "import json, torchport.targets as T\n"
    "print(json.dumps({'dir': str(T.data_dir()), 'targets': {n: [t.backend, sorted(t.env_map.items()),"
    " sorted(t.env_prefix_map.items()), t.float64, t.unverified] for n, t in T.TARGETS.items()},"
    " 'env': T.CUDA_ENV_VARS}))\n"
)


def run(pythonpath: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DATA_DIR"}
    env["PYTHONPATH"] = str(pythonpath)
    p = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=False,
                       cwd=pythonpath)  # fmt: skip
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_installed_layout_reads_the_shipped_data(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    shutil.copytree(REPO / "python" / "torchport", site / "torchport",
                    ignore=shutil.ignore_patterns("__pycache__", "_bin"))  # fmt: skip
    cmake = (REPO / "CMakeLists.txt").read_text()
    skbuild = cmake[cmake.index("if(SKBUILD)") : cmake.index("endif()", cmake.index("if(SKBUILD)"))]
    rules = re.findall(r"install\((FILES|DIRECTORY) (data/\S+) DESTINATION (torchport/data\S*)\)", skbuild)
    assert rules, "no data install rule in CMakeLists.txt"
    for kind, src, dest in rules:
        target = site / dest
        target.mkdir(parents=True, exist_ok=True)
        if kind == "DIRECTORY":
            shutil.copytree(REPO / src, target / Path(src).name)
        else:
            shutil.copy(REPO / src, target / Path(src).name)
    installed = run(site)
    assert f'"dir": "{site / "torchport" / "data"}"' in installed
    source = run(REPO / "python")
    assert installed.split('"targets"')[1] == source.split('"targets"')[1]


def test_every_data_file_the_package_names_is_installed() -> None:
    # A data file the Python package names (by its file name) must be in the wheel: an install rule of
    # CMakeLists.txt's SKBUILD block covers it (rehearse --vendor-torch-npu read
    # data/vendor/torch_npu_core.json, which no rule installed: the installed package died with
    # FileNotFoundError).
    cmake = (REPO / "CMakeLists.txt").read_text()
    skbuild = cmake[cmake.index("if(SKBUILD)") : cmake.index("endif()", cmake.index("if(SKBUILD)"))]
    rules = re.findall(r"install\((FILES|DIRECTORY) (data/\S+) DESTINATION (torchport/data\S*)\)", skbuild)
    covered = [Path(src) for _, src, _ in rules]
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "python" / "torchport").rglob("*.py"))
    data = REPO / "data"
    files = [f for f in sorted(data.rglob("*")) if f.is_file()]
    names = [f.name for f in files]
    missing = []
    for f in files:
        # named by its path under data/, or by a file name no other data file has (opdb's npu.json is
        # another folder's name too: not this test's to tell apart)
        if f.relative_to(data).as_posix() not in source and (names.count(f.name) > 1 or f.name not in source):
            continue
        rel = f.relative_to(REPO)
        if not any(rel == c or c in rel.parents for c in covered):
            missing.append(str(rel))
    assert not missing, f"named by python/torchport but not installed into the wheel: {missing}"
