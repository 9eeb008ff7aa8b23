"""Which frames are the user's: the walk check-ops, `torchport run --shapes` and rehearse use to name the call
site of an operator (the first frame outside torch, torchport and the standard library).

It imports torch (to find torch's own files): import it only where torch is loaded.
"""

from __future__ import annotations

import os
import sysconfig
from types import CodeType, FrameType
from typing import Optional

import torch

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_TP_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_SITE = tuple(
    os.path.abspath(p) + os.sep
    for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    if p
)
USER, LIBRARY, INTERNAL = 0, 1, 2  # what kind() says of a code object
_code_kind: dict[CodeType, int] = {}


def kind(code: CodeType) -> int:
    """USER, LIBRARY (site-packages) or INTERNAL (torch, torchport, the standard library, `<string>`)."""
    k = _code_kind.get(code)
    if k is None:
        fn = code.co_filename
        path = os.path.abspath(fn) if not fn.startswith("<") else fn
        if fn.startswith("<") or path.startswith((_TORCH_DIR, _TP_DIR)):
            k = INTERNAL
        elif path.startswith(_SITE):
            k = LIBRARY
        elif path.startswith(_STDLIB):
            k = INTERNAL
        else:
            k = USER
        _code_kind[code] = k
    return k


def user_site(frame: Optional[FrameType]) -> Optional[tuple[str, int]]:
    """(file, line) of the first user frame: not torch, not torchport, not the standard library. A
    third-party library frame is used only when no user frame exists."""
    lib: Optional[tuple[str, int]] = None
    while frame is not None:
        k = kind(frame.f_code)
        if k == USER:
            return (frame.f_code.co_filename, frame.f_lineno)
        if k == LIBRARY and lib is None:
            lib = (frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return lib
