"""The corpus oracle (tests/corpus/oracle.py): one example per kind it must find, the strings it
must not count, and the mapping of a migrated file's references back to report rows.

The oracle is written on Python's `ast` only; these examples are written by hand in the styles of
the corpus projects (docs/fidelity.md lists the kinds and the ones the oracle does not find)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.corpus import oracle  # noqa: E402


def kinds(src: str) -> list[tuple[int, str]]:
    return [(r.line, r.kind) for r in oracle.find_references(textwrap.dedent(src))]


@pytest.mark.parametrize(
    "src, expected",
    [
        # torch.cuda.* and torch.backends.cudnn.* through every import form
        ("import torch\ntorch.cuda.synchronize()\n", [(2, "cuda-api")]),
        ("import torch as t\nn = t.cuda.device_count()\n", [(2, "cuda-api")]),
        ("from torch import cuda\ncuda.empty_cache()\n", [(1, "cuda-api"), (2, "cuda-api")]),
        ("import torch.cuda as tc\ntc.manual_seed_all(0)\n", [(1, "cuda-api"), (2, "cuda-api")]),
        ("from torch.cuda import synchronize as sync\nsync()\n", [(1, "cuda-api"), (2, "cuda-api")]),
        (
            "import torch.backends.cudnn as cudnn\ncudnn.benchmark = True\n",
            [(1, "cuda-api"), (2, "cuda-api")],
        ),
        ("import torch\ntorch.backends.cudnn.deterministic = True\n", [(2, "cuda-api")]),
        (
            "from torch.backends import cudnn\nif cudnn.is_available(): pass\n",
            [(1, "cuda-api"), (2, "cuda-api")],
        ),
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", [(2, "cuda-api")]),
        # .cuda(...) and .is_cuda
        ("model = model.cuda()\n", [(1, "cuda-call")]),
        ("x = x.cuda(non_blocking=True)\n", [(1, "cuda-call")]),
        ("if x.is_cuda: pass\n", [(1, "is-cuda")]),
        # a call spanning lines: the reference is on the line of `.cuda`
        ("m = Wrapper(\n    a,\n).cuda()\n", [(3, "cuda-call")]),
        # device strings and nccl
        ("x = x.to('cuda')\n", [(1, "device-string")]),
        ("d = torch.device('cuda:0')\n", [(1, "device-string")]),
        ("device = f'cuda:{ddp_local_rank}'\n", [(1, "device-string")]),
        ("device = 'cuda:{:d}'.format(rank)\n", [(1, "device-string")]),
        ("device = 'cuda:%d' % rank\n", [(1, "device-string")]),
        ("p.add_argument('--device', default='cuda')\n", [(1, "device-string")]),
        ("dist.init_process_group('nccl')\n", [(1, "nccl")]),
        ("import torch.distributed as dist\nb = dist.Backend.NCCL\n", [(2, "nccl")]),
        # device-type comparisons
        ("if x.device.type == 'cuda': pass\n", [(1, "device-compare")]),
        ("use = 'cuda' in device\n", [(1, "device-compare")]),
        ("if args.device.startswith('cuda'): pass\n", [(1, "device-compare")]),
        ("ctx = nullcontext() if device_type != 'cuda' else autocast()\n", [(1, "device-compare")]),
        # integer devices passed to .to, .cuda and device=
        ("x = x.to(0)\n", [(1, "int-device")]),
        ("x = x.to(local_rank)\n", [(1, "int-device")]),
        ("m = m.cuda(args.gpu)\n", [(1, "cuda-call"), (1, "int-device")]),
        ("t = torch.zeros(3, device=0)\n", [(1, "int-device")]),
        ("import torch\nd = torch.device(gpu_id)\n", [(2, "int-device")]),
        # a call inside a message is code
        ("print(torch.zeros(1, device='cuda'))\n", [(1, "device-string")]),
        ("logger.info('moved %s', x.cuda())\n", [(1, "cuda-call")]),
        # AMP with CUDA defaults
        ("import torch\nscaler = torch.cuda.amp.GradScaler()\n", [(2, "amp-cuda-default")]),
        (
            "from torch.cuda.amp import autocast\nwith autocast(): pass\n",
            [(1, "amp-cuda-default"), (2, "amp-cuda-default")],
        ),
        ("import torch\nscaler = torch.amp.GradScaler()\n", [(2, "amp-cuda-default")]),
        ("from torch.amp import GradScaler\ns = GradScaler(enabled=True)\n", [(2, "amp-cuda-default")]),
        ("import torch\nd = torch.get_autocast_gpu_dtype()\n", [(2, "amp-cuda-default")]),
        ("import torch\nif torch.is_autocast_enabled(): pass\n", [(2, "amp-cuda-default")]),
    ],
)
def test_finds_each_kind(src: str, expected: list[tuple[int, str]]) -> None:
    assert kinds(src) == expected


@pytest.mark.parametrize(
    "src",
    [
        # messages for people
        "print('cuda')\n",
        "logger.info(f'cuda:{rank} ready')\n",
        "logging.warning('falling back from %s', 'cuda')\n",
        "raise ValueError('cuda')\n",
        "assert ok, 'nccl'\n",
        "warnings.warn('cuda')\n",
        # docstrings and prose
        '"""Runs on cuda."""\n',
        "def f():\n    'cuda'\n",
        "msg = 'cuda is not available'\n",
        "name = 'cuda_kernels'\n",
        # the device-agnostic forms a migration writes
        "import torch\nscaler = torch.amp.GradScaler('npu')\n",
        "import torch\nscaler = torch.amp.GradScaler(device=device.type)\n",
        "import torch\nd = torch.get_autocast_dtype('cpu')\n",
        "import torch\ne = torch.is_autocast_enabled('cpu')\n",
        "x = x.to(device)\n",
        "x = x.to('npu:0')\n",
        "import torch\ntorch.npu.synchronize()\n",
        # a name that is not torch.cuda, and an assignment target
        "cuda = 3\nprint(cuda)\n",
        "import mylib\nmylib.cuda.thing()\n",
        "x = x.to(rank)\n",
    ],
)
def test_does_not_count(src: str) -> None:
    assert kinds(src) == []


def test_parse_error_is_raised() -> None:
    with pytest.raises(SyntaxError):
        oracle.find_references("def f(:\n")


def test_map_lines_equal_insert_replace() -> None:
    original = ["import torch", "x = 1", "torch.cuda.synchronize()", "y = 2"]
    migrated = ["import torch", "import torch_npu", "x = 1", "torch_npu.npu.synchronize()", "y = 2"]
    m = oracle.map_lines(original, migrated)
    assert m[1] == (1, 1)
    assert m[2] == (1, 2)  # inserted between input lines 1 and 2
    assert m[3] == (2, 2)
    assert m[4] == (3, 3)  # replaced
    assert m[5] == (4, 4)


ORIGINAL = textwrap.dedent(
    """\
    import torch
    x = torch.zeros(2).cuda()
    y = torch.nn.Parameter(x).cuda()
    torch.cuda.synchronize()
    """
)
# a made-up migration that forgot line 3's .cuda() and left line 4 in place with a report row
MIGRATED = textwrap.dedent(
    """\
    import torch
    import torch_npu
    x = torch.zeros(2).npu()
    y = torch.nn.Parameter(x).cuda()
    torch.cuda.synchronize()
    """
)


def test_unflagged_maps_back_and_checks_rows() -> None:
    rows = [
        oracle.Row(2, 2, "MODIFY", ".cuda", "change .cuda() to .npu()"),
        # an operator-support row on the same line does not cover a CUDA reference
        oracle.Row(3, 3, "UNKNOWN", "torch.nn.Parameter", "not in the supported list"),
        oracle.Row(4, 4, "UNSUPPORTED", "torch.cuda.synchronize", "no replacement"),
    ]
    left = oracle.unflagged(ORIGINAL, MIGRATED, rows)
    assert [(u.ref.line, u.ref.kind, u.input_lines) for u in left] == [(4, "cuda-call", (3, 3))]
    assert "input line 3" in str(left[0])


def test_unflagged_empty_when_every_reference_is_reported() -> None:
    rows = [oracle.Row(3, 4, "UNSUPPORTED", "torch.cuda", "left for the user")]
    assert oracle.unflagged(ORIGINAL, MIGRATED, rows) == []


KEPT_ON_PURPOSE = textwrap.dedent(
    """\
    import torch
    from tools import utils


    def wrap(fn, args):
        if args.gpu_arch_type in ("cuda", "rocm"):
            pass
        if not (utils.device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is None):
            return fn
        if utils.device_type == "cuda" or torch.version.hip is None:
            return None
        return fn.to("cuda")
    """
)


@pytest.mark.parametrize("target", ["npu", "cpu", "accelerator"])
def test_strings_the_catalogue_keeps_are_not_unfixed(target: str) -> None:
    """ "cuda" beside "rocm" (a GPU platform) and "cuda" and-ed with a torch.version test (the
    guard of a CUDA-only path) are kept on purpose (devices.json); the same comparison or-ed with
    the build test, and a device string, are not."""
    from tests.corpus import kept

    refs = oracle.find_references(KEPT_ON_PURPOSE)
    named = {(r.line, r.qualified) for r in refs if r.kind in ("device-string", "device-compare")}
    assert named == {
        (6, '"cuda" beside "rocm"'),
        (8, '"cuda" and torch.version'),
        (10, ""),
        (12, ""),
    }, named
    left = {(r.line, r.kind) for r in kept.unfixed(refs, target)}
    # on cpu every comparison with "cuda" is kept (devices.json: false there, as on a machine
    # without CUDA)
    compare = set() if target == "cpu" else {(10, "device-compare")}
    assert left == {(8, "cuda-api"), (12, "device-string")} | compare, left
