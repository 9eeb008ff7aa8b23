"""migrate --distributed (issue 14): single-device training scripts made DDP ones, proven equal.

For each fixture of tests/fixtures/distributed/ without BatchNorm or dropout, the original runs on
the CPU with its global batch B, and the converted script (`--target cpu`, gloo) runs under
`torchrun --nproc_per_node 2` with B/2 per rank (the default --per-rank-batch split). A helper
(fixtures/distributed/loss_runner.py) records the loss of every backward() in each process. DDP
averages the ranks' gradients, so the mean of the two ranks' losses at step k is the loss of the
original's step k (equal halves of one global batch), and the saved parameters agree. The test
compares every step (at least 5) to rel 1e-5, and the final state_dicts key by key (no
`module.` prefix).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchport import report_json
from torchrun_testlib import run_ranks

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "distributed"
RUNNER = HERE / "fixtures" / "distributed" / "loss_runner.py"

# fixture -> its --model-var (model when absent)
EQUIVALENT = {
    "main_function": "model",
    "top_level": "model",
    "argparse_trainer": "model",
    "trainer_class": "model",
    "custom_var": "net",
    "data_parallel": "model",
}


def torchport(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args], capture_output=True, text=True, check=False, cwd=cwd
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def convert(tmp: Path, name: str, var: str = "model", target: str = "cpu") -> Path:
    out = tmp / "out"
    r = torchport(
        "migrate", str(FIXTURES / f"{name}.py"), "-o", str(out), "--target", target,
        "--distributed", "--main", f"{name}.py", "--model-var", var, "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    result = out / f"{name}_{target}_multi"
    assert (result / f"{name}.py").is_file()
    return result


def run_original(name: str | Path, where: Path) -> list[float]:
    where.mkdir()
    env = {**os.environ, "TP_LOSS_DIR": str(where)}
    script = name if isinstance(name, Path) else FIXTURES / f"{name}.py"
    r = subprocess.run(
        [sys.executable, str(RUNNER), str(script)],
        cwd=where, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return list(json.loads((where / "losses_0.json").read_text()))


def run_converted(script: Path, where: Path, nproc: int = 2) -> tuple[list[list[float]], str]:
    where.mkdir()
    env = {**os.environ, "TP_LOSS_DIR": str(where), "OMP_NUM_THREADS": "1"}

    def empty_where() -> None:
        # a run that aborted in the teardown (run_ranks runs it again) leaves its outputs, and the
        # scripts append to some of them (metrics.jsonl): the next run starts from an empty directory
        shutil.rmtree(where)
        where.mkdir()

    r = run_ranks(
        [
            sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
            "--master_port", str(free_port()), str(RUNNER), str(script),
        ],
        reset=empty_where, cwd=where, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = [list(json.loads((where / f"losses_{k}.json").read_text())) for k in range(nproc)]
    return ranks, r.stdout


@pytest.mark.parametrize("name", sorted(EQUIVALENT))
def test_two_ranks_train_like_one_device(name: str, tmp_path: Path) -> None:
    before = (FIXTURES / f"{name}.py").read_bytes()
    result = convert(tmp_path, name, EQUIVALENT[name])
    assert (FIXTURES / f"{name}.py").read_bytes() == before  # the input is never modified
    single = run_original(name, tmp_path / "single")
    ranks, stdout = run_converted(result / f"{name}.py", tmp_path / "ddp")
    assert len(single) >= 5
    assert all(len(r) == len(single) for r in ranks), (single, ranks)
    # The two ranks saw different halves of each global batch.
    assert any(abs(a - b) > 1e-6 for a, b in zip(ranks[0], ranks[1]))
    mean = [(a + b) / 2 for a, b in zip(ranks[0], ranks[1])]
    assert mean == pytest.approx(single, rel=1e-5, abs=1e-7)
    one = torch.load(tmp_path / "single" / "model.pt")
    two = torch.load(tmp_path / "ddp" / "model.pt")
    assert list(two) == list(one)  # no `module.` prefix
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=1e-5, atol=1e-6)


def test_accelerator_output_trains_like_one_device(tmp_path: Path) -> None:
    """--target accelerator: on this CPU-only machine the device is the CPU and the backend is the
    one torch reports for it (gloo)."""
    result = convert(tmp_path, "main_function", target="accelerator")
    text = (result / "main_function.py").read_text()
    assert "backend=dist.get_default_backend_for_device(rank_device)" in text
    single = run_original("main_function", tmp_path / "single")
    ranks, _ = run_converted(result / "main_function.py", tmp_path / "ddp")
    mean = [(a + b) / 2 for a, b in zip(ranks[0], ranks[1])]
    assert len(single) >= 5 and mean == pytest.approx(single, rel=1e-5, abs=1e-7)


SETUP_BLOCK = re.compile(
    r"(?:import os\n)?\n# torchport --distributed: one process per device.*?"
    r"        dist\.destroy_process_group\(\)\n\n",
    flags=re.S,
)


@pytest.mark.parametrize("name", [*sorted(EQUIVALENT), "batchnorm"])
def test_converted_scripts_match_the_hand_written_expectations(name: str, tmp_path: Path) -> None:
    """expected/<name>.cpu.py: each output written by hand, with the TP410 set-up block (the same
    in every file, checked by tests/fixtures/rules/ddp) as one marker line."""
    result = convert(tmp_path, name, EQUIVALENT.get(name, "model"))
    got, n = SETUP_BLOCK.subn("# [TP410 set-up block]\n", (result / f"{name}.py").read_text())
    assert n == 1
    assert got == (FIXTURES / "expected" / f"{name}.cpu.py").read_text()


def test_side_effects_on_rank_zero_only(tmp_path: Path) -> None:
    result = convert(tmp_path, "main_function")
    ranks, stdout = run_converted(result / "main_function.py", tmp_path / "ddp")
    lines = [line for line in stdout.splitlines() if "loss" in line]
    assert len(lines) == len(ranks[0]) == 6  # one print per step: rank 0's, not rank 1's


def test_batchnorm_differs_and_says_why(tmp_path: Path) -> None:
    """BatchNorm normalizes with the batch's statistics: each rank sees half the batch, so the
    forward differs from step 0 on (docs/migrate.md; SyncBatchNorm would share the statistics)."""
    result = convert(tmp_path, "batchnorm")
    single = run_original("batchnorm", tmp_path / "single")
    ranks, _ = run_converted(result / "batchnorm.py", tmp_path / "ddp")
    mean = [(a + b) / 2 for a, b in zip(ranks[0], ranks[1])]
    assert len(mean) == len(single)
    assert abs(mean[0] - single[0]) > 1e-5 * abs(single[0])
    assert all(v == v and v < 1e6 for v in mean)  # it trains: finite losses


def read_change_list(result: Path) -> list[dict[str, str]]:
    with open(result / "torchport-report" / "change_list.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_each_change_is_reported(tmp_path: Path) -> None:
    result = convert(tmp_path, "main_function")
    rows = read_change_list(result)
    report = report_json.load(result / "torchport-report" / "report.json")
    codes = {f["code"] for f in report["findings"]}
    for code in ("TP410", "TP411", "TP413", "TP414", "TP415", "TP416", "TP417"):
        assert code in codes, code
    messages = " | ".join(r["Message"] for r in rows)
    assert "DistributedSampler for loader" in messages
    assert "split between the ranks" in messages
    assert "launcher" in messages
    text = (result / "main_function.py").read_text()
    assert "    model = wrap_ddp(model)\n" in text
    assert "        loader.sampler.set_epoch(epoch)\n" in text
    assert 'if is_rank0(): torch.save(unwrap_ddp(model).state_dict(), "model.pt")' in text
    assert 'rank0_only(print)(f"epoch {epoch} step {step} loss {loss.item():.6f}")' in text
    assert text.rstrip().endswith("main()\n    cleanup_distributed()")


def test_generated_launcher_runs_two_cpu_ranks(tmp_path: Path) -> None:
    result = convert(tmp_path, "main_function")
    launcher = result / "run_distributed.sh"
    assert os.access(launcher, os.X_OK)
    assert not (result / "run_distributed_npu.sh").exists()  # Ascend's launcher is npu's
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    r = run_ranks(
        [str(launcher), "--nproc", "2", "--master-port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert (result / "model.pt").is_file()
    assert sum("loss" in line for line in r.stdout.splitlines()) == 6


def test_npu_launchers_loop_over_rank_id_and_device_id(tmp_path: Path) -> None:
    result = convert(tmp_path, "main_function", target="npu")
    text = (result / "main_function.py").read_text()
    assert 'dist.init_process_group(backend="hccl")' in text
    assert "device_ids=[local_rank]" in text
    launcher = result / "run_distributed_npu.sh"
    assert os.access(launcher, os.X_OK) and os.access(result / "run_distributed.sh", os.X_OK)
    # No NPU here: a stand-in interpreter prints what each process is given.
    fake = tmp_path / "fake_python"
    fake.write_text('#!/bin/sh\necho "$RANK_ID $DEVICE_ID $RANK $LOCAL_RANK $WORLD_SIZE $1 $2"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake)}
    r = subprocess.run(
        [str(launcher), "--nproc", "2", "--nnodes", "2", "--node-rank", "1", "--", "--epochs", "1"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    logs = sorted((result / "log").iterdir())
    assert [p.name for p in logs] == ["rank_2.log", "rank_3.log"]
    assert logs[0].read_text().split() == ["2", "0", "2", "0", "4", "main_function.py", "--epochs"]
    assert logs[1].read_text().split() == ["3", "1", "3", "1", "4", "main_function.py", "--epochs"]


BAD = {
    "no_loader": (
        "import torch\nmodel = torch.nn.Linear(2, 1)\n"
        "for x in torch.randn(4, 2):\n    model(x).sum().backward()\n",
        "no_loader.py:1:1: no torch.utils.data.DataLoader",
    ),
    "no_model": (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(list(range(8)), batch_size=2)\nnet = torch.nn.Linear(2, 1)\n",
        "no_model.py:1:1: the model is never bound to `model`",
    ),
    "already": (
        "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n"
        "dist.init_process_group('gloo')\nmodel = torch.nn.Linear(2, 1)\n"
        "loader = DataLoader(list(range(8)), batch_size=2)\n",
        "already.py:2:8: the script already uses torch.distributed",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_refused_with_nothing_written(case: str, tmp_path: Path) -> None:
    source, message = BAD[case]
    script = tmp_path / f"{case}.py"
    script.write_text(source)
    out = tmp_path / "out"
    r = torchport("migrate", str(script), "-o", str(out), "--target", "cpu", "--distributed")
    assert r.returncode == 2
    assert message in r.stderr, r.stderr
    assert "nothing was written" in r.stderr
    assert not out.exists() or not any(out.iterdir())
    assert script.read_text() == source


def test_converting_again_reports_it_and_changes_nothing(tmp_path: Path) -> None:
    result = convert(tmp_path, "main_function")
    before = (result / "main_function.py").read_text()
    out2 = tmp_path / "again"
    again = str(result / "main_function.py")
    r = torchport("migrate", again, "-o", str(out2), "--target", "cpu", "--distributed")
    assert r.returncode == 2
    assert "already uses torch.distributed" in r.stderr
    assert not out2.exists() or not any(out2.iterdir())
    assert (result / "main_function.py").read_text() == before


def test_project_needs_main_and_ascend_alias(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text((FIXTURES / "custom_var.py").read_text())
    (project / "README.txt").write_text("notes\n")
    r = torchport("migrate", str(project), "-o", str(tmp_path / "o1"), "--target", "cpu", "--distributed")
    assert r.returncode == 2 and "--distributed needs --main FILE" in r.stderr
    # Ascend's spelling: distributed -m FILE -t VAR (the target defaults to npu).
    o2 = str(tmp_path / "o2")
    r = torchport("distributed", str(project), "-m", "train.py", "-t", "net", "-o", o2, "-q")
    assert r.returncode == 0, r.stderr
    alias = tmp_path / "o2" / "proj_npu_multi"
    r = torchport(
        "migrate", str(project), "-o", str(tmp_path / "o3"), "--target", "npu", "--distributed",
        "--main", "train.py", "--model-var", "net", "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    long = tmp_path / "o3" / "proj_npu_multi"
    for f in ("train.py", "README.txt", "run_distributed.sh", "run_distributed_npu.sh"):
        assert (alias / f).read_bytes() == (long / f).read_bytes(), f
    assert "net = wrap_ddp(net)" in (alias / "train.py").read_text()


def test_keep_batch_is_labelled(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = torchport(
        "migrate", str(FIXTURES / "main_function.py"), "-o", str(out), "--target", "cpu",
        "--distributed", "--per-rank-batch", "keep", "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    result = out / "main_function_cpu_multi"
    assert "batch_size=16," in (result / "main_function.py").read_text()
    unknown = (result / "torchport-report" / "unknown_api.csv").read_text()
    assert "the global batch is 16 x WORLD_SIZE" in unknown


WRITER_SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tb import SummaryWriter

data = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loader = DataLoader(data, batch_size=4)
model = torch.nn.Linear(2, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
writer = SummaryWriter("runs")
for epoch in range(2):
    for x, y in loader:
        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    writer.add_scalar("loss", loss.item(), epoch)
writer.close()
"""

# A TensorBoard-shaped writer that makes one event file per instance (tensorboard itself is not installed
# here): the file names the process that created it.
WRITER_MODULE = """\
import os


class SummaryWriter:
    def __init__(self, log_dir):
        os.makedirs(log_dir, exist_ok=True)
        self.f = open(os.path.join(log_dir, f"events.{os.getpid()}"), "w")

    def add_scalar(self, tag, value, step):
        self.f.write(f"{tag} {step} {value}\\n")

    def close(self):
        self.f.close()
"""


def test_the_tensorboard_writer_exists_on_rank_zero_only(tmp_path: Path) -> None:
    """TP415: `writer = SummaryWriter(...)` is created by rank 0 only (one event file, not one per rank); the
    other ranks get a stand-in, so their writer.add_scalar / writer.close calls are no-ops."""
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text(WRITER_SCRIPT)
    (src / "tb.py").write_text(WRITER_MODULE)
    r = torchport(
        "migrate", str(src), "-o", str(tmp_path / "out"), "--target", "cpu",
        "--distributed", "--main", "train.py", "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    result = tmp_path / "out" / "proj_cpu_multi"
    assert 'writer = rank0_only(SummaryWriter)("runs")' in (result / "train.py").read_text()
    p = run_ranks(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         "--master_port", str(free_port()), "train.py"],
        cwd=result, capture_output=True, text=True, check=False, timeout=300,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        reset=lambda: shutil.rmtree(result / "runs", ignore_errors=True),  # an aborted run's event file
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    events = list((result / "runs").iterdir())
    assert len(events) == 1, events
    assert [line.split()[:2] for line in events[0].read_text().splitlines()] == [["loss", "0"], ["loss", "1"]]


PROJECT = FIXTURES / "multi_module"  # train.py imports data, engine, utils and models.net


def distribute_project(project: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """migrate a project --distributed for cpu, train.py its entry script."""
    return torchport(
        "migrate",
        str(project),
        "-o",
        str(out),
        "--target",
        "cpu",
        "--distributed",
        "--main",
        "train.py",
        "-q",
    )


def unknown_rows(result: Path) -> list[dict[str, str]]:
    with open(result / "torchport-report" / "unknown_api.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_project_split_into_modules_trains_like_one_device(tmp_path: Path) -> None:
    """The modules that --main imports get the distributed rewrite of what they hold: the
    DataLoader in data.py is sharded and its batch split, engine.py prints and utils.py logs,
    writes metrics and saves on rank 0 only (the checkpoint without `module.`); train.py wraps
    the model and sets up the process group. models/net.py has nothing to change and does not
    change. Two ranks train as one device."""
    out = tmp_path / "out"
    r = distribute_project(PROJECT, out)
    assert r.returncode == 0, r.stderr
    result = out / "multi_module_cpu_multi"
    expected = FIXTURES / "expected" / "multi_module"
    got, n = SETUP_BLOCK.subn("# [TP410 set-up block]\n", (result / "train.py").read_text())
    assert n == 1 and got == (expected / "train.cpu.py").read_text()
    for name in ("data", "engine", "utils"):
        assert (result / f"{name}.py").read_text() == (expected / f"{name}.cpu.py").read_text(), name
    assert (result / "models" / "net.py").read_bytes() == (PROJECT / "models" / "net.py").read_bytes()
    rows = read_change_list(result)
    per_file = {row["File"] for row in rows if "helpers this module calls" in row["Message"]}
    assert per_file == {"data.py", "engine.py", "utils.py"}
    # the loader build_loaders() returns gets its set_epoch in train.py's epoch loop
    assert any(r["File"] == "train.py" and "sampler's epoch" in r["Message"] for r in rows), rows
    # no epoch loop in data.py: its UNKNOWN row says where set_epoch goes
    unknown = unknown_rows(result)
    assert any(u["File"] == "data.py" and "set_epoch" in u["Tips"] for u in unknown), unknown

    single = run_original(PROJECT / "train.py", tmp_path / "single")
    ranks, stdout = run_converted(result / "train.py", tmp_path / "ddp")
    assert len(single) == 3 * 6  # 3 epochs of 96 samples in batches of 16
    assert all(len(rk) == len(single) for rk in ranks)
    assert any(abs(a - b) > 1e-6 for a, b in zip(ranks[0], ranks[1]))  # each rank had its own half
    mean = [(a + b) / 2 for a, b in zip(ranks[0], ranks[1])]
    assert mean == pytest.approx(single, rel=1e-5, abs=1e-7)
    one = torch.load(tmp_path / "single" / "model.pt")
    two = torch.load(tmp_path / "ddp" / "model.pt")
    assert list(two) == list(one)
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=1e-5, atol=1e-6)
    # rank 0 alone printed, and wrote the metrics file: one line per epoch, as the original
    assert sum("loss" in line for line in stdout.splitlines()) == 3 * 3
    assert len((tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()) == 3
    assert len((tmp_path / "single" / "metrics.jsonl").read_text().splitlines()) == 3


def test_imported_module_that_is_distributed_already_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\nfrom helpers import world\n\n"
        "model = torch.nn.Linear(2, 1)\nloader = DataLoader(list(range(8)), batch_size=4)\n"
        "for epoch in range(2):\n    for b in loader:\n        print(world(), b)\n"
    )
    helpers = (
        "import torch.distributed as dist\n\n\n"
        "def world():\n    return dist.get_world_size() if dist.is_initialized() else 1\n"
    )
    (project / "helpers.py").write_text(helpers)
    out = tmp_path / "out"
    r = distribute_project(project, out)
    assert r.returncode == 0, r.stderr
    result = out / "p_cpu_multi"
    assert (result / "helpers.py").read_text() == helpers
    unknown = unknown_rows(result)
    assert any(u["File"] == "helpers.py" and "already uses torch.distributed" in u["Tips"] for u in unknown)
    assert "wrap_ddp(model)" in (result / "train.py").read_text()


def test_the_data_loader_may_live_in_an_imported_module_only(tmp_path: Path) -> None:
    """The refusal "no DataLoader" looks at the imported project modules too; a project with none
    anywhere is still refused, with nothing written."""
    project = tmp_path / "p"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "loaders.py").write_text(
        "from torch.utils.data import DataLoader\n\n\n"
        "def make():\n    return DataLoader(list(range(8)), batch_size=4)\n"
    )
    (project / "train.py").write_text(
        "import torch\nfrom pkg.loaders import make\n\nmodel = torch.nn.Linear(2, 1)\n"
        "for epoch in range(2):\n    for b in make():\n        pass\n"
    )
    out = tmp_path / "out"
    r = distribute_project(project, out)
    assert r.returncode == 0, r.stderr
    assert "sampler=shard_sampler(" in (out / "p_cpu_multi" / "pkg" / "loaders.py").read_text()
    (project / "pkg" / "loaders.py").write_text("def make():\n    return [list(range(4))]\n")
    out2 = tmp_path / "out2"
    r = distribute_project(project, out2)
    assert r.returncode == 2 and "no torch.utils.data.DataLoader" in r.stderr, r.stderr
    assert not out2.exists() or not any(out2.iterdir())


def test_launcher_reads_the_platform_environment(tmp_path: Path) -> None:
    """A platform that exports NNODES, NODE_RANK, MASTER_ADDR and MASTER_PORT starts the generated
    launcher with no argument; an argument still wins. PYTHON=echo shows the torchrun command line."""
    result = convert(tmp_path, "main_function", target="npu")
    env = {
        **os.environ, "PYTHON": "echo", "NPROC_PER_NODE": "8",
        "NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "6000",
    }  # fmt: skip
    for launcher in ("run_distributed.sh", "run_distributed_npu.sh"):
        r = subprocess.run([str(result / launcher)], env=env, capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [str(result / "run_distributed.sh"), "--node-rank", "0"], env=env, capture_output=True, text=True
    )
    assert r.stdout.split() == [
        "-m", "torch.distributed.run", "--nproc_per_node", "8", "--nnodes", "2", "--node_rank", "0",
        "--master_addr", "10.0.0.7", "--master_port", "6000", "main_function.py",
    ], r.stdout  # fmt: skip
    logs = (result / "log").glob("rank_*.log")  # the Ascend launcher's 8 processes of node 1
    assert {p.name for p in logs} == {f"rank_{8 + i}.log" for i in range(8)}
    assert (result / "log" / "rank_8.log").read_text().split() == ["main_function.py"]
