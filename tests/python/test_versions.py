"""torchport._versions: the one version parser of the Python side, and its users (check-ops' databases and
--torch-version)."""

from __future__ import annotations

import pytest

from torchport._versions import major_minor, parse
from torchport.check_ops.opdb import _expand, nearest_version


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("2.6", "2.6.0"),
        ("2.6.0", "2.6.0.0"),
        ("2.6.0+cpu", "2.6"),
        ("2.6.0+cu121", "2.6.0+cpu"),
        ("v2.6", "2.6"),
        ("2.7.0a0", "2.7a0"),
        ("2.7.0rc1", "2.7.0c1"),
        ("2.1.0.post4", "2.1.0-post4"),
    ],
)
def test_equal(a: str, b: str) -> None:
    assert parse(a) == parse(b)
    assert hash(parse(a)) == hash(parse(b))
    assert not parse(a) < parse(b) and not parse(a) > parse(b)


@pytest.mark.parametrize(
    "ordered",
    [
        ["2.1", "2.6", "2.7", "2.10", "2.13"],  # numbers, not strings: 2.10 after 2.7
        ["2.7.0.dev20250101", "2.7.0a0", "2.7.0a1", "2.7.0b1", "2.7.0rc1", "2.7.0", "2.7.0.post1", "2.7.1"],
        ["2.7.0a0.dev1", "2.7.0a0"],
        ["2.6.0+cpu", "2.6.1"],
    ],
)
def test_order(ordered: list[str]) -> None:
    versions = [parse(v) for v in ordered]
    assert versions == sorted(versions)
    for lo, hi in zip(versions, versions[1:]):
        assert lo < hi and lo <= hi and hi > lo and hi >= lo and lo != hi


def test_parts() -> None:
    v = parse("2.7.0a0+git1234abc")
    assert v.release == (2, 7, 0) and v.pre == ("a", 0) and v.post is None and v.dev is None
    assert v.local == "git1234abc"
    assert parse("2.1.0.post4").post == 4
    assert parse("2.8.0.dev20250101+cpu").dev == 20250101


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2.6", "2.6"),
        ("2.6.0", "2.6"),
        ("2.6.0+cpu", "2.6"),
        ("2.7.0a0", "2.7"),
        ("2.7.0a0+git1234", "2.7"),
        ("2.13.0", "2.13"),
        ("2.1.0.post4+cxx11.abi", "2.1"),
    ],
)
def test_major_minor(text: str, want: str) -> None:
    assert major_minor(text) == want


@pytest.mark.parametrize("text", ["", "2", "x", "2.x", "two.six", "2.6.x", "2.6 beta", "2.6+"])
def test_not_a_version(text: str) -> None:
    with pytest.raises(ValueError):
        major_minor(text)


def test_the_databases_read_versions_the_same_way() -> None:
    known = ["2.1", "2.6", "2.7", "2.8"]
    assert nearest_version("2.6", known) == ("2.6", True)
    assert nearest_version("2.6.0", known) == ("2.6", True)  # was "nearest" before one parser
    assert nearest_version("2.6.0+cpu", known) == ("2.6", True)
    assert nearest_version("2.5", known) == ("2.1", False)
    assert nearest_version("2.10", known) == ("2.8", False)
    assert nearest_version("1.13", known) == ("2.1", False)
    assert _expand("2.1-2.7", known) == {"2.1", "2.6", "2.7"}
    assert _expand("2.6.0-2.7.0,2.8", known) == {"2.6", "2.7", "2.8"}
