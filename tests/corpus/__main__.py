"""`python -m tests.corpus`: the corpus suite (docs/fidelity.md).

    python -m tests.corpus                 # static suite, compared with docs/fidelity.json
    python -m tests.corpus --update        # ... and rewrite docs/fidelity.json and the table
    python -m tests.corpus --entry         # the entry-script harnesses too
    python -m tests.corpus -p karpathy__makemore -t cpu -v   # one cell, every problem listed
    python -m tests.corpus --entry-only --vendor-torch-npu build/vendor-torch-npu [--update]
                                           # the npu migration on the vendor's torch_npu, losses
                                           # against the migrated cpu run (docs/fidelity.md)
    python -m tests.corpus --notebooks     # ../shared/notebooks (Jupyter notebooks): every
                                           # ratcheted column but unfixed must be 0

Exit status: 0 when no cell is worse than the committed table, 1 when one is, 2 when the corpus
is missing.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import static


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.corpus", description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="write docs/fidelity.json and docs/fidelity.md")
    ap.add_argument("--entry", action="store_true", help="also run the entry-script harnesses")
    ap.add_argument("--entry-only", action="store_true", help="only the entry-script harnesses")
    ap.add_argument("-p", "--project", action="append", help="only this project (repeatable)")
    ap.add_argument(
        "--vendor-torch-npu",
        metavar="DIR",
        help="with --entry-only: run each entry harness's npu migration on the vendor's torch_npu in DIR "
        "(torchport rehearse --vendor-torch-npu DIR) and the migrated cpu run, and compare their losses; "
        "--update writes docs/fidelity-entry-vendor-npu.json and its table",
    )
    ap.add_argument(
        "--notebooks",
        action="store_true",
        help="only ../shared/notebooks, where every ratcheted column but unfixed must be 0",
    )
    ap.add_argument("-t", "--target", action="append", choices=static.TARGETS, help="only this target")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="cells run at once (default 2)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every problem of every cell")
    args = ap.parse_args(argv)

    if args.notebooks:
        cells = static.run_notebooks(tuple(args.target) if args.target else static.TARGETS, args.jobs)
        if not cells:
            print("../shared/notebooks not found: set TORCHPORT_NOTEBOOKS", file=sys.stderr)
            return 2
        print(static.markdown_table(cells))
        # unfixed is the catalogue's (what it has no replacement for), as for .py files.
        bad = [c for c in cells if any(getattr(c, k) for k in static.RATCHETED if k != "unfixed")]
        for c in cells if args.verbose else bad:
            for p in c.problems:
                print(f"{c.project} {c.target} {p}")
        return 1 if bad else 0
    corpus = static.corpus_dir()
    if corpus is None:
        print("corpus not found: set TORCHPORT_CORPUS or put it at ../shared/corpus", file=sys.stderr)
        return 2
    unknown = sorted(set(args.project or []) - {p.name for p in static.projects(corpus)})
    if unknown:
        print(f"not in {corpus}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.vendor_torch_npu:
        if not args.entry_only:
            print("--vendor-torch-npu runs the entry harnesses only: add --entry-only", file=sys.stderr)
            return 2
        from pathlib import Path

        from . import entry

        return entry.main_vendor(corpus, Path(args.vendor_torch_npu).resolve(), args.update, args.project)
    status = 0
    if not args.entry_only:
        status = run_static(args, corpus)
    if args.entry or args.entry_only:
        from . import entry

        status = max(status, entry.main(corpus, update=args.update, only=args.project))
    return status


def run_static(args: argparse.Namespace, corpus: static.Path) -> int:
    targets = tuple(args.target) if args.target else static.TARGETS
    cells = static.run_all(corpus, targets, args.project, args.jobs)
    print(static.markdown_table(cells))
    for c in cells:
        if args.verbose:
            for p in c.problems:
                print(f"{c.project} {c.target} {p}")
    partial = bool(args.project or args.target)
    if args.update:
        if partial:
            print("--update needs the whole corpus x every target (no -p / -t)", file=sys.stderr)
            return 2
        static.FIDELITY_JSON.write_text(json.dumps(static.to_json(cells, corpus), indent=1) + "\n")
        md = static.FIDELITY_MD.read_text()
        static.FIDELITY_MD.write_text(
            static.replace_block(md, static.BEGIN, static.END, static.markdown_table(cells))
        )
        print(f"wrote {static.FIDELITY_JSON} and the table in {static.FIDELITY_MD}")
        return 0
    committed = json.loads(static.FIDELITY_JSON.read_text()) if static.FIDELITY_JSON.is_file() else {}
    worse, better = static.compare(committed, cells)
    for w in worse:
        print("WORSE  " + w)
    for b in better:
        print("better " + b)
    if better and not worse:
        print("Cells improved: run `python -m tests.corpus --update` and commit docs/fidelity.*")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
