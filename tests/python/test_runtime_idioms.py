"""Issue 33's idioms in one unchanged CUDA script (fixtures/runtime/cuda_idioms.py), under `torchport run
--target cpu` and under the npu rehearsal (`torchport rehearse --target npu -m torchport run --target npu`):
each value is checked, not only that nothing raised. The per-idiom tests are in test_runtime_streams.py,
test_runtime_memory.py, test_runtime_storages.py, test_runtime_submodules.py, test_runtime_distributed.py,
test_runtime_compile.py and test_runtime_comparisons.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime_testlib import FIXTURES, free_port, run_torchport
from torchport._core import core_binary

SCRIPT = str(FIXTURES / "cuda_idioms.py")

# What CUDA semantics or plain CPU torch give for each idiom, on every target
EXPECTED: dict[str, Any] = {
    "prefetch": [0.0, 12.0, 24.0],  # the batches doubled, whatever the stream
    "generic_stream_event": [True, True, True],
    "mem_get_info": [True, True, True],
    "memory_stats": ["int", True],
    "typed_storage": [True, True, True],  # --cuda-available user: the script's tensors answer is_cuda
    "nccl_options": [1.0, 1.0],  # one rank: the all_reduce sum is the tensor
    "random_submodule": True,
    "streams_submodule": True,
    "memory_snapshot": True,
    "comm": [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0], [0.0, 2.0, 4.0, 6.0]],
    "compile_capability": True,
    "device_type_test": False,  # what no patch can change: logged at start (test_runtime_comparisons.py)
}
# The npu rehearsal runs PyTorch's CPU kernels: aten::record_stream has none there (torch_npu lists it in
# op_plugin_functions.yaml, so a real NPU serves it); the refusal names the rehearsal, not CUDA.
DEVICE_SIDE = {"npu": {"prefetch": "aten::record_stream cannot run on the rehearsal npu device"}}


def _idioms(stdout: str) -> dict[str, Any]:
    line = next((ln for ln in stdout.splitlines() if ln.startswith("IDIOMS=")), None)
    assert line is not None, stdout[-3000:]
    got: dict[str, Any] = json.loads(line[len("IDIOMS=") :])
    return got


@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_every_idiom_gives_the_expected_value(target: str, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    run = ["run", "--target", target, "--log", str(log), SCRIPT, str(free_port())]
    if target != "cpu":
        run = ["rehearse", "--target", target, "-m", "torchport", *run]
    done = run_torchport(run, {"TORCHPORT_CORE": core_binary()}, cwd=tmp_path)
    got = _idioms(done.stdout)
    side = DEVICE_SIDE.get(target, {})
    wrong = []
    for name, want in EXPECTED.items():
        if name in side:
            if side[name] not in str(got[name]):
                wrong.append(f"{name}: the device's refusal '{side[name]}' expected, got {got[name]!r}")
        elif got[name] != want:
            wrong.append(f"{name}: {want!r} expected, got {got[name]!r}")
    assert not wrong, "\n".join(wrong)
    text = log.read_text()
    # every emulation that changes a value says so in the log
    assert "[mismatch] torch.cuda.memory_stats()" in text or target != "cpu"
    assert "[modified] torch.cuda.mem_get_info()" in text or target != "cpu"
    assert "pg_options=ProcessGroupNCCL.Options(is_high_priority_stream=True)" in text
