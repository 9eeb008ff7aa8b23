"""Object storage for migrated projects: `torchport migrate --object-storage / --modelarts`."""

from __future__ import annotations

# typing only for annotations: not imported at run time (every `torchport analyze` pays its imports first)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

# The flags that ask for object storage. Here, apart from cloud.cli and what it imports, so that a
# `migrate` without them decides so without importing any of it.
STORAGE_FLAGS = ("--object-storage", "--modelarts")


def wants_storage(argv: Sequence[str]) -> bool:
    return any(a in STORAGE_FLAGS for a in argv)
