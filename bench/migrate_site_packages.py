"""Scale run: migrate every installed package (a site-packages tree) for every target.

    python bench/migrate_site_packages.py [--core PATH] [--site DIR] [--jobs N] [--work DIR]

For each target: migrate the whole tree, then migrate the output again. Prints, per target, the
Python files, the files changed, the failures by kind (a rewritten file that does not parse, an
internal error, a file that cannot be decoded or parsed as given), whether the process crashed
(a signal or a missing report), the files a second migrate still changes (idempotence) and the
wall time of the first run. The output trees are deleted after each target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from torchport import report_json  # noqa: E402

TARGETS = ("npu", "mlu", "musa", "xpu", "mps", "hpu", "cpu", "accelerator")


def migrate(core: str, src: Path, target: str, out: Path, jobs: int) -> tuple[int, dict | None, float]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [core, "migrate", "-t", target, "-j", str(jobs), "-q", "-f", "-o", str(out), str(src)],
        capture_output=True,
        text=True,
        errors="replace",
    )
    dt = time.perf_counter() - t0
    result = out / f"{src.name}_{target}"
    rep = result / "torchport-report" / "report.json"
    data = report_json.load(rep) if rep.exists() else None
    return p.returncode, data, dt


def kind(reason: str) -> str:
    if "does not parse" in reason:
        return "rewritten-does-not-parse"
    if "internal error" in reason:
        return "internal-error"
    if "cannot decode" in reason:
        return "input-not-decodable"
    return "input-syntax-error"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--core", default=os.environ.get("TORCHPORT_CORE", "build/dev/torchport"))
    ap.add_argument("--site", default=sysconfig.get_paths()["purelib"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", default=tempfile.gettempdir())
    ap.add_argument("-t", "--target", action="append", choices=TARGETS)
    args = ap.parse_args()
    site = Path(args.site)
    bad = 0
    print("| target | python files | changed | failures by kind | crash | changed again | seconds |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for target in args.target or TARGETS:
        work = Path(tempfile.mkdtemp(prefix=f"tp_scale_{target}_", dir=args.work))
        try:
            rc, rep, dt = migrate(args.core, site, target, work / "first", args.jobs)
            crash = rep is None or rc < 0
            files = [f for f in (rep or {}).get("files", []) if f.get("python")]
            changed = sum(1 for f in files if f.get("changed"))
            fails = Counter(
                kind(f.get("reason", "")) for f in files if str(f.get("outcome", "")).lower() == "failure"
            )
            again = -1
            if not crash:
                out = work / "first" / f"{site.name}_{target}"
                shutil.rmtree(out / "torchport-report")
                rc2, rep2, _ = migrate(args.core, out, target, work / "second", args.jobs)
                crash = rep2 is None or rc2 < 0
                again = sum(1 for f in (rep2 or {}).get("files", []) if f.get("changed"))
            fail_text = ", ".join(f"{k} {v}" for k, v in sorted(fails.items())) or "none"
            print(
                f"| {target} | {len(files)} | {changed} | {fail_text} | {int(crash)} | {again} | {dt:.1f} |",
                flush=True,
            )
            bad += int(crash) + fails.get("rewritten-does-not-parse", 0) + fails.get("internal-error", 0)
            bad += max(again, 0)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
