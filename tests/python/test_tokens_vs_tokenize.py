"""`torchport dev tokens` against Python's own `tokenize`, on the syntax fixtures.

Token kinds and positions (line, byte column) must agree once both streams are put in the same
shape: our trivia (whitespace, continuations) and f-string middles are dropped, keywords are
NAME, every operator is OP, and on Python < 3.12 (whose tokenize returns an f-string as one
STRING) our FStringStart ... FStringEnd runs are merged into one STRING.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import token
import tokenize
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "syntax"
LINE = re.compile(r"^(\d+):(\d+)-(\d+):(\d+) (\w+) '(.*)'$")
Pos = Tuple[int, int]
Tok = Tuple[str, Pos, Optional[Pos]]

OURS_AS_IS = {
    "Name": "NAME",
    "Number": "NUMBER",
    "String": "STRING",
    "Comment": "COMMENT",
    "Newline": "NEWLINE",
    "NonLogicalNewline": "NL",
    "Indent": "INDENT",
    "Dedent": "DEDENT",
    "EndMarker": "ENDMARKER",
    "FStringStart": "FSTRING_START",
    "FStringEnd": "FSTRING_END",
}


def run_ours(path: Path) -> List[Tuple[str, Pos, Pos]]:
    p = subprocess.run(
        [sys.executable, "-m", "torchport", "dev", "tokens", str(path)],
        capture_output=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    out = []
    for line in p.stdout.decode("utf-8").splitlines():
        m = LINE.match(line)
        assert m, line
        sl, sc, el, ec, kind, _ = m.groups()
        out.append((kind, (int(sl), int(sc)), (int(el), int(ec))))
    return out


def normalise_ours(toks: List[Tuple[str, Pos, Pos]]) -> List[Tok]:
    res: List[Tok] = []
    merge_from: Optional[Pos] = None
    depth = 0
    for kind, start, end in toks:
        if kind in ("Whitespace", "Continuation", "FStringMiddle"):
            continue
        if sys.version_info < (3, 12):
            if kind == "FStringStart":
                if depth == 0:
                    merge_from = start
                depth += 1
                continue
            if depth:
                if kind == "FStringEnd":
                    depth -= 1
                    if depth == 0:
                        assert merge_from is not None
                        res.append(("STRING", merge_from, end))
                continue
        name = OURS_AS_IS.get(kind, "NAME" if kind.startswith("Kw") else "OP")
        if name == "INDENT":  # tokenize's INDENT covers the leading whitespace
            start = (start[0], 0)
        res.append((name, start, None if start == end or name == "INDENT" else end))
    return res


def run_tokenize(path: Path) -> Tuple[List[Tok], str]:
    with open(path, "rb") as fh:
        encoding, _ = tokenize.detect_encoding(fh.readline)
    with open(path, encoding=encoding, newline="") as fh:
        raw = fh.read()
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", raw)

    def byte_col(pos: Pos) -> Pos:
        line, col = pos
        if line - 1 < len(lines):
            return (line, len(lines[line - 1][:col].encode("utf-8")))
        return pos

    res: List[Tok] = []
    for t in tokenize.generate_tokens(io.StringIO(raw, newline="").readline):
        name = token.tok_name[t.type]
        if name == "FSTRING_MIDDLE" or (name == "NL" and t.string == ""):
            continue
        zero_width = name in ("INDENT", "DEDENT", "ENDMARKER") or t.string == ""
        res.append((name, byte_col(t.start), None if zero_width else byte_col(t.end)))
    if not raw.endswith(("\n", "\r")):
        # tokenize puts the final DEDENTs and ENDMARKER on a line after the last one; ours are at
        # the end of the text.
        res = [(n, (0, 0), None) if n in ("DEDENT", "ENDMARKER") else (n, s, e) for n, s, e in res]
    return res, raw


def fixtures() -> List[Path]:
    good = []
    for path in sorted(FIXTURES.glob("*.py")):
        if re.search(rb"\r(?!\n)", path.read_bytes()):
            continue  # Python's tokenize does not take a lone CR as a line break (ours does)
        try:
            with tokenize.open(str(path)) as fh:
                list(tokenize.generate_tokens(io.StringIO(fh.read()).readline))
        except (SyntaxError, UnicodeDecodeError, tokenize.TokenError, LookupError):
            continue  # the deliberately undecodable or invalid fixtures
        good.append(path)
    return good


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.name)
def test_tokens_agree_with_tokenize(path: Path) -> None:
    theirs, raw = run_tokenize(path)
    ours = normalise_ours(run_ours(path))
    if not raw.endswith(("\n", "\r")):
        ours = [(n, (0, 0), None) if n in ("DEDENT", "ENDMARKER") else (n, s, e) for n, s, e in ours]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"token {i}: ours {a} vs tokenize {b}"
    assert len(ours) == len(theirs)


def test_the_sampler_and_encodings_are_covered() -> None:
    names = {p.name for p in fixtures()}
    assert {"lexer_token_sampler.py", "gbk_comment.py", "crlf_endings.py"} <= names
