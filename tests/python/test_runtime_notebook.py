"""The runtime in a notebook (issue 34 §2, and §3's headless run): `%load_ext torchport` and `%torchport` in a
real ipykernel (started with jupyter_client), `import torchport.auto` in a cell, and `torchport run nb.ipynb`
(nbclient) on notebooks written here and on one derived from a real notebook of ../shared/notebooks."""

from __future__ import annotations

import hashlib
import os
import re
import site
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from runtime_testlib import NO_CUDA, child_env, run_torchport

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat (the `test` extra)")
pytest.importorskip("nbclient", reason="the notebook tests need nbclient (the `test` extra)")
pytest.importorskip("ipykernel", reason="the notebook tests need ipykernel (the `test` extra)")
from jupyter_client.manager import KernelManager  # noqa: E402 - after the skips
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook  # noqa: E402

# `file:line: [class] before -> after (why) | source`, the file being a cell's name
LOG_LINE = re.compile(r"^(?P<where>.+?):(?P<line>\d+): \[(?P<cls>match|modified|mismatch)\] (?P<what>.+?)"
                      r"(?: \| (?P<src>.*))?$")  # fmt: skip
SHARED = Path(__file__).resolve().parents[3] / "shared" / "notebooks" / "huggingface__notebooks"
REAL = SHARED / "diffusers" / "exploring_simple optimizations_for_sdxl.ipynb"


# --- a live kernel -----------------------------------------------------------------------------------------


class Kernel:
    """A real ipykernel of this Python; run() executes one cell and returns its reply and outputs."""

    def __init__(self, env: dict[str, str]) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, extra_arguments=["--IPKernelApp.log_level=ERROR"])
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str) -> dict[str, Any]:
        out: dict[str, Any] = {"stdout": "", "stderr": "", "error": None}

        def hook(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
            elif kind == "error":
                out["error"] = (content["ename"], content["evalue"])

        reply = self.kc.execute_interactive(code, output_hook=hook, timeout=180)["content"]
        out["status"] = reply["status"]
        out["count"] = reply.get("execution_count")
        if reply["status"] == "error":
            out["error"] = (reply["ename"], reply["evalue"])
        return out

    def ok(self, code: str) -> dict[str, Any]:
        out = self.run(code)
        assert out["status"] == "ok", (code, out)
        return out

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture
def kernel_factory() -> Iterator[Any]:
    started: list[Kernel] = []

    def start(**env: str) -> Kernel:
        k = Kernel(child_env(env))
        started.append(k)
        return k

    yield start
    for k in started:
        k.close()


def log_lines(text: str) -> list[re.Match[str]]:
    return [m for m in (LOG_LINE.match(ln) for ln in text.splitlines() if ln and not ln.startswith("#")) if m]


# The originals the redirect replaces, captured in the kernel before it is on (named here, not taken from the
# patcher's records, so that a forgotten restore shows).
CAPTURE = """\
import torch, torch.nn as nn
_orig = {
    "torch.zeros": torch.zeros, "torch.Generator": torch.Generator, "Tensor.to": torch.Tensor.to,
    "Module.to": nn.Module.to, "torch.cuda.is_available": torch.cuda.is_available,
    "torch.cuda.empty_cache": torch.cuda.empty_cache,
    "torch.cuda.memory_allocated": torch.cuda.memory_allocated,
}
def _restored():
    now = {"torch.zeros": torch.zeros, "torch.Generator": torch.Generator, "Tensor.to": torch.Tensor.to,
           "Module.to": nn.Module.to, "torch.cuda.is_available": torch.cuda.is_available,
           "torch.cuda.empty_cache": torch.cuda.empty_cache,
           "torch.cuda.memory_allocated": torch.cuda.memory_allocated}
    return sorted(k for k in _orig if now[k] is not _orig[k])
"""

CUDA_CELL = """\
device = "cuda"
x = torch.ones(2).to("cuda")
torch.cuda.empty_cache()
g = torch.Generator("cuda")
print("devices", x.device.type, g.device.type, torch.zeros(1, device=device).device.type)
"""


def test_load_ext_magic_switch_log_off_in_a_live_kernel(kernel_factory: Any) -> None:
    # the .pth hook off: torch's originals are captured before anything is redirected
    k = kernel_factory(TORCHPORT_TARGET="cpu", TORCHPORT_AUTOHOOK="0")
    k.ok(CAPTURE)
    assert k.ok("print(_restored())")["stdout"].strip() == "[]"
    on = k.ok("%load_ext torchport")
    assert "CUDA calls in this kernel run on cpu" in on["stdout"]
    assert k.ok("print(_restored())")["stdout"].strip() != "[]"  # patched now

    cell = k.ok(CUDA_CELL)
    assert cell["stdout"].strip() == "devices cpu cpu cpu"
    n = cell["count"]
    log = k.ok("%torchport log")["stdout"]
    sites = {(m["where"], int(m["line"])): m for m in log_lines(log)}
    assert set(sites) == {(f"In[{n}]", 2), (f"In[{n}]", 3), (f"In[{n}]", 4), (f"In[{n}]", 5)}, log
    assert sites[(f"In[{n}]", 2)]["what"] == "Tensor.to(device='cuda') -> Tensor.to(device='cpu')"
    assert sites[(f"In[{n}]", 2)]["src"] == 'x = torch.ones(2).to("cuda")'
    assert sites[(f"In[{n}]", 3)]["cls"] == "modified"  # empty_cache: nothing to empty on cpu
    assert sites[(f"In[{n}]", 4)]["what"] == "torch.Generator(device='cuda') -> torch.Generator(device='cpu')"
    assert "# summary" in log and "4 redirected call site(s): 3 match, 1 modified, 0 mismatch" in log
    assert "4 redirected call site(s) so far" in k.ok("%torchport")["stdout"]

    # a misspelt target: did you mean; an absent vendor package; an absent device: the redirect to cpu stays
    bad = k.run("%torchport npuu")
    assert bad["error"][0] == "UsageError" and "did you mean 'npu'?" in bad["error"][1]
    agnostic = k.run("%torchport accelerator")  # listed by `torchport targets`: a migrate target
    assert agnostic["error"][0] == "UsageError" and "`%torchport auto`" in agnostic["error"][1]
    npu = k.run("%torchport npu")
    assert npu["error"][0] == "UsageError" and "torch_npu" in npu["error"][1]
    assert "the redirect to cpu stays on" in npu["error"][1]
    xpu = k.run("%torchport xpu")
    assert xpu["error"][0] == "UsageError" and "no Intel GPU (XPU) device is visible" in xpu["error"][1]
    assert "the redirect to cpu stays on" in xpu["error"][1]
    assert "run on cpu" in k.ok("%torchport")["stdout"]
    assert k.ok("print(torch.zeros(1, device='cuda').device)")["stdout"].strip() == "cpu"

    # a switch (auto resolves to cpu on this machine: the redirect is undone and enabled again)
    assert "run on cpu" in k.ok("%torchport auto")["stdout"]
    assert k.ok("print(torch.cuda.empty_cache() is None)")["stdout"].strip() == "True"

    # off: every original back, CUDA calls fail as torch without CUDA makes them fail; the log is kept
    assert "the redirect is off" in k.ok("%torchport off")["stdout"]
    assert k.ok("print(_restored())")["stdout"].strip() == "[]"
    failed = k.run("torch.zeros(1, device='cuda')")
    assert failed["status"] == "error" and re.search(NO_CUDA, failed["error"][1]), failed
    assert "the redirect is off" in k.ok("%torchport")["stdout"]
    kept = k.ok("%torchport log")["stdout"]
    assert "# an earlier redirect in this kernel: target cpu" in kept
    assert {(m["where"], int(m["line"])) for m in log_lines(kept)} >= set(sites)

    # on again by name, then the extension unloaded: originals back and the magic gone
    assert "run on cpu" in k.ok("%torchport cpu")["stdout"]
    assert k.ok("print(torch.zeros(1, device='cuda').device)")["stdout"].strip() == "cpu"
    k.ok("%unload_ext torchport")
    assert k.ok("print(_restored())")["stdout"].strip() == "[]"
    gone = k.run("%torchport")
    assert gone["status"] == "error" and "not found" in gone["error"][1]


def test_import_torchport_auto_in_a_cell_brings_the_magic(kernel_factory: Any, tmp_path: Path) -> None:
    file = tmp_path / "calls.log"
    k = kernel_factory(TORCHPORT_TARGET="cpu", TORCHPORT_AUTOHOOK="0", TORCHPORT_LOG=str(file))
    k.ok(CAPTURE)
    k.ok("import torchport.auto")
    cell = k.ok(CUDA_CELL)
    assert cell["stdout"].strip() == "devices cpu cpu cpu"
    log = k.ok("%torchport log")["stdout"]
    assert {int(m["line"]) for m in log_lines(log) if m["where"] == f"In[{cell['count']}]"} == {2, 3, 4, 5}
    # the same lines as the log file (which gets its `# summary` block when the redirect ends)
    assert log.split("# summary\n")[0] == file.read_text()
    k.ok("%torchport off")
    assert k.ok("print(_restored())")["stdout"].strip() == "[]"


@pytest.mark.skipif(
    # the directories whose .pth files Python runs at start-up (a source tree on PYTHONPATH holds the file,
    # but nothing runs it there)
    not any(
        Path(p, "torchport_autohook.pth").is_file()
        for p in [*site.getsitepackages(), site.getusersitepackages()]
    ),
    reason="the .pth hook is not installed in this Python (pip install torchport installs it)",
)
def test_load_ext_adopts_the_redirect_the_pth_hook_turned_on(kernel_factory: Any) -> None:
    # $TORCHPORT_TARGET with the hook: `import torch` enables the redirect, without recording call sites
    k = kernel_factory(TORCHPORT_TARGET="cpu")
    assert k.ok("import torch, torchport.runtime as rt; print(rt.is_enabled())")["stdout"].strip() == "True"
    k.ok("%load_ext torchport")
    cell = k.ok(CUDA_CELL)
    log = k.ok("%torchport log")["stdout"]
    # recorded: the session was enabled again with call sites on (the hook's flat wrappers record nothing)
    assert {int(m["line"]) for m in log_lines(log) if m["where"] == f"In[{cell['count']}]"} == {2, 3, 4, 5}


def test_import_torchport_imports_neither_ipython_nor_torch() -> None:
    code = (
        "import sys, torchport\n"
        "assert callable(torchport.load_ipython_extension)\n"
        "assert callable(torchport.unload_ipython_extension)\n"
        "print(sorted(m for m in ('IPython', 'torch', 'nbclient') if m in sys.modules))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


# --- torchport run nb.ipynb ---------------------------------------------------------------------------------

GOOD_CELLS = [
    ("markdown", "# A CUDA notebook\nRun with `torchport run --target cpu`."),
    ("code", '%pip --version\n!echo shell-line-ran\nimport torch\ndevice = "cuda"'),
    (
        "code",
        'model = torch.nn.Linear(4, 2).to("cuda")\n'
        "x = torch.ones(3, 4, device=device)\n"
        'g = torch.Generator("cuda").manual_seed(0)\n'
        'print("out", tuple(model(x).shape), x.device.type, g.device.type)',
    ),
    ("code", "torch.cuda.empty_cache()\nprint('allocated', torch.cuda.memory_allocated())"),
]


def write_nb(path: Path, cells: list[tuple[str, str]]) -> Path:
    made = [new_markdown_cell(src) if kind == "markdown" else new_code_cell(src) for kind, src in cells]
    nb = new_notebook(cells=made)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def code_outputs(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def test_run_executes_a_cuda_notebook_and_writes_the_executed_copy(tmp_path: Path) -> None:
    nb = write_nb(tmp_path / "demo.ipynb", GOOD_CELLS)
    before = digest(nb)
    log = tmp_path / "calls.log"
    done = run_torchport(["run", "--target", "cpu", "--log", str(log), str(nb)], cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert digest(nb) == before  # the input is never written
    out = tmp_path / "demo.torchport-cpu.ipynb"
    assert f"executed copy: {out}" in done.stderr
    assert "shell-line-ran" in done.stdout and "out (3, 2) cpu cpu" in done.stdout
    executed = nbformat.read(str(out), as_version=4)
    assert [c.get("execution_count") for c in executed.cells] == [None, 1, 2, 3]
    assert "pip " in code_outputs(executed.cells[1]) and "shell-line-ran" in code_outputs(executed.cells[1])
    assert "allocated 0" in code_outputs(executed.cells[3])
    # the log names each site by its cell (counted from 1, the markdown cell included) and line
    sites = {(m["where"], int(m["line"])): m for m in log_lines(log.read_text())}
    assert set(sites) == {
        ("demo.ipynb:cell3", 1),
        ("demo.ipynb:cell3", 2),
        ("demo.ipynb:cell3", 3),
        ("demo.ipynb:cell4", 1),
        ("demo.ipynb:cell4", 2),
    }, log.read_text()
    assert sites[("demo.ipynb:cell3", 1)]["what"] == "Module.to(device='cuda') -> Module.to(device='cpu')"
    assert sites[("demo.ipynb:cell3", 1)]["src"] == 'model = torch.nn.Linear(4, 2).to("cuda")'
    assert sites[("demo.ipynb:cell4", 2)]["cls"] == "mismatch"  # memory_allocated answers 0 on cpu
    assert log.read_text().split("# summary\n")[1].startswith("# torchport: 5 redirected call site(s)")
    assert "5 redirected call site(s): 3 match, 1 modified, 1 mismatch" in done.stderr  # the summary
    # a second run overwrites its own executed copy, never the input
    again = run_torchport(["run", "--target", "cpu", "--quiet", str(nb)], cwd=str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert "redirected call site" not in again.stderr and digest(nb) == before


@pytest.mark.parametrize(
    ("third", "code", "what", "args"),
    [
        ("print('third')\nraise ValueError('boom in three')", 1, "failed: ValueError: boom in three", []),
        ("import sys\nsys.exit(3)", 3, "called sys.exit(3)", []),
        ("import os\nos._exit(5)", 1, "failed: the kernel died", []),  # noticed, not waited for
        ("import time\ntime.sleep(120)", 1, "failed: timeout: did not finish within 5.0 s", ["--timeout=5"]),
    ],
)
def test_run_stops_at_the_first_failing_cell(
    tmp_path: Path, third: str, code: int, what: str, args: list[str]
) -> None:
    cells = [
        ("code", 'import torch\nx = torch.zeros(2, device="cuda")\nprint("first", x.device)'),
        ("code", 'y = x.to("cuda") + 1\nprint("second", y.device)'),
        ("code", third),
        ("code", 'print("fourth ran")'),
    ]
    nb = write_nb(tmp_path / "fails.ipynb", cells)
    # the fourth cell keeps the output of an earlier run in the input: the executed copy must not show it
    earlier = nbformat.read(str(nb), as_version=4)
    earlier.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="fourth ran\n")]
    earlier.cells[3].execution_count = 7
    nbformat.write(earlier, str(nb))
    before = digest(nb)
    done = run_torchport(["run", "--target", "cpu", *args, str(nb)], cwd=str(tmp_path))
    assert done.returncode == code, done.stderr
    assert f"torchport run: {nb}: cell 3 (In[3]) {what}; 1 later code cell(s) not run" in done.stderr
    assert "first cpu" in done.stdout and "second cpu" in done.stdout and "fourth ran" not in done.stdout
    executed = nbformat.read(str(tmp_path / "fails.torchport-cpu.ipynb"), as_version=4)
    third_cell, fourth = executed.cells[2], executed.cells[3]
    assert third_cell.execution_count == 3
    if "raise" in third or "exit(3)" in third:
        assert any(o.get("output_type") == "error" for o in third_cell.outputs)
    assert fourth.outputs == [] and fourth.execution_count is None  # not run: nothing of an earlier run
    assert digest(nb) == before
    if "ValueError" in third:
        assert "ValueError: boom in three" in done.stderr  # the cell's traceback, without colour codes
        assert "\x1b[" not in done.stderr


def test_run_refuses_before_any_kernel_starts(tmp_path: Path) -> None:
    nb = write_nb(tmp_path / "nb.ipynb", GOOD_CELLS)
    before = digest(nb)
    cases = [
        (["--target", "npuu", str(nb)], "unknown target 'npuu'"),
        (["--target", "npu", str(nb)], "torch_npu"),
        (["--target", "cpu", str(nb), "--lr", "3"], "a notebook takes no arguments"),
        (["--target", "cpu", "--output", str(nb), str(nb)], "would overwrite the notebook itself"),
        (["--target", "cpu", "--shapes", str(nb)], "--shapes is for scripts"),
        (["--target", "cpu", "--timeout", "0", str(nb)], "--timeout takes a number of seconds > 0"),
        (["--target", "cpu", "--output", "no/such/dir/x.ipynb", str(nb)], "cannot write the executed copy"),
    ]
    for args, message in cases:
        p = run_torchport(["run", *args], cwd=str(tmp_path))
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')
    p = run_torchport(["run", "--target", "cpu", str(broken)], cwd=str(tmp_path))
    assert p.returncode == 2 and "cannot read the notebook" in p.stderr, p.stderr
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    p = run_torchport(["run", "--target", "cpu", "--output", "x.ipynb", str(script)], cwd=str(tmp_path))
    assert p.returncode == 2 and "--output and --timeout are for notebooks" in p.stderr
    assert digest(nb) == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["broken.ipynb", "nb.ipynb", "s.py"]


def test_run_with_a_target_whose_device_is_absent_writes_nothing(tmp_path: Path) -> None:
    nb = write_nb(tmp_path / "nb.ipynb", GOOD_CELLS)
    p = run_torchport(["run", "--target", "xpu", str(nb)], cwd=str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "no Intel GPU (XPU) device is visible" in p.stderr and "the notebook did not run" in p.stderr
    assert "shell-line-ran" not in p.stdout
    assert sorted(x.name for x in tmp_path.iterdir()) == ["nb.ipynb"]


# --- a notebook derived from a real one --------------------------------------------------------------------

# A stand-in for the `diffusers` package the real notebook downloads SDXL with: the calls the notebook makes
# (from_pretrained with torch_dtype, .to, unet.set_default_attn_processor, pipe(**call_args)), on a model of
# a few hundred parameters instead of the 6.6 GB download.
STANDIN_DIFFUSERS = '''\
"""Test stand-in for diffusers (tests/python/test_runtime_notebook.py): no download, a tiny model."""
import types

import torch
from torch import nn


class _UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.processor = "sdpa"

    def set_default_attn_processor(self):
        self.processor = "default"

    def forward(self, latents):
        return self.proj(latents)


class StableDiffusionXLPipeline(nn.Module):
    @classmethod
    def from_pretrained(cls, name, torch_dtype=None, **kwargs):
        torch.manual_seed(0)
        pipe = cls()
        return pipe if torch_dtype is None else pipe.to(torch_dtype)

    def __init__(self):
        super().__init__()
        self.unet = _UNet()

    def forward(self, prompt=None, num_images_per_prompt=1, num_inference_steps=1, **kwargs):
        w = self.unet.proj.weight
        latents = torch.randn(num_images_per_prompt, 4, 16, device=w.device, dtype=w.dtype)
        for _ in range(num_inference_steps):
            latents = latents - 0.1 * self.unet(latents)
        return types.SimpleNamespace(images=list(latents))
'''

FAKE_PIP = '#!/bin/sh\necho "stand-in pip (test): not installing: $*"\n'


def _line_of(source: str, needle: str) -> int:
    lines = [i for i, text in enumerate(source.splitlines(), 1) if needle in text]
    assert len(lines) == 1, (needle, source)
    return lines[0]


@pytest.mark.skipif(
    not REAL.is_file(), reason=f"{REAL} is absent (../shared/notebooks is not checked out here)"
)
def test_run_a_notebook_derived_from_a_real_one(tmp_path: Path) -> None:
    real = nbformat.read(str(REAL), as_version=4)
    # its first three set-ups (FP32, FP16, FP16 + SDPA), as the notebook has them, up to the torch.compile
    # part (cell 15 on): `!nvidia-smi`, `!pip install`, from_pretrained, pipe.to("cuda"), timeit with
    # torch.cuda.max_memory_allocated, flush with torch.cuda.empty_cache and reset_peak_memory_stats
    end = next(i for i, c in enumerate(real.cells) if "torch.compile" in c.source)
    end = max(i for i in range(end) if real.cells[i].cell_type == "code") + 1
    derived = nbformat.read(str(REAL), as_version=4)  # its format (4.0: no cell ids) and metadata
    derived.cells = derived.cells[:end]
    nb = tmp_path / REAL.name  # the space in the name, kept
    nbformat.write(derived, str(nb))
    standins = tmp_path / "standins" / "diffusers"
    standins.mkdir(parents=True)
    (standins / "__init__.py").write_text(STANDIN_DIFFUSERS)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pip").write_text(FAKE_PIP)
    (bin_dir / "pip").chmod(stat.S_IRWXU)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(standins.parent), child_env().get("PYTHONPATH", "")]),
    }
    log = tmp_path / "calls.log"
    done = run_torchport(["run", "--target", "cpu", "--log", str(log), str(nb)], env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "stand-in pip (test): not installing: install git+https://github.com/huggingface/diffusers" in (
        done.stdout
    )
    executed = nbformat.read(str(tmp_path / f"{nb.stem}.torchport-cpu.ipynb"), as_version=4)
    timed = [i for i, c in enumerate(executed.cells) if c.cell_type == "code" and "timeit(pipe)" in c.source]
    assert len(timed) == 3
    for i in timed:
        text = code_outputs(executed.cells[i])
        assert "Execution time -- " in text and "Max memory allocated: 0.0 GB" in text, (i, text)
    # each CUDA call of the notebook is in the log under its own cell and line
    src = {i + 1: c.source for i, c in enumerate(derived.cells)}
    name = nb.name
    first_to = next(n for n, s in src.items() if 'pipe = pipe.to("cuda")' in s)
    timeit_cell = next(n for n, s in src.items() if "def timeit(" in s)
    flush_cell = next(n for n, s in src.items() if "def flush(" in s)
    want = {
        (f"{name}:cell{first_to}", _line_of(src[first_to], 'pipe.to("cuda")'), "Module.to", "match"),
        (f"{name}:cell{timeit_cell}", _line_of(src[timeit_cell], "torch.cuda.max_memory_allocated()"),
         "torch.cuda.max_memory_allocated", "mismatch"),
        (f"{name}:cell{flush_cell}", _line_of(src[flush_cell], "torch.cuda.empty_cache()"),
         "torch.cuda.empty_cache", "modified"),
        (f"{name}:cell{flush_cell}", _line_of(src[flush_cell], "torch.cuda.reset_peak_memory_stats()"),
         "torch.cuda.reset_peak_memory_stats", "modified"),
    }  # fmt: skip
    got = {
        (m["where"], int(m["line"]), m["what"].split("(")[0], m["cls"]) for m in log_lines(log.read_text())
    }
    assert want <= got, log.read_text()
    assert not [g for g in got if not g[0].startswith(f"{name}:cell")], got  # no site outside the notebook
