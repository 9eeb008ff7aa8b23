"""Atheris target for the runtime's device-string translation (`torchport run`: "cuda:N" -> the target's).

Invariant, for every string and for an indexed target (xpu) and a one-device target (cpu):
`DeviceMapper.map(s)` never raises; a string that is not a CUDA device string comes back as the
very same object; and the result is a device torch accepts exactly when torch accepts `s`, with
the same index on an indexed target. A mapping that turns an invalid device string into a valid
one (or the reverse) changes what the script does, silently.
Run: python fuzz/python/device_string_fuzz.py -max_total_time=60 [corpus dirs]
"""

from __future__ import annotations

import sys
from typing import Optional

import atheris
import torch

with atheris.instrument_imports(include=["torchport"]):
    from torchport.runtime._devices import DeviceMapper
    from torchport.targets import get_target

_MAPPERS = [DeviceMapper(get_target("xpu")), DeviceMapper(get_target("cpu"))]


def _device(s: str) -> Optional[torch.device]:
    try:
        return torch.device(s)
    except (RuntimeError, ValueError, TypeError):
        return None


def check(data: bytes) -> None:
    s = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(64)
    before = _device(s)
    for mapper in _MAPPERS:
        out = mapper.map(s)
        if before is None or before.type != "cuda":
            if before is None and out is not s:
                after = _device(out)
                assert after is None, f"{s!r} is no device, but became {out!r} on {mapper.dst}"
            if before is not None:
                assert out is s, f"{s!r} ({before.type}) changed to {out!r}"
            continue
        after = _device(out)
        assert after is not None, f"{s!r} is a CUDA device, but {out!r} is none on {mapper.dst}"
        assert after.type == mapper.dst, f"{s!r} -> {out!r}"
        if mapper.indexed:
            assert after.index == before.index, f"{s!r} -> {out!r}: index changed"


def main() -> None:
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
