"""Lexer throughput: torchport's C++ tokenizer against Python's `tokenize` module, in one run.

Corpus: the standard library plus the installed torch package's .py files (by default). Both
sides are timed in process CPU time over the same decodable files: ours by
`torchport dev tokens --summary` (tokenize() alone, decoding excluded), Python's by
`tokenize.generate_tokens` over the already-decoded text.

    python bench/lexer_bench.py [PATH ...]
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
import time
import tokenize
from pathlib import Path
from typing import List, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from torchport._core import core_binary  # noqa: E402


def corpus(paths: Sequence[str]) -> List[str]:
    files: List[str] = []
    for root in paths:
        for dirpath, dirnames, names in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            files.extend(os.path.join(dirpath, n) for n in names if n.endswith(".py"))
    files.sort()
    return files


def python_tokenize(files: Sequence[str]) -> Tuple[List[str], int, float]:
    """Files Python's tokenize accepts, their UTF-8 size, and the CPU seconds it took."""
    texts: List[Tuple[str, str]] = []
    for f in files:
        try:
            with tokenize.open(f) as fh:
                texts.append((f, fh.read()))
        except (SyntaxError, UnicodeDecodeError, LookupError):
            continue
    kept: List[str] = []
    size = 0
    spent = 0.0
    for f, text in texts:
        t0 = time.process_time()
        try:
            for _ in tokenize.generate_tokens(io.StringIO(text).readline):
                pass
        except (tokenize.TokenError, SyntaxError, IndentationError):
            continue
        finally:
            spent += time.process_time() - t0
        kept.append(f)
        size += len(text.encode("utf-8", "surrogatepass"))
    return kept, size, spent


def ours(binary: str, files: Sequence[str]) -> Tuple[int, float]:
    total_bytes = 0
    seconds = 0.0
    chunk = 2000
    for i in range(0, len(files), chunk):
        out = subprocess.run(
            [binary, "dev", "tokens", "--summary", *files[i : i + chunk]],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        fields = dict(zip(out[::2], out[1::2]))
        total_bytes += int(fields["bytes"])
        seconds += float(fields["lex_cpu_seconds"])
    return total_bytes, seconds


def main() -> int:
    paths = sys.argv[1:]
    if not paths:
        paths = [sysconfig.get_paths()["stdlib"]]
        try:
            import torch

            paths.append(str(Path(torch.__file__).parent))
        except ImportError:
            pass
    files = corpus(paths)
    kept, py_bytes, py_s = python_tokenize(files)
    our_bytes, our_s = ours(core_binary(), kept)
    py_rate = py_bytes / 1e6 / py_s
    our_rate = our_bytes / 1e6 / our_s
    print(f"corpus: {len(kept)} files ({py_bytes / 1e6:.1f} MB) under {', '.join(paths)}")
    print(f"python tokenize ({sys.version.split()[0]}): {py_s:8.3f} s CPU  {py_rate:8.1f} MB/s")
    print(f"torchport lexer:                {our_s:8.3f} s CPU  {our_rate:8.1f} MB/s")
    print(f"ratio: {our_rate / py_rate:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
