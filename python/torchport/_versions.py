"""The one reading of a version string on the Python side: torch's own (`2.7.0a0+git1234`), a
`--torch-version` (`2.7`), the versions of the op databases (`2.1` ... `2.13`).

The grammar is PEP 440's public version (release, pre-release, post-release, dev release) plus a local label:
- trailing zeros of the release do not count: 2.6 == 2.6.0;
- the local label (`+cpu`, `+cu121`, `+git1234`) names a build of the release, not another release, so it
  does not count either: 2.6.0+cpu == 2.6;
- a pre-release comes before its release: 2.7.0a0 < 2.7 (dev < a < b < rc < final < post).
packaging.version says the same for every version torch publishes, but it is not a dependency of torchport.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_VERSION = re.compile(
    r"""^\s*v?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c|pre|preview)[-_.]?(?P<pre_n>\d*))?
    (?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?
    (?:[-_.]?dev[-_.]?(?P<dev>\d*))?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
_PHASE = {"a": 0, "b": 1, "rc": 2}


@dataclass(frozen=True)
class Version:
    """A parsed version; compares and hashes by `key` (release without trailing zeros, pre, post, dev)."""

    text: str = field(compare=False)
    release: tuple[int, ...] = field(compare=False)  # as written: (2, 6, 0) for "2.6.0"
    pre: Optional[tuple[str, int]] = field(compare=False)  # ("a", 0) for "2.7.0a0"
    post: Optional[int] = field(compare=False)
    dev: Optional[int] = field(compare=False)
    local: str = field(compare=False)  # "cpu" for "2.6.0+cpu", not part of the comparison
    key: tuple[object, ...] = field(repr=False)

    def __lt__(self, other: Version) -> bool:
        return self.key < other.key

    def __le__(self, other: Version) -> bool:
        return self.key <= other.key

    def __gt__(self, other: Version) -> bool:
        return self.key > other.key

    def __ge__(self, other: Version) -> bool:
        return self.key >= other.key

    @property
    def major_minor(self) -> str:
        """ "2.7" for 2.7.0a0+git1234 ("2.0" for "2"): the level the op databases keep versions at."""
        rel = self.release + (0,) * (2 - len(self.release))
        return f"{rel[0]}.{rel[1]}"


def _sort_key(
    release: tuple[int, ...], pre: Optional[tuple[str, int]], post: Optional[int], dev: Optional[int]
) -> tuple[object, ...]:
    trimmed = list(release)
    while len(trimmed) > 1 and trimmed[-1] == 0:
        trimmed.pop()
    if pre is not None:
        pre_key: tuple[int, ...] = (0, _PHASE[pre[0]], pre[1])
    elif dev is not None and post is None:
        pre_key = (-1,)  # 2.7.dev1 comes before 2.7a0
    else:
        pre_key = (1,)  # the release itself
    post_key = -1 if post is None else post
    dev_key: tuple[int, ...] = (1,) if dev is None else (0, dev)  # 2.7a0.dev1 comes before 2.7a0
    return (tuple(trimmed), pre_key, post_key, dev_key)


def parse(text: str) -> Version:
    """The Version of `text`. Raises ValueError when it is not a version."""
    m = _VERSION.match(text)
    if m is None:
        raise ValueError(f"not a version: {text!r}")
    release = tuple(int(x) for x in m.group("release").split("."))
    pre = (_PRE[m.group("pre").lower()], int(m.group("pre_n") or 0)) if m.group("pre") else None
    post = int(m.group("post") or 0) if m.group("post") is not None else None
    dev = int(m.group("dev") or 0) if m.group("dev") is not None else None
    local = (m.group("local") or "").lower()
    return Version(text, release, pre, post, dev, local, _sort_key(release, pre, post, dev))


def major_minor(text: str) -> str:
    """ "2.7" for "2.7.0a0+git1234", "2.13" for "2.13"; ValueError unless the release has two numbers."""
    v = parse(text)
    if len(v.release) < 2:
        raise ValueError(f"not a major.minor version: {text!r}")
    return v.major_minor
