#!/usr/bin/env python3
"""Record which torchvision / torchaudio / torchtext release goes with which torch release.

When migrate raises a project's torch floor (the migrated code needs torch >= X), a companion
package pinned to an older release (`torchvision==0.20.0` needs torch 2.5) would make the
requirements uninstallable. The rule (TP902, src/torchport/rules/other_files.cc) moves such a pin
to the companion release of the new floor; this table is what it reads.

The facts come from the companions' own wheels on PyPI: each release's METADATA names the torch
it was built against (`Requires-Dist: torch==2.13.0`). For each release of each companion from
the first one paired with torch 2.0, this downloads one Linux x86-64 CPython 3.11 wheel (or the
pure-Python wheel), reads that line, and writes data/catalogue/companions/torch.json with the wheel's name
and sha256. About 40 wheels, 250 MB, a few minutes; run by hand when a new torch is out:

    tools/gen_torch_companions.py            # write data/catalogue/companions/torch.json
    tools/gen_torch_companions.py --check    # exit 1 when the file differs from PyPI
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "catalogue" / "companions" / "torch.json"
COMPANIONS = ["torchvision", "torchaudio", "torchtext"]
FIRST_TORCH = (2, 0)


def simple(name: str) -> dict[str, Any]:
    req = urllib.request.Request(
        f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        data: dict[str, Any] = json.load(r)
    return data


def release_of(version: str) -> tuple[int, ...] | None:
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        return None  # pre-releases and local versions are never pinned to
    return tuple(int(p) for p in version.split("."))


def wheel_for(files: list[dict[str, Any]], name: str, version: str) -> dict[str, Any] | None:
    prefix = f"{name}-{version}-"

    def usable(fn: str) -> bool:
        linux = "cp311-cp311-manylinux" in fn and fn.endswith("x86_64.whl")
        return linux or fn.endswith("-py3-none-any.whl")

    ok = [
        f for f in files if f["filename"].startswith(prefix) and not f.get("yanked") and usable(f["filename"])
    ]
    return sorted(ok, key=lambda f: f["filename"])[0] if ok else None


def torch_of(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=300) as r:
        blob = r.read()
    digest = hashlib.sha256(blob).hexdigest()
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    m = re.search(r"^Requires-Dist: torch\s*\(?==\s*([0-9.]+)", text, re.M)
    return (m.group(1) if m else ""), digest


def build() -> dict[str, Any]:
    out: dict[str, Any] = {
        "about": "The release of each torch companion package built against each torch release, "
        "read from the companion's wheel METADATA on PyPI (Requires-Dist: torch==X) by "
        "tools/gen_torch_companions.py. TP902 moves a companion pinned below the raised torch "
        "floor to the companion of that floor.",
        "companions": {},
    }
    for name in COMPANIONS:
        index = simple(name)
        rows = []
        for version in index["versions"]:
            rel = release_of(version)
            if rel is None:
                continue
            w = wheel_for(index["files"], name, version)
            if not w:
                continue
            torch, digest = torch_of(w["url"])
            if not torch or tuple(int(p) for p in torch.split(".")[:2]) < FIRST_TORCH:
                continue
            rows.append({"version": version, "torch": torch, "wheel": w["filename"], "sha256": digest})
            print(f"{name} {version}: torch {torch}", file=sys.stderr)
        rows.sort(key=lambda r: release_of(r["version"]) or ())
        out["companions"][name] = rows
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the recorded file")
    args = ap.parse_args()
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} differs from PyPI: run tools/gen_torch_companions.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
