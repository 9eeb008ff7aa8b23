"""Adding a target is a data change: a copy of data/ with one more target in targets.json, passed through
TORCHPORT_DATA_DIR, is enough for `torchport targets`, `torchport migrate` and the Python half."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchport._core import core_binary

REPO = Path(__file__).resolve().parents[2]

FOO = {
    "name": "foo",
    "vendor": "Example Corp",
    "title": "Example FPU",
    "device": "foo",
    "module": "torch.foo",
    "import": "import torch_foo",
    "package": "torch_foo",
    "install": "torch_foo (an example)",
    "backend": "fccl",
    "visible_devices": "FOO_VISIBLE_DEVICES",
    "amp_device": "foo",
    "amp_dtype": "bfloat16",
    "min_torch": "2.1",
    "torch_versions": [],
    "no_dtypes": ["float64"],
    "device_index": True,
    "host": False,
    "profiler_activity": "PrivateUse1",
    "fallback": {
        "default": "error",
        "env": "FOO_FALLBACK=1",
        "env_effect": "runs it on the CPU",
        "note": "x",
    },
    "notes": "a test-only target",
    "sources": ["tests/python/test_fake_target.py"],
    "facts": {"device": "unverified: a test", "backend": "unverified: a test"},
}

SCRIPT = """\
import os
import torch
import torch.distributed as dist

os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
dist.init_process_group(backend="nccl")
device = torch.device("cuda:1")
model = torch.nn.Linear(2, 2).cuda()
x = torch.ones(2).to("cuda")
"""

# Read and judged by hand: every CUDA fact replaced by the one foo has in the data, nothing else touched.
EXPECTED = """\
import os
import torch
import torch_foo
import torch.distributed as dist

os.environ["FOO_VISIBLE_DEVICES"] = "0,1"
dist.init_process_group(backend="fccl")
device = torch.device("foo:1")
model = torch.nn.Linear(2, 2).to("foo")
x = torch.ones(2).to("foo")
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("data")
    shutil.copytree(REPO / "data" / "catalogue", d / "catalogue")
    doc = json.loads((REPO / "data" / "targets.json").read_text())
    doc["targets"].append(FOO)
    (d / "targets.json").write_text(json.dumps(doc))
    return d


def env_with(data: Path) -> dict[str, str]:
    return {**os.environ, "TORCHPORT_DATA_DIR": str(data)}


def test_the_core_lists_the_new_target(data_dir: Path) -> None:
    p = subprocess.run([core_binary(), "targets", "--format", "json"], env=env_with(data_dir),
                       capture_output=True, text=True, check=True)  # fmt: skip
    foo = next(t for t in json.loads(p.stdout) if t["name"] == "foo")
    assert (foo["backend"], foo["visible_devices"], foo["unverified"]) == ("fccl", "FOO_VISIBLE_DEVICES",
                                                                          ["backend", "device"])  # fmt: skip


def test_migrate_to_the_new_target(data_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "train.py"
    src.write_text(SCRIPT)
    out = tmp_path / "out"
    p = subprocess.run([core_binary(), "migrate", str(src), "--target", "foo", "-o", str(out)],
                       env=env_with(data_dir), capture_output=True, text=True, check=False)  # fmt: skip
    assert p.returncode in (0, 1), p.stderr
    migrated = list(out.rglob("train.py"))
    assert len(migrated) == 1, list(out.rglob("*"))
    assert migrated[0].read_text() == EXPECTED
    # Without the data directory the target does not exist: a clear error, nothing written.
    p = subprocess.run([core_binary(), "migrate", str(src), "--target", "foo", "-o", str(tmp_path / "o2")],
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert p.returncode == 2 and "unknown target 'foo'" in p.stderr


def test_the_python_half_reads_the_same_data(data_dir: Path) -> None:
    code = (
        "from torchport.targets import TARGETS\n"
        "t = TARGETS['foo']\n"
        "print(t.device_type, t.backend, t.env_map['CUDA_VISIBLE_DEVICES'], t.float64, t.vendor_package,"
        " t.fallback_env, t.unverified)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], env=env_with(data_dir), capture_output=True, text=True,
                       check=False)  # fmt: skip
    assert p.returncode == 0, p.stderr
    want = [
        "foo",
        "fccl",
        "FOO_VISIBLE_DEVICES",
        "False",
        "torch_foo",
        "FOO_FALLBACK",
        "('device', 'backend')\n",
    ]
    assert p.stdout.split(maxsplit=6) == want


def test_a_broken_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "targets.json").write_text("{")
    p = subprocess.run([core_binary(), "targets"], env=env_with(tmp_path), capture_output=True, text=True,
                       check=False)  # fmt: skip
    assert p.returncode == 2 and "TORCHPORT_DATA_DIR" in p.stderr and "targets.json" in p.stderr
    q = subprocess.run([sys.executable, "-c", "import torchport.targets"], env=env_with(tmp_path),
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert q.returncode != 0 and f"{tmp_path / 'targets.json'}:1:2" in q.stderr
