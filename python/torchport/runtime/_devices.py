"""Device-argument translation: "cuda", "cuda:N", torch.device("cuda", N), bare ints, map_location dicts."""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from torchport.targets import Target

_int = int
_str = str
# The class of every device object: `torch.device` itself may be a stand-in whose call returns one
# (torchport's while the redirect is on, _args.py `_install_device_type`; torch_npu's NPUDevice)
TORCH_DEVICE: type = type(torch.device("cpu"))


def _parse(s: str) -> Optional[torch.device]:
    """torch's own reading of a device string, or None where torch refuses it: only torch decides what is a
    device string ("cuda: 1", "cuda:01", an index past int64 or in non-ASCII digits are not), so a string
    torch refuses is never turned into one it accepts (found by fuzz/python/device_string_fuzz.py)."""
    try:
        return torch.device(s)
    except (RuntimeError, ValueError):
        return None


class DeviceMapper:
    """Maps CUDA device values to the target's. Returns the very same object when nothing changes, so callers
    test `new is not old` to know whether to log."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.dst = target.device_type
        self.indexed = target.has_device_index
        self._cache: dict[str, str] = {}
        self._dev_cache: dict[tuple[str, Optional[int]], torch.device] = {}
        # torch.device -> its target device, or an equal device when it is not a CUDA device (kept as is).
        # Reading `device.type` costs ~200 ns (torch builds the string each time); a dict lookup by the device
        # costs ~30 ns (bench/runtime_bench.py: x.to(torch.device("cuda", 0)), model.cuda()).
        self.devobj: dict[torch.device, torch.device] = {}
        self.off = False  # after disable(): wrappers captured earlier map nothing (see _patcher.py)

    def switch_off(self) -> None:
        self.off = True
        self._cache.clear()
        self.devobj.clear()

    @property
    def device(self) -> torch.device:
        """The target device with no index (what `.cuda()` with no argument moves to)."""
        return self.torch_device(None)

    def _map_str(self, s: str) -> str:
        if not s.startswith("cuda"):
            return s
        parsed = _parse(s)
        if parsed is None or parsed.type != "cuda":
            return s  # not a CUDA device string: torch raises its own error, as without torchport
        if parsed.index is None or not self.indexed:
            return self.dst
        # The index as written: torch reads it into an 8-bit DeviceIndex ("cuda:982" is index -42),
        # and the target's string must be read the same way, not rewritten from the wrapped value.
        return f"{self.dst}:{s.partition(':')[2]}"

    def map(self, d: Any) -> Any:
        """The target equivalent of device value `d` (str, torch.device, int), or `d` itself."""
        if self.off:
            return d
        t = type(d)
        if t is _str:
            r = self._cache.get(d)
            if r is None:
                r = self._map_str(d)
                if r == d:
                    r = d
                self._cache[d] = r
            return d if r == d else r  # unchanged: the caller's own object
        if t is TORCH_DEVICE:
            nd = self.devobj.get(d)
            if nd is None:
                nd = self.torch_device(d.index) if d.type == "cuda" else d
                self.devobj[d] = nd
            return d if nd == d else nd  # unchanged: the caller's own object
        if t is _int:  # a bare int means a CUDA ordinal to torch
            return self.torch_device(d)
        return d

    def torch_device(self, index: Optional[int]) -> torch.device:
        key = (self.dst, index if self.indexed else None)
        dev = self._dev_cache.get(key)
        if dev is None:
            dev = torch.device(self.dst, key[1]) if key[1] is not None else torch.device(self.dst)
            self._dev_cache[key] = dev
        return dev

    def loses_index(self, d: Any) -> bool:
        """True when `d` names a CUDA device other than 0 and the target has one device only."""
        if self.indexed:
            return False
        if isinstance(d, bool):
            return False
        if isinstance(d, int):
            return d != 0
        if isinstance(d, str):
            parsed = _parse(d) if d.startswith("cuda") else None
            return parsed is not None and parsed.type == "cuda" and parsed.index not in (None, 0)
        if isinstance(d, torch.device):
            return d.type == "cuda" and d.index not in (None, 0)
        return False

    def classify(self, d: Any) -> tuple[str, str]:
        """The log class of redirecting device value `d`."""
        if self.loses_index(d):
            return "modified", f"{self.dst} has one device: the CUDA index is dropped"
        if isinstance(d, int) and not isinstance(d, bool):
            return "match", "a bare int is a CUDA ordinal"
        return "match", ""

    def map_location_str(self, loc: str) -> str:
        """A saved storage location ("cuda:0") to the location to restore onto."""
        return self.map(loc)

    def map_location(self, map_location: Any, restore: Callable[[Any, str], Any]) -> Any:
        """The map_location argument to pass to the real torch.load; None means 'as saved'."""
        if self.off:
            return map_location
        if map_location is None or isinstance(map_location, dict) or callable(map_location):
            user = map_location

            def _restore(storage: Any, location: str) -> Any:
                if isinstance(user, dict):
                    location = user.get(location, location)
                    if isinstance(location, torch.device):
                        location = str(location)
                elif user is not None:
                    result = user(storage, location)
                    if result is not None:
                        return result
                return restore(storage, self.map(location))

            return _restore
        return self.map(map_location)
