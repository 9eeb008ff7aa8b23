"""The order tests start in: the ones marked slow first, the longest first.

`@pytest.mark.slow(SECONDS)` marks a test that runs over a large input (the standard library, a million
files, a real project's training); SECONDS is roughly how long it took in a CI run. Every slow test still
runs in every CI run. .ci/run hands the tests to xdist's workers one at a time (`--maxschedchunk 1`), so
that the long ones start at once, one per worker, and the short ones fill in around them; in collection
order, a long test that happened to start last kept one worker busy after the other had finished.
"""

from __future__ import annotations

import pytest


def _seconds(item: pytest.Item) -> float:
    mark = item.get_closest_marker("slow")
    if mark is None:
        return 0.0
    return float(mark.args[0]) if mark.args else 1.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # stable: the same order on every xdist worker, which xdist checks
    items.sort(key=lambda item: -_seconds(item))
