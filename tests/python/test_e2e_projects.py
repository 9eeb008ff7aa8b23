"""Realistic CUDA projects in the styles of public training repos (tests/fixtures/e2e_projects/, issue 11):
an ImageNet-style trainer with `--gpu` and `--multiprocessing-distributed` and a resumable checkpoint, a
CUDA-stream data prefetcher, a VAE with a `--cuda` flag, and a parameter server over torch.distributed.rpc.

For each project:
- the original fails on this CPU-only machine (the reason asserted), or, for `--multiprocessing-distributed`,
  silently starts no process at all (torch.cuda.device_count() is 0 here);
- after `migrate --target cpu` and `--target accelerator` every command line of it trains 3 steps, the
  multi-process ones with 2 gloo ranks, and the single-process runs of cpu and accelerator print the same
  losses;
- the corpus oracle (tests/corpus/oracle.py, Python's own ast) finds no CUDA reference left in the output
  without a report row, every output parses, and a second migrate changes nothing.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.corpus import static

from torchrun_testlib import run_ranks

HERE = Path(__file__).resolve().parent
PROJECTS = HERE.parent / "fixtures" / "e2e_projects"


# project -> its entry script and its command lines: (arguments, processes that train, why the
# original fails on this machine: a stderr substring, or None when it silently does nothing).
COMMANDS: dict[str, tuple[str, list[tuple[list[str], int, str | None]]]] = {
    "imagenet_ddp": (
        "main.py",
        [
            (["--gpu", "0"], 1, "_cuda_setDevice"),
            ([], 1, "Torch not compiled with CUDA enabled"),
            (["--multiprocessing-distributed"], 2, None),
        ],
    ),
    "prefetch_loader": ("train.py", [([], 1, "Torch not compiled with CUDA enabled")]),
    "vae_cli": ("main.py", [(["--cuda"], 1, "Torch not compiled with CUDA enabled")]),
    "rpc_ps": ("rpc_ps.py", [([], 2, "Torch not compiled with CUDA enabled")]),
}


def run(script: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # run again if a rank aborted in torch's C++ teardown after its work (torchrun_testlib)
    return run_ranks(
        [sys.executable, script.name, *args],
        cwd=script.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=env,
    )


def losses(stdout: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", stdout, re.M)]


def test_every_project_is_listed() -> None:
    assert sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_original_fails_on_this_cpu_only_machine(name: str, tmp_path: Path) -> None:
    shutil.copytree(PROJECTS / name, tmp_path / name)
    entry, commands = COMMANDS[name]
    for args, _, why in commands:
        p = run(tmp_path / name / entry, args)
        assert losses(p.stdout) == [], (args, p.stdout)
        if why is None:
            assert p.returncode == 0, p.stderr  # spawn(nprocs=0): nothing runs, and nothing says so
        else:
            assert p.returncode != 0 and why in p.stderr, (args, p.stderr[-2000:])


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    out = tmp_path_factory.mktemp("out")
    trees: dict[tuple[str, str], Path] = {}
    for name in COMMANDS:
        for target in ("cpu", "accelerator"):
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "torchport",
                    "migrate",
                    str(PROJECTS / name),
                    "-o",
                    str(out),
                    "-t",
                    target,
                    "-q",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            assert p.returncode == 0, p.stdout + p.stderr
            trees[name, target] = out / f"{name}_{target}"
    return trees


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_migrated_project_trains_on_cpu_and_accelerator(
    name: str, migrated: dict[tuple[str, str], Path]
) -> None:
    entry, commands = COMMANDS[name]
    for args, processes, _ in commands:
        got: dict[str, list[float]] = {}
        for target in ("cpu", "accelerator"):
            p = run(migrated[name, target] / entry, args)
            assert p.returncode == 0, (target, args, p.stderr[-3000:])
            got[target] = losses(p.stdout)
            # one process prints (rank 0, or the trainer of the parameter server)
            assert len(got[target]) == 3, (target, args, p.stdout)
            assert all(math.isfinite(v) for v in got[target])
        if processes == 1:
            assert got["cpu"] == pytest.approx(got["accelerator"], rel=1e-6), args


@pytest.mark.parametrize("target", ["cpu", "accelerator"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_nothing_left_unreported_and_a_second_migrate_changes_nothing(
    name: str, target: str, tmp_path: Path
) -> None:
    cell = static.run_cell(PROJECTS / name, target, tmp_path)
    assert cell.problems == [], cell.problems
    assert cell.changed > 0
