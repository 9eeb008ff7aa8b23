"""`torchport verify`: run the original and the migrated project for N optimizer steps, each in its own
process with the recorder injected (child.py), and turn the two traces and probe dumps into a verdict.

The original runs under `torchport run --target cpu`; the migrated tree natively (cpu, accelerator,
xpu, mps, hpu) or under `torchport rehearse --target T` (npu, mlu, musa). Scripts that start a
process group themselves (torchrun style) run under torchrun with 2 CPU ranks on both sides.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from torchport import report_json
from torchport.verify.common import (  # noqa: F401 - shared names, also imported from here
    DTYPE_RTOL,
    REHEARSED,
    TARGETS,
    Options,
    Proc,
    SideRun,
    VerifyError,
)

# ---- preparing the two trees ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _torchport(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchport", *args], capture_output=True, text=True, check=False
    )


def migrate_into(original: Path, target: str, work: Path) -> Path:
    """`torchport migrate ORIGINAL -o WORK/migrated --target T`; returns the migrated tree."""
    out = work / "migrated"
    p = _torchport("migrate", str(original), "-o", str(out), "--target", target, "-q")
    if p.returncode not in (0, 1) or not out.is_dir():
        raise VerifyError(f"{original}: torchport migrate --target {target} failed:\n{p.stderr.strip()}")
    trees = [d for d in out.iterdir() if d.is_dir()]
    if len(trees) != 1:
        raise VerifyError(f"{out}: torchport migrate left {len(trees)} trees, expected one")
    return trees[0]


def resolve_entry(opts: Options, migrated: Path) -> tuple[Path, Path, list[str]]:
    """The two project roots and the entry ([script] or ["-m", module]) common to both."""
    orig = opts.original
    if not orig.exists():
        raise VerifyError(f"{orig}: no such file or directory")
    if not migrated.exists():
        raise VerifyError(f"{migrated}: no such file or directory")
    if orig.is_file():
        if opts.entry or opts.module:
            raise VerifyError(f"{orig}: --entry and -m are for project directories, not a single script")
        root_a = orig.parent
        if migrated.is_file():
            root_b, name = migrated.parent, migrated.name
            if name != orig.name:
                raise VerifyError(
                    f"{migrated}: a single script is compared with a script of the same name ({orig.name})"
                )
        else:
            root_b, name = migrated, orig.name
        entry = [name]
    else:
        if migrated.is_file():
            raise VerifyError(f"{migrated}: ORIGINAL is a directory, so MIGRATED must be one too")
        root_a, root_b = orig, migrated
        if opts.module:
            entry = ["-m", opts.module]
        else:
            name = opts.entry or ("train.py" if (orig / "train.py").is_file() else None)
            if name is None:
                raise VerifyError(f"{orig}: a directory needs --entry SCRIPT or -m MODULE (no train.py)")
            entry = [name]
    if entry[0] == "-m":
        rel = Path(*entry[1].split("."))
        cands = [rel.with_suffix(".py"), rel / "__main__.py"]
        for root, label in ((root_a, "ORIGINAL"), (root_b, "MIGRATED")):
            if not any((root / c).is_file() for c in cands):
                raise VerifyError(f"{root}: module {entry[1]} is missing in {label}")
    else:
        for root, label in ((root_a, "ORIGINAL"), (root_b, "MIGRATED")):
            if not (root / entry[0]).is_file():
                raise VerifyError(f"{root / entry[0]}: the entry script is missing in {label}")
    return root_a, root_b, entry


def check_same_project(root_a: Path, root_b: Path, original: Path) -> Optional[dict[str, Any]]:
    """Refuse two unrelated trees; return migrate's report.json of MIGRATED, if it has one."""
    report_path = root_b / "torchport-report" / "report.json"
    report: Optional[dict[str, Any]] = None
    if report_path.is_file():
        try:
            report = report_json.load(report_path)
        except (OSError, ValueError) as e:
            raise VerifyError(f"{report_path}: unreadable migrate report: {e}") from None
        src = report.get("input") if isinstance(report, dict) else None
        if src and Path(src).resolve() != original.resolve() and Path(src).name != original.name:
            raise VerifyError(
                f"{root_b}: different projects: MIGRATED was migrated from {src}, not from {original}"
            )
    return report


_DDP_SELF = re.compile(r"\b(mp\.spawn|multiprocessing\.spawn|start_processes|spawn\()")


def wants_torchrun(root: Path, entry: list[str]) -> bool:
    """A script that joins a process group but starts no processes itself is meant for torchrun."""
    path = root / (entry[0] if entry[0] != "-m" else Path(*entry[1].split(".")).with_suffix(".py"))
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "init_process_group" in text and not _DDP_SELF.search(text)


_BIG = 16 << 20
_SKIP_DIRS = {".git", "__pycache__", "torchport-report", ".venv", "node_modules"}


def stage_tree(src: Path, dst: Path, single_script: bool) -> Path:
    """A working copy of a project for one run, so that what the script writes (checkpoints,
    logs) never lands in the user's tree. Files up to 16 MiB are copied, bigger ones (data sets,
    checkpoints to read) are symlinked. For a single script only its directory's Python files are
    copied; everything else there is symlinked."""
    dst.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        if entry.name in _SKIP_DIRS:
            continue
        target = dst / entry.name
        if entry.is_dir():
            if single_script:
                target.symlink_to(entry.resolve(), target_is_directory=True)
            else:
                stage_tree(entry, target, False)
        elif entry.is_file():
            small = entry.stat().st_size <= _BIG
            if (entry.suffix == ".py" or (small and not single_script)) and small:
                shutil.copy2(entry, target)
            else:
                target.symlink_to(entry.resolve())
    return dst


# ---- running one side ----------------------------------------------------------------------------


def run_side(side: SideRun, opts: Options, out: Path, target: str, ranks: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cfg = {
        "out": str(out / "trace"),
        "steps": opts.steps,
        "seed": opts.seed,
        "level": opts.level,
        "mode": side.mode,
        "target": target,
        "entry": [*side.entry, *opts.args],
    }
    cfg_path = out / "config.json"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    child = ["-m", "torchport.verify.child", str(cfg_path)]
    if ranks > 1:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "1",
            "--nproc-per-node",
            str(ranks),
            "--master-port",
            str(_free_port()),
            *child,
        ]
    else:
        cmd = [sys.executable, *child]
    side.command = cmd
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("TORCHPORT_") and k != "TORCHPORT_CORE"]:
        del env[k]  # the .pth hook must not redirect a native run
    env.update(
        PYTHONHASHSEED=str(opts.seed),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        CUBLAS_WORKSPACE_CONFIG=":4096:8",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
        PYTHONPATH=os.pathsep.join(
            [str(Path(__file__).resolve().parents[2]), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    )
    t0 = time.monotonic()
    with open(out / "stdout.txt", "w+b") as fo, open(out / "stderr.txt", "w+b") as fe:
        p = subprocess.Popen(cmd, cwd=side.root, env=env, stdout=fo, stderr=fe, start_new_session=True)
        try:
            side.exit_code = p.wait(timeout=opts.timeout)
        except subprocess.TimeoutExpired:
            side.timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            side.exit_code = p.wait()
        side.seconds = time.monotonic() - t0
        fo.seek(0)
        fe.seek(0)
        side.stdout = fo.read().decode("utf-8", "replace")
        side.stderr = fe.read().decode("utf-8", "replace")
    side.procs = load_procs(out / "trace")
    side.main = pick_main(side.procs)


def load_procs(trace: Path) -> list[Proc]:
    procs = []
    if not trace.is_dir():
        return procs
    for steps_file in sorted(trace.glob("*.steps.jsonl")):
        pid = steps_file.name.split(".")[0]
        summary_file = trace / f"{pid}.json"
        try:
            summary = json.loads(summary_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = {"pid": int(pid), "status": "killed before it finished", "rank": None, "notes": []}
        steps = [json.loads(line) for line in steps_file.read_text(encoding="utf-8").splitlines() if line]
        dump = trace / f"{pid}.dump"
        procs.append(Proc(summary, steps, dump if (dump / "manifest.json").is_file() else None))
    return procs


def pick_main(procs: list[Proc]) -> Optional[Proc]:
    """Rank 0 of a distributed run, else the process that trained (the others only launched)."""
    ranked = [p for p in procs if p.summary.get("rank") == 0 and (p.steps or p.summary.get("backward_calls"))]
    if ranked:
        return ranked[0]
    trained = [p for p in procs if p.steps or p.summary.get("backward_calls")]
    if trained:
        return max(trained, key=lambda p: len(p.steps))
    return procs[0] if procs else None


# ---- the whole command ---------------------------------------------------------------------------


def rehearse_available() -> bool:
    """`torchport rehearse` is part of this install."""
    import importlib.util

    return importlib.util.find_spec("torchport.rehearse.cli") is not None


def verify(opts: Options) -> dict[str, Any]:
    """Run both sides and return the report (see verdict.build_report)."""
    from torchport.verify.verdict import build_report, could_not_compare

    if opts.target not in TARGETS:
        raise VerifyError(f"unknown target {opts.target!r}; choose one of: {', '.join(TARGETS)}")
    if opts.steps < 1:
        raise VerifyError("--steps must be at least 1")
    opts.original = opts.original.absolute()
    opts.migrated = opts.migrated.absolute() if opts.migrated else None
    opts.workdir = opts.workdir.absolute() if opts.workdir else None
    own_work = opts.workdir is None
    work = Path(tempfile.mkdtemp(prefix="torchport-verify-")) if own_work else Path(opts.workdir or ".")
    work.mkdir(parents=True, exist_ok=True)
    try:
        if not opts.original.exists():
            raise VerifyError(f"{opts.original}: no such file or directory")
        migrated = opts.migrated
        if migrated is None:
            migrated = migrate_into(opts.original, opts.target, work)
        root_a, root_b, entry = resolve_entry(opts, migrated)
        report = check_same_project(root_a, root_b, opts.original)
        if opts.target in REHEARSED and not rehearse_available():
            return could_not_compare(
                opts,
                f"torchport rehearse is not available: the {opts.target} tree can only run under "
                f"`torchport rehearse --target {opts.target}` on a machine without the device",
            )
        ranks = opts.ranks or (2 if wants_torchrun(root_a, entry) else 1)
        mode_b = "rehearse" if opts.target in REHEARSED else "native"
        single = opts.original.is_file()
        a = SideRun("original", stage_tree(root_a, work / "trees" / "original", single), entry, "run", root_a)
        b = SideRun(
            "migrated", stage_tree(root_b, work / "trees" / "migrated", single), entry, mode_b, root_b
        )
        run_side(a, opts, work / "original", "cpu", ranks)
        if a.exit_code == 0 and not a.timed_out:  # else the original's failure is the answer
            run_side(b, opts, work / "migrated-run", opts.target, ranks)
        return build_report(opts, a, b, report, ranks, migrated)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
