"""The README is executed: every command of its `sh` blocks runs exactly as written, from the root of a
clean clone of this repository (its tracked files as they are in the working tree, committed in a new
repository), with the exit status the README states, so the README cannot drift from the code. Afterwards
`git status` in the clone shows only what the commands were told to write (`-o`, `--out`, `--log`):
a command that leaves anything else in a user's clone (a checkpoint, a cache) fails it. The two set-up
commands (`bash tools/quickstart.sh`, `bash .ci/run`) install and test everything: CI runs them itself,
so they are left out here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from torchrun_testlib import run_ranks

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    lines = [ln.strip() for block in blocks for ln in block.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#") and not ln.startswith("bash ")]


def expected_status(command: str) -> int:
    # The README states these: analyze gates CI with 1 on findings (the example has CUDA code), and
    # compare exits 1 when a row is flagged (bf16 drifts from fp32 in the example).
    if command.startswith("torchport analyze") or command.startswith("torchport compare"):
        return 1
    return 0


# What the README's commands are told to write, relative to the clone's root (`git status --porcelain`
# names a new directory once, with a trailing slash). build/ is in .gitignore.
NAMED_OUTPUTS = {
    "out/",  # migrate -o out
    "multi/",  # migrate --distributed -o multi
    "examples/cuda_project/calls.log",  # run --log calls.log, in examples/cuda_project
    "fp32.dump/",  # probe --out fp32.dump
    "bf16.dump/",  # probe --out bf16.dump
    "cloud/",  # migrate --modelarts / --object-storage -o cloud
    "verified/",  # migrate -o verified
    "verify.html",  # verify --format html -o verify.html
}


def git(clone: Path, *args: str) -> str:
    p = subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True, check=True)
    return p.stdout


def clean_clone(dst: Path) -> Path:
    """A clone of this repository as a user gets it: the tracked files (and new ones git would track), from
    the working tree, committed in a new repository."""
    files = (
        subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)
    git(dst, "init", "-q")
    git(dst, "add", "-A")
    git(dst, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "clone")
    return dst


def test_the_readme_commands_run_as_written(tmp_path: Path) -> None:
    commands = readme_commands()
    assert any(c.startswith("torchport run ") for c in commands), "the run example is included"
    assert len(commands) >= 10
    clone = clean_clone(tmp_path / "torchport")
    assert git(clone, "status", "--porcelain") == ""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command in commands:
        # run_ranks: a launcher command fails when a gloo rank aborts in torch's C++ teardown after its work
        # is done (pytorch/pytorch#38228, TEARDOWN_ABORT); such a run is run again, any other result is kept
        p = run_ranks(
            ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=300
        )
        assert p.returncode == expected_status(command), f"{command}\n{p.stdout}\n{p.stderr}"
        assert "Traceback" not in p.stderr, f"{command}\n{p.stderr}"
    assert (clone / "out" / "cuda_project_npu" / "torchport-report" / "report.json").is_file()
    assert (clone / "examples" / "cuda_project" / "calls.log").is_file()
    status = git(clone, "status", "--porcelain").splitlines()
    assert all(line.startswith("?? ") for line in status), status  # no tracked file was changed
    assert {line[3:] for line in status} == NAMED_OUTPUTS


def test_every_pip_install_in_the_readme_names_where_torchport_comes_from() -> None:
    # torchport is on no index: the README may not promise a `pip install` it cannot keep. Each pip
    # install of torchport in it names a local path (the clone, or the wheel tools/wheel_check.sh writes).
    text = (REPO / "README.md").read_text()
    installs = re.findall(r"`(pip install [^`]*)`", text)
    assert installs, "the README says how to install"
    for cmd in installs:
        args = cmd.split()[2:]
        # the packages named: not the options, nor the directory of --target
        words = [w for i, w in enumerate(args) if not w.startswith("-") and args[i - 1 : i] != ["--target"]]
        assert words, cmd
        # torchport from a local path; torch, or the vendor's torch-npu for rehearse, pinned from PyPI
        assert all(w.startswith(("torch==", "torch-npu==", "./", ".")) or w == "torch" for w in words), cmd
    assert "One `pip install`" not in text
    wheel = re.search(r"`(build/dist/wheelhouse/torchport-\*\.whl)`", text)
    assert wheel, "the README names the wheel's path"
    script = (REPO / "tools" / "wheel_check.sh").read_text()
    assert "OUT=$ROOT/build/dist" in script and '--wheel-dir "$OUT/wheelhouse"' in script
