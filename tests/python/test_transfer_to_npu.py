"""What the vendor's transfer_to_npu patches, next to torchport (issue 31 §3).

tools/gen_transfer_to_npu.py reads torch_npu/contrib/transfer_to_npu.py of the newest pinned torch-npu wheel
with ast and writes data/vendor/transfer_to_npu.json and docs/transfer-to-npu.md; CI reruns it with --check.
These tests need no network."""

from __future__ import annotations

import json
from pathlib import Path

from tools_testlib import load_tool

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO / "data" / "vendor" / "torch_npu_wheels.json"


def load_transfer_tool():
    return load_tool("gen_transfer_to_npu", tools_on_path=True)


transfer = load_transfer_tool()
TRANSFER = REPO / "data" / "vendor" / "transfer_to_npu.json"


def test_transfer_table_is_fresh_against_the_catalogue_and_the_runtime_coverage():
    """The vendor's side (patches) comes from the wheel; torchport's side is recomputed here from data/, so
    a catalogue or coverage change without `tools/gen_transfer_to_npu.py` fails offline too."""
    doc = json.loads(TRANSFER.read_text())
    pin = next(w for w in json.loads(WHEELS.read_text())["wheels"] if w["version"] == doc["wheel"])
    names = json.loads((REPO / "data" / "vendor" / "torch_npu_namespace.json").read_text())["wheels"]
    again = transfer.build(pin, doc["patches"], set(names[doc["wheel"]]["names"]))
    assert again == doc, "data/vendor/transfer_to_npu.json is stale: run tools/gen_transfer_to_npu.py"
    assert (REPO / "docs" / "transfer-to-npu.md").read_text() == transfer.render(doc), (
        "docs/transfer-to-npu.md is stale: run tools/gen_transfer_to_npu.py"
    )


def test_transfer_table_facts_read_by_hand():
    """Patches read from torch_npu 2.13.0's contrib/transfer_to_npu.py by hand (its _init())."""
    doc = json.loads(TRANSFER.read_text())
    rows = {(r["target"], r["action"]): r for r in doc["patches"]}
    assert rows[("torch.cuda", "module replaced")]["how"] == "torch_npu.npu"
    assert rows[("torch.Tensor.cuda", "replaced")]["how"] == "torch.Tensor.npu"
    assert rows[("torch.profiler.ProfilerActivity.CUDA", "replaced")]["how"] == (
        "torch_npu.profiler.ProfilerActivity.NPU"
    )
    assert rows[("torch.cuda.DoubleTensor", "replaced")]["how"] == "torch.npu.FloatTensor"
    assert rows[("torch.zeros", "wrapped")]["how"] == "device args cuda→npu"  # torch_fn_white_list
    assert rows[("torch.distributed.init_process_group", "wrapped")]["how"] == (
        "device args cuda→npu; backend args nccl→hccl"
    )
    # no patch of the TF32 switch: torch.backends.cuda.matmul.allow_tf32 stays torch's (no effect on npu)
    assert not [r for r in doc["patches"] if "allow_tf32" in r["target"]]
    cuda = {r["api"]: r for r in doc["torch_cuda"]}
    # transfer_to_npu serves float64 types as float32; torchport never downgrades silently (reports them)
    assert cuda["torch.cuda.DoubleTensor"]["verdict"] == "transfer_to_npu only"


SCRIPT = """
import torch
import torch_npu
white = ['zeros', 'ones']

def _wrapper_cuda(fn):
    return fn

def _patch_cuda():
    patches = [['cuda', torch_npu.npu], ['cuda.Thing', torch_npu.npu.Thing]]
    _apply_patches(patches)

def _later():
    torch.cuda.default_generators = torch_npu.npu.default_generators

def _init():
    from torch.distributed.checkpoint import filesystem
    _patch_cuda()
    _device_wrapper(torch, white)
    _device_wrapper(torch.Tensor, ['to'])
    torch.Tensor.cuda = torch.Tensor.npu
    torch.load = _wrapper_cuda(torch.load)
    filesystem.Loader.__init__ = _wrapper_cuda(filesystem.Loader.__init__)
    torch_npu.npu._lazy_call(_later)
    _do_wrapper_libraries_func(_load_json_file(config_path))

_init()
"""


def test_transfer_reader_on_a_small_script():
    apis = {"lib": {"version": "1.0", "apis": {"lib.mod.f": "function"}}}
    rows = transfer.Reader(SCRIPT, apis).run()
    got = [(r["target"], r["action"], r["how"]) for r in rows]
    assert got == [
        ("torch.cuda", "module replaced", "torch_npu.npu"),
        ("torch.cuda.Thing", "replaced", "torch_npu.npu.Thing"),
        ("torch.zeros", "wrapped", "device args cuda→npu"),
        ("torch.ones", "wrapped", "device args cuda→npu"),
        ("torch.Tensor.to", "wrapped", "device args cuda→npu"),
        ("torch.Tensor.cuda", "replaced", "torch.Tensor.npu"),
        ("torch.load", "wrapped", "device args cuda→npu"),
        ("torch.distributed.checkpoint.filesystem.Loader.__init__", "wrapped", "device args cuda→npu"),
        ("torch.cuda.default_generators", "replaced", "torch_npu.npu.default_generators"),
        ("lib.mod.f", "wrapped", "runs with the real torch.cuda.is_available (lib >= 1.0, a function)"),
    ]
