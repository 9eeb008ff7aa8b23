"""torch.compile under the redirect (issue 22 §2): torch's internals see the truth about CUDA whatever
--cuda-available says (data/runtime/callers.json), emulated device properties are complete, and a compiled
training step gives the same losses as the uncompiled one."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from runtime_testlib import FIXTURES, enabled, run_python, run_torchport

GPT = str(FIXTURES / "gpt_compile.py")


def _losses(out: str) -> list[str]:
    return re.findall(r"step \d+ loss (\S+) device (\S+)", out)


def test_gpt_compiled_aot_eager_same_losses_under_cuda_available_target() -> None:
    # the hardest mode: the user's code is told CUDA is there; torch's fake tensors and AOTAutograd must
    # not be
    eager = run_torchport(
        ["run", "--quiet", "--target", "cpu", "--cuda-available", "target", GPT, "--compile", "none"]
    )
    assert eager.returncode == 0, eager.stderr[-3000:]
    comp = run_torchport(
        ["run", "--quiet", "--target", "cpu", "--cuda-available", "target", GPT, "--compile", "aot_eager"]
    )
    assert comp.returncode == 0, comp.stderr[-3000:]
    a, b = _losses(eager.stdout), _losses(comp.stdout)
    assert len(a) == 4 and all(dev == "cpu" for _, dev in a)
    assert a == b


def test_inductor_compiles_on_the_target(tmp_path: Path) -> None:
    # one real inductor compile (slow on 2 cores: keep it tiny). Before: BackendCompilerFailed, inductor read
    # the emulated properties ('gcnArchName') and fake tensors saw is_available() True.
    script = tmp_path / "ind.py"
    script.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "lin = torch.nn.Linear(8, 4).cuda()\n"
        "x = torch.randn(3, 8).cuda()\n"
        "def step(m, a):\n"
        "    return (m(a).relu() ** 2).mean()\n"
        "c = torch.compile(step)\n"
        "print('eager', f'{step(lin, x).item():.6f}')\n"
        "print('compiled', f'{c(lin, x).item():.6f}')\n"
        "print('available', torch.cuda.is_available())\n",
        encoding="utf-8",
    )
    log = tmp_path / "run.log"
    p = run_torchport(
        ["run", "--quiet", "--target", "cpu", "--cuda-available", "target", "--log", str(log), str(script)]
    )
    assert p.returncode == 0, p.stderr[-3000:]
    vals = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert vals["eager"] == vals["compiled"]
    assert vals["available"] == "True"  # the user's code is still told what --cuda-available says
    text = log.read_text(encoding="utf-8")
    # every is_available() answered for the target came from the user's file, none from torch's internals
    targets = [ln for ln in text.splitlines() if "torch.cuda.is_available() -> torch.cpu" in ln]
    assert targets and all(ln.startswith(str(script)) for ln in targets), targets


def test_internals_see_the_truth_user_code_sees_the_target() -> None:
    import torch.utils._triton as tr

    with enabled("cpu", cuda_available="target"):
        assert torch.cuda.is_available() is True
        assert torch.cuda.device_count() == 1
        ns: dict[str, object] = {"__name__": "torch._inductor.fake_caller", "torch": torch}
        exec("answer = (torch.cuda.is_available(), torch.cuda.device_count())", ns)  # noqa: S102
        assert ns["answer"] == (False, 0)
        exec("x = torch.ones(1).cuda()\nis_cuda = x.is_cuda", ns)  # noqa: S102
        assert ns["is_cuda"] is False
        assert torch.ones(1).cuda().is_cuda is True
        tr.has_triton.cache_clear()
        assert tr.has_triton() is False  # its device check asks torch.cuda as torch's internals
    tr.has_triton.cache_clear()


def test_library_function_named_in_the_data_sees_the_truth_on_its_targets() -> None:
    from transformers.utils import import_utils

    # transfer_to_npu's apis_config.json lists it: on a target transformers supports natively it is told the
    # truth and takes its own path for the target (xpu here, without its hardware: check=False)
    fn = import_utils.is_torch_cuda_available
    clear = getattr(fn, "cache_clear", lambda: None)
    clear()
    with enabled("xpu", check=False, cuda_available="target"):
        assert import_utils.is_torch_cuda_available() is False
        assert torch.cuda.device_count() == torch.xpu.device_count()  # the user's code: the target
    # on cpu the rule does not apply (callers.json `targets`): the CUDA path, redirected, is the better one
    clear()
    with enabled("cpu", cuda_available="target"):
        assert import_utils.is_torch_cuda_available() is True
    clear()


def test_emulated_device_properties_are_complete() -> None:
    stub = Path(torch.__file__).parent / "_C" / "__init__.pyi"
    text = stub.read_text(encoding="utf-8")
    block = text.split("class _CudaDeviceProperties:", 1)[1].split("\nclass ", 1)[0].split("\n\n", 1)[0]
    names = re.findall(r"^\s+(\w+):", block, re.M)
    assert "gcnArchName" in names and len(names) >= 15
    with enabled("cpu"):
        props = torch.cuda.get_device_properties(0)
        missing = [n for n in names if not hasattr(props, n)]
        assert not missing, missing
        assert props.total_memory > 0 and props.major == 0


def test_compiled_branch_on_is_available_matches_eager() -> None:
    # dynamo constant-folds torch.cuda.is_available() inside a compiled function from its own frame: the
    # callers.json rule for torch._dynamo.variables gives it the user's answer, so both take the same branch
    def f(a: torch.Tensor) -> torch.Tensor:
        return a + 1 if torch.cuda.is_available() else a - 1

    for mode, want in (("target", 1.0), ("user", 1.0), ("truth", -1.0)):
        torch._dynamo.reset()
        with enabled("cpu", cuda_available=mode):
            x = torch.zeros(1).cuda()
            assert f(x).item() == want
            assert torch.compile(f, backend="eager")(x).item() == want, mode
    torch._dynamo.reset()


_CAPABILITY_SCRIPT = """
import sys, torch
import torchport.runtime as rt

def f(a):
    # the usual feature checks: bf16 / flash attention on Ampere and newer, a name for the log
    if torch.cuda.get_device_capability()[0] >= 8:
        a = a * 2
    major, minor = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name()
    return a + major + minor + len(name), torch.cuda.get_device_properties(0).major

if sys.argv[1] == "compiled-before":  # dynamo's rule map built before the redirect starts
    torch.compile(lambda a: a + 1, backend="eager")(torch.ones(1))
rt.enable("cpu", track_sites=True)
x = torch.ones(2, device="cuda")
eager = f(x)
for backend in ("eager", "aot_eager"):
    torch._dynamo.reset()
    got = torch.compile(f, backend=backend)(x)
    assert torch.equal(got[0], eager[0]) and got[1] == eager[1], (backend, got, eager)
print("ok", eager[0].tolist(), len(torch.cuda.get_device_name()))
print("sites", sorted({s.api for s in rt._active.log.sites.values() if "get_device" in s.api}))
"""


def test_compiled_function_reading_capability_and_name_matches_eager() -> None:
    # issue 33 §6: dynamo traced these into the graph and fake tensors failed (TorchRuntimeError); they are
    # constants to dynamo now, answered as to the user's eager code, in both orders of dynamo and enable()
    for order in ("enabled-first", "compiled-before"):
        done = run_python(["-c", _CAPABILITY_SCRIPT, order])
        assert done.returncode == 0, done.stderr[-3000:]
        ok = next(line for line in done.stdout.splitlines() if line.startswith("ok"))
        values, name_len = ok[3:].rsplit(" ", 1)
        assert values == str([1.0 + int(name_len)] * 2)  # capability (0, 0): the < 8 branch, as eager
        assert (
            "torch.cuda.get_device_capability" in done.stdout and "torch.cuda.get_device_name" in done.stdout
        )
