"""Suite-wide settings.

A test that fails with libstdc++'s std::terminate message is run again, up to twice (pytest-rerunfailures):
that is how torch's own gloo ranks die in their C++ teardown, after their work, now and then under load
(pytorch/pytorch#38228; torchrun_testlib.TEARDOWN_ABORT). CI saw it in plain-torch reference runs that
torchport does not touch. Each rerun is printed (`R` in the progress line, "rerun" in the summary); any
other failure is reported at once, and a test that fails the same way three times fails."""

from __future__ import annotations

import pytest
import pytest_rerunfailures  # noqa: F401  (the flaky marker below needs it: fail here, not silently)

from torchrun_testlib import mark_teardown_reruns


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_teardown_reruns(items)
