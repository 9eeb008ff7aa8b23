"""Issue 20 §2 and §5, end to end: `-s/--specify-device` pins the device from the vendor's
variable, and `-r` runs Ascend's own rule tables (builtin_rules.json,
builtin_rules_pytorch_npu.json). Each on a project written for it and on a project of
../shared/corpus (copied to a temporary directory). Expected outputs are written by hand."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = next(
    (p for p in (REPO.parent / "shared", REPO.parent.parent / "shared") if (p / "upstream").is_dir()),
    None,
)
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared (upstream, corpus) is not present")
TABLES = None if SHARED is None else SHARED / "upstream" / "ascend-msfmktransplt"


def torchport(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("torchport")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "torchport"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


# --- §2 -s/--specify-device ------------------------------------------------------------------------

TRAIN = """\
import argparse
import torch
import torch.distributed as dist
from model import Net

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()
torch.cuda.set_device(args.gpu)
net = Net().cuda(args.gpu)
x = torch.randn(4, 2, device=torch.device("cuda", args.gpu))
if dist.is_available():
    print("distributed")
"""

MODEL = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x.cuda())
"""

TRAIN_NPU = """\
import argparse
import torch
import torch_npu
import torch.distributed as dist
from model import Net
import os
DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))
torch_npu.npu.set_device(DEVICE_ID)

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()
torch_npu.npu.set_device(DEVICE_ID)
net = Net().npu(DEVICE_ID)
x = torch.randn(4, 2, device=torch.device("npu", DEVICE_ID))
if dist.is_available():
    print("distributed")
"""

MODEL_NPU = """\
import torch
import torch_npu
import os
DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))
torch_npu.npu.set_device(DEVICE_ID)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x.npu())
"""


def test_specify_device_pins_every_index_and_warns_on_distributed(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(TRAIN)
    (proj / "model.py").write_text(MODEL)
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", "npu", "-s", "-q")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "o" / "proj_npu"
    assert (out / "train.py").read_text() == TRAIN_NPU
    assert (out / "model.py").read_text() == MODEL_NPU
    # The first use of torch.distributed: `import torch.distributed as dist`, line 3, column 8.
    assert "warning: --specify-device pins every process" in p.stderr
    assert "torch.distributed (train.py:3:8)" in p.stderr
    log = (out / "torchport-report" / "torchport.log").read_text()
    assert "[WARNING] --specify-device pins every process" in log


def test_specify_device_without_distributed_does_not_warn(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "model.py").write_text(MODEL)
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", "npu", "-s")
    assert p.returncode == 0, p.stderr
    assert "pins every process" not in p.stderr
    assert (tmp_path / "o" / "proj_npu" / "model.py").read_text() == MODEL_NPU


@pytest.mark.parametrize("target", ["mlu", "musa", "xpu", "hpu", "cpu", "mps", "accelerator"])
def test_specify_device_is_refused_without_a_vendor_variable(tmp_path: Path, target: str) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "model.py").write_text(MODEL)
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", target, "-s")
    assert p.returncode == 2
    assert (
        f"--specify-device: no vendor document names an environment variable for the device index "
        f"of a process on target {target}" in p.stderr
    )
    assert "targets with one: npu (DEVICE_ID)" in p.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@needs_shared
def test_specify_device_on_llm_c(tmp_path: Path) -> None:
    assert SHARED is not None
    src = SHARED / "corpus" / "karpathy__llm.c"
    proj = tmp_path / "llm.c"
    shutil.copytree(src, proj)
    p = torchport("migrate", str(proj), "-o", str(tmp_path / "o"), "-t", "npu", "-s", "-q")
    assert p.returncode == 0, p.stderr
    out = (tmp_path / "o" / "llm.c_npu" / "train_gpt2.py").read_text()
    ast.parse(out)
    lines = out.splitlines()
    # Checked by hand: `device = f'cuda:{ddp_local_rank}'; torch.cuda.set_device(device)` (lines
    # 595-596 of the original) now pins the process to DEVICE_ID, read once after the imports.
    assert "        torch_npu.npu.set_device(DEVICE_ID)" in lines
    assert lines.count('DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))') == 1
    assert "torch.cuda.set_device" not in out
    # train_gpt2.py line 33: `from torch.distributed import init_process_group, ...`.
    assert "uses torch.distributed (train_gpt2.py:33:6)" in p.stderr
    # A device without an index stays a device type (the prologue pins the current device), so
    # the script's own tests of it keep working.
    assert '                device = "npu"' in lines
    assert "    device_type = 'npu' if 'npu' in device else 'cpu'" in lines
    assert (src / "train_gpt2.py").read_text() == (proj / "train_gpt2.py").read_text()


# --- §5 Ascend's rule tables -----------------------------------------------------------------------

RULES_PROJECT = """\
import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity

model = torch.nn.Linear(2, 2).cuda()
x = torch.zeros(2, device=dev)
y = x.to(torch.float16)
torch.cuda.synchronize()
ok = x.is_cuda
dist.init_process_group(backend="nccl")
print("cuda")
"""

# Without -s: the "normal" and "2.1.0" rules; the specify_device and distributed ones are off.
RULES_PROJECT_NPU = """\
import torch
import torch_npu
import torch.distributed as dist
from torch.profiler import ProfilerActivity

model = torch.nn.Linear(2, 2).npu()
x = torch.zeros(2, device=f'npu:{dev}' if isinstance(dev, int) else dev)
y = x.to(torch.float16)
torch_npu.npu.synchronize()
ok = x.is_npu
dist.init_process_group(backend="hccl")
print("npu")
"""


@needs_shared
def test_both_ascend_rule_tables_run(tmp_path: Path) -> None:
    assert TABLES is not None
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.py").write_text(RULES_PROJECT)
    p = torchport(
        "migrate",
        str(proj),
        "-o",
        str(tmp_path / "o"),
        "-t",
        "npu",
        "-q",
        "-r",
        str(TABLES / "builtin_rules.json"),
        "-r",
        str(TABLES / "builtin_rules_pytorch_npu.json"),
    )
    assert p.returncode == 0, p.stderr
    out = tmp_path / "o" / "proj_npu"
    assert (out / "a.py").read_text() == RULES_PROJECT_NPU
    changes = (out / "torchport-report" / "change_list.csv").read_text()
    assert "builtin_rules.json (ReplaceStringRule[0])" in changes
    assert "change the keyword arg device of function torch.zeros to f'npu:{dev}'" in changes


@needs_shared
def test_ascend_rule_tables_with_specify_device(tmp_path: Path) -> None:
    assert TABLES is not None
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.py").write_text("import torch\n\nx = torch.ones(2).to(dev)\ntorch.cuda.set_device(gpu)\n")
    p = torchport(
        "migrate",
        str(proj),
        "-o",
        str(tmp_path / "o"),
        "-t",
        "npu",
        "-s",
        "-q",
        "-r",
        str(TABLES / "builtin_rules.json"),
    )
    assert p.returncode == 0, p.stderr
    # Ascend's specify_device rules: its InsertGlobalRules (DEVICE_ID from the environment, the
    # current device) replace torchport's prologue; `.to(x)` and set_device(x) get the device.
    assert (tmp_path / "o" / "proj_npu" / "a.py").read_text() == (
        "import torch\n"
        "import torch_npu\n"
        "import torch.npu\n"
        "if torch.npu.current_device() != DEVICE_ID:\n"
        "    torch.npu.set_device(f'npu:{DEVICE_ID}')\n"
        "import os\n"
        "DEVICE_ID= 0\n"
        "if os.getenv('DEVICE_ID') and str.isdigit(os.getenv('DEVICE_ID')):\n"
        "    DEVICE_ID= int(os.getenv('DEVICE_ID'))\n"
        "\n"
        "x = torch.ones(2).to(f'npu:{DEVICE_ID}')\n"
        "torch_npu.npu.set_device(f'npu:{DEVICE_ID}')\n"
    )


@needs_shared
def test_ascend_rule_tables_on_pytorch_cifar(tmp_path: Path) -> None:
    assert SHARED is not None and TABLES is not None
    src = SHARED / "corpus" / "kuangliu__pytorch-cifar"
    proj = tmp_path / "cifar"
    shutil.copytree(src, proj)
    p = torchport(
        "migrate",
        str(proj),
        "-o",
        str(tmp_path / "o"),
        "-t",
        "npu",
        "-q",
        "-r",
        str(TABLES / "builtin_rules.json"),
        "-r",
        str(TABLES / "builtin_rules_pytorch_npu.json"),
    )
    assert p.returncode == 0, p.stderr
    out = tmp_path / "o" / "cifar_npu"
    for f in out.rglob("*.py"):
        ast.parse(f.read_text(), filename=str(f))
    main = (out / "main.py").read_text()
    # Checked by hand against main.py: `device = 'cuda' if torch.cuda.is_available() else 'cpu'`
    # and `if device == 'cuda':` keep their meaning on npu; the inputs move with `.to(device)`,
    # which the 2.1.0 ArgsModifyRule wraps.
    assert "device = 'npu' if torch_npu.npu.is_available() else 'cpu'" in main
    assert "if device == 'npu':" in main
    assert "inputs.to(f'npu:{device}' if isinstance(device, int) else device)" in main
    assert "cuda" not in main
    assert (src / "main.py").read_text() == (proj / "main.py").read_text()
