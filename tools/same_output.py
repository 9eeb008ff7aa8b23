#!/usr/bin/env python3
"""Checks that two builds of the core produce the same outputs, byte for byte.

A refactoring of the driver or the rules must not change what `migrate` and `analyze` write.
This runs one core binary over a set of projects x targets x modes and records every output;
a second recording (with another core) is then compared with the first:

    tools/same_output.py record --core OLD/torchport --out /tmp/old
    tools/same_output.py record --core NEW/torchport --out /tmp/new
    tools/same_output.py compare /tmp/old /tmp/new

Inputs: every project folder of ../shared/corpus (or --corpus DIR; repeatable) and of examples/,
and the single-file inputs listed in SINGLE_FILES. Targets: the eight of data/targets.json. Modes:

    migrate    migrate INPUT -t T -o OUT                     (the tree, its reports, stdout)
    analyze    analyze INPUT -t T -o REPORTS                 (the reports, stdout)
    diff       migrate INPUT -t T -o OUT --diff -q           (the tree and the diff on stdout)
    inplace    migrate COPY -t T --inplace -q                (the rewritten copy, its backup)
    distributed migrate INPUT -t T -o OUT --distributed --main ENTRY   (where ENTRY is known)
    nounsafe   migrate INPUT -t T -o OUT -q --no-unsafe-fixes
    keepflags  migrate INPUT -t T -o OUT -q --keep-device-flags
    specify    migrate INPUT -t T -o OUT -q -s               (a refusal on most targets)
    select     migrate INPUT -t T -o OUT -q --ignore ... --per-file-ignores ... --exclude ...
    rules      migrate INPUT -t T -o OUT -q -r tests/fixtures/rules/ascend_func_name/rules.json

Every run gets the same absolute work paths (WORK/<case>/...), whichever core runs, so that the
paths the reports print need no rewriting. For each case the exit code, stdout, stderr and every
file of the output trees (path, kind, executable bit, symlink target, contents) are recorded.

What is normalised, and nothing else:
  - the timestamp that starts each line of torchport.log ("YYYY-MM-DD HH:MM:SS ") becomes
    "<time> " (the log is the only output with a clock in it);
  - the process id in the names of scratch files and directories (".torchport-tmp-<pid>",
    ".torchport-old-<pid>"), should one appear in a message, becomes "<pid>".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu", "accelerator"]
# --distributed --main: the training script of each project (relative to the project).
ENTRIES = {
    "OpenNMT__OpenNMT-py": "train.py",
    "facebookresearch__deit": "main.py",
    "facebookresearch__dino": "main_dino.py",
    "jik876__hifi-gan": "train.py",
    "karpathy__llm.c": "train_gpt2.py",
    "karpathy__makemore": "makemore.py",
    "kuangliu__pytorch-cifar": "main.py",
    "pytorch__torchtitan": "torchtitan/train.py",
    "accuracy": "train.py",
    "cuda_project": "train.py",
    "single_device": "train.py",
}
# Inputs that are one file (the driver's single-file paths).
SINGLE_FILES = [
    "examples/single_device/train.py",
    "examples/cuda_project/train.py",
]
MODES = [
    "migrate",
    "analyze",
    "diff",
    "inplace",
    "distributed",
    "nounsafe",
    "keepflags",
    "specify",
    "select",
    "rules",
]
# select: the user's rule selection, applied to both passes' findings.
SELECT = [
    "--ignore",
    "TP310",
    "--ignore",
    "TP5",
    "--per-file-ignores",
    "pkg/*.py:TP100",
    "--per-file-ignores",
    "models/*.py:TP301",
    "--exclude",
    "*/utils.py",
]
# rules: a custom rules file (Ascend's format) on top of the catalogue.
RULES = ROOT / "tests" / "fixtures" / "rules" / "ascend_func_name" / "rules.json"

LOG_TIME = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", re.M)
PID = re.compile(rb"\.torchport-(tmp|old)-\d+")


def normalise(data: bytes, is_log: bool) -> bytes:
    if is_log:
        data = LOG_TIME.sub(b"<time> ", data)
    return PID.sub(rb".torchport-\1-<pid>", data)


def inputs(corpora: list[str]) -> list[tuple[str, Path]]:
    out = []
    for corpus in map(Path, corpora):
        if corpus.is_dir():
            out += [(p.name, p) for p in sorted(corpus.iterdir()) if p.is_dir()]
    out += [(p.name, p) for p in sorted((ROOT / "examples").iterdir()) if p.is_dir()]
    out += [(f.replace("/", "_"), ROOT / f) for f in SINGLE_FILES]
    return out


def command(
    core: str, mode: str, name: str, src: Path, target: str, work: Path
) -> tuple[list[str], list[Path]] | None:
    """The argv of one case and the directories whose contents it records (or None: n/a)."""
    out = work / "out"
    if mode == "migrate":
        return [core, "migrate", str(src), "-t", target, "-o", str(out)], [out]
    if mode == "analyze":
        return [core, "analyze", str(src), "-t", target, "-o", str(work / "reports")], [work / "reports"]
    if mode == "diff":
        return [core, "migrate", str(src), "-t", target, "-o", str(out), "--diff", "-q"], [out]
    if mode == "inplace":
        copy = work / "in" / src.name
        copy.parent.mkdir(parents=True)
        if src.is_dir():
            shutil.copytree(src, copy, symlinks=True)
        else:
            shutil.copy2(src, copy)
        return [core, "migrate", str(copy), "-t", target, "--inplace", "-q"], [work / "in"]
    if mode == "distributed":
        if src.is_dir():
            entry = ENTRIES.get(name) or next(
                (e for e in ("train.py", "input.py") if (src / e).is_file()), None
            )
            if not entry:
                return None
            argv = [core, "migrate", str(src), "-t", target, "-o", str(out), "--distributed"]
            return argv + ["--main", entry], [out]
        return [core, "migrate", str(src), "-t", target, "-o", str(out), "--distributed"], [out]
    flags = {
        "nounsafe": ["--no-unsafe-fixes"],
        "keepflags": ["--keep-device-flags"],
        "specify": ["-s"],
        "select": SELECT,
        "rules": ["-r", str(RULES)],
    }
    return [core, "migrate", str(src), "-t", target, "-o", str(out), "-q", *flags[mode]], [out]


def manifest(dirs: list[Path], work: Path) -> dict[str, str]:
    """path -> "kind mode digest" for every entry under `dirs` (paths relative to `work`)."""
    out = {}
    for d in dirs:
        if not d.exists():
            continue
        for base, subdirs, files in os.walk(d):
            subdirs.sort()
            for n in sorted(subdirs):
                p = Path(base) / n
                if p.is_symlink():
                    out[str(p.relative_to(work))] = "link " + os.readlink(p)
                else:
                    out[str(p.relative_to(work))] = "dir"
            for n in sorted(files):
                p = Path(base) / n
                rel = str(p.relative_to(work))
                if p.is_symlink():
                    out[rel] = "link " + os.readlink(p)
                    continue
                data = normalise(p.read_bytes(), n == "torchport.log")
                x = "x" if os.access(p, os.X_OK) else "-"
                out[rel] = f"file {x} {hashlib.sha256(data).hexdigest()}"
    return out


def record(args: argparse.Namespace) -> int:
    core = str(Path(args.core).resolve())
    dest = Path(args.out)
    dest.mkdir(parents=True, exist_ok=True)
    work_root = Path(args.work)
    n = 0
    for name, src in inputs(args.corpus or [str(ROOT.parent / "shared" / "corpus")]):
        if args.only and name not in args.only:
            continue
        for target in TARGETS:
            for mode in args.modes or MODES:
                case = f"{name}.{target}.{mode}"
                work = work_root / case
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir(parents=True)
                cmd = command(core, mode, name, src, target, work)
                if cmd is None:
                    shutil.rmtree(work)
                    continue
                argv, dirs = cmd
                p = subprocess.run(argv, capture_output=True, cwd=work, env={**os.environ, "LC_ALL": "C"})
                rec = {
                    "argv": [a.replace(core, "<core>") for a in argv],
                    "exit": p.returncode,
                    "stdout": normalise(p.stdout, False).decode("utf-8", "replace"),
                    "stderr": normalise(p.stderr, False).decode("utf-8", "replace"),
                    "files": manifest(dirs, work),
                }
                (dest / (case + ".json")).write_text(json.dumps(rec, indent=1, sort_keys=True))
                if args.keep:
                    kept = dest / "trees" / case
                    shutil.rmtree(kept, ignore_errors=True)
                    shutil.copytree(work, kept, symlinks=True)
                shutil.rmtree(work, ignore_errors=True)
                n += 1
                if args.verbose:
                    print(case, p.returncode, flush=True)
    print(f"recorded {n} cases in {dest}")
    return 0


def compare(args: argparse.Namespace) -> int:
    a, b = Path(args.a), Path(args.b)
    names_a = {p.name for p in a.glob("*.json")}
    names_b = {p.name for p in b.glob("*.json")}
    same = differ = 0
    for n in sorted(names_a ^ names_b):
        print(f"only in {'A' if n in names_a else 'B'}: {n}")
    files = 0
    for n in sorted(names_a & names_b):
        ra, rb = json.loads((a / n).read_text()), json.loads((b / n).read_text())
        files += len(ra["files"])
        if ra == rb:
            same += 1
            continue
        differ += 1
        print(f"DIFFERENT: {n[:-5]}")
        for key in ("exit", "stdout", "stderr"):
            if ra[key] != rb[key]:
                print(f"  {key}: {str(ra[key])[:200]!r} != {str(rb[key])[:200]!r}")
        fa, fb = ra["files"], rb["files"]
        for path in sorted(set(fa) | set(fb)):
            if fa.get(path) != fb.get(path):
                print(f"  {path}: {fa.get(path)} != {fb.get(path)}")
    total = len(names_a | names_b)
    print(
        f"{total} cases ({files} files in A's trees): {same} identical, {differ} different, "
        f"{len(names_a ^ names_b)} missing on one side"
    )
    return 0 if same == total else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run one core over every case and record its outputs")
    r.add_argument("--core", required=True, help="the torchport core executable")
    r.add_argument("--out", required=True, help="where the records go")
    r.add_argument(
        "--corpus", action="append", help="a folder of projects (repeatable; default: ../shared/corpus)"
    )
    r.add_argument(
        "--work",
        default="/tmp/same-output-work",
        help="the work directory (the same for both recordings: paths in outputs)",
    )
    r.add_argument(
        "--mode",
        dest="modes",
        action="append",
        choices=MODES,
        help="only these modes (repeatable; default: all)",
    )
    r.add_argument("--only", action="append", help="only this input (repeatable)")
    r.add_argument("--keep", action="store_true", help="also keep every output tree")
    r.add_argument("-v", "--verbose", action="store_true")
    c = sub.add_parser("compare", help="compare two recordings")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    return record(args) if args.cmd == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
