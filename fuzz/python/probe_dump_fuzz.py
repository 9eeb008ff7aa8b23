"""Atheris target for the probe dump reader (`torchport compare A B` reads dumps made elsewhere,
possibly cut short by a crash or edited by hand).

The input is split at its first NUL byte into the manifest (manifest.json) and the records file.
Invariant: `open_dump` and reading every record either succeed or raise DumpError, whose message
starts with the file it is about; nothing else (no KeyError, TypeError, ...).
Run: python fuzz/python/probe_dump_fuzz.py -max_total_time=60 [corpus dirs]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["torchport"]):
    from torchport.probe.dump import RECORDS, DumpError, open_dump

_DIR = Path(tempfile.mkdtemp(prefix="tp_dump_fuzz_"))


def check(data: bytes) -> None:
    manifest, _, records = data.partition(b"\0")
    dump = _DIR / "dump"
    shutil.rmtree(dump, ignore_errors=True)
    dump.mkdir()
    (dump / "manifest.json").write_bytes(manifest)
    (dump / RECORDS).write_bytes(records)
    try:
        d = open_dump(dump)
        for _ in d.records():
            pass
        _ = (d.level, d.count, d.wrappers, d.tensors_dropped)
    except DumpError as e:
        assert str(e).startswith(str(dump)), f"DumpError not about a file of the dump: {e}"


def main() -> None:
    atheris.Setup(sys.argv, lambda data: check(bytes(data)))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
