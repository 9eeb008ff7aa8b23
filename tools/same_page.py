#!/usr/bin/env python3
"""Checks that two report pages show the same thing: index.html's data and every files/N.js,
decoded as the page script decodes them.

    python tools/same_page.py OLD/torchport-report NEW/torchport-report [--ignore-key output]

The index's rows and files are compared with their interned strings looked up (so two writers
that intern in another order still agree), every other key of the data as it is; each chunk's
rows are compared after `chunk_lines` numbers them, as the page does. It prints the counts and
the first differences, and exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from torchport.pages.migration import chunk_lines

DATA = re.compile(r'<script id="tp-data" type="application/json">(.*?)</script>', re.S)


def page_data(report_dir: Path) -> dict[str, Any]:
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    m = DATA.search(page)
    if m is None:
        raise SystemExit(f"{report_dir}/index.html: no data block")
    data: dict[str, Any] = json.loads(m[1])
    s = data.pop("strings")
    data["rows"] = [[r[0], r[1], r[2], s[r[3]], s[r[4]], s[r[5]], s[r[6]], *r[7:]] for r in data["rows"]]
    data["files"] = [[f[0], s[f[1]], s[f[2]], *f[3:]] for f in data["files"]]
    data["template"] = DATA.sub("", page)
    return data


def chunk(report_dir: Path, n: int) -> Any:
    text = (report_dir / "files" / f"{n}.js").read_text(encoding="utf-8")
    head = f"tpChunk({n},"
    if not text.startswith(head) or not text.endswith(");\n"):
        return ("malformed", text[:80])
    d = json.loads(text[len(head) : -3])
    return d["file"], d["diff"], chunk_lines(d["rows"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--ignore-key", action="append", default=[], help="a data key not compared")
    args = ap.parse_args()
    old, new = page_data(args.old), page_data(args.new)
    bad = 0
    for key in sorted(set(old) | set(new)):
        if key in args.ignore_key:
            continue
        if old.get(key) != new.get(key):
            bad += 1
            a, b = old.get(key), new.get(key)
            if isinstance(a, list) and isinstance(b, list):
                diffs = [i for i in range(max(len(a), len(b))) if (a[i : i + 1] != b[i : i + 1])]
                print(f"data[{key!r}]: {len(a)} vs {len(b)} entries, {len(diffs)} differ; first:")
                for i in diffs[:3]:
                    print(f"  [{i}] {a[i] if i < len(a) else None!r}\n   vs {b[i] if i < len(b) else None!r}")
            else:
                print(f"data[{key!r}] differs: {str(a)[:200]!r} vs {str(b)[:200]!r}")
    names = {p.name for p in (args.old / "files").iterdir()} | {
        p.name for p in (args.new / "files").iterdir()
    }
    chunk_diffs = []
    for name in sorted(names, key=lambda n: int(n.split(".")[0])):
        n = int(name.split(".")[0])
        if not (args.old / "files" / name).is_file() or not (args.new / "files" / name).is_file():
            chunk_diffs.append((n, "only in one"))
            continue
        a, b = chunk(args.old, n), chunk(args.new, n)
        if a != b:
            chunk_diffs.append((n, a[0]))
    print(
        f"files: {len(old['files'])} / {len(new['files'])}, "
        f"findings: {len(old['rows'])} / {len(new['rows'])}, "
        f"chunks: {len(names)}, chunks that differ: {len(chunk_diffs)}"
    )
    for n, what in chunk_diffs[:20]:
        print(f"  files/{n}.js: {what}")
    return 1 if bad or chunk_diffs else 0


if __name__ == "__main__":
    sys.exit(main())
