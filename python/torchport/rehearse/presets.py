"""`--memory` presets named after real cards: name -> (bytes per device, source).

These capacities come from the vendors' public product pages as we remember them; they are not in
../shared (VENDOR-UNVERIFIED): check the card you book. A plain size (64GiB, 32GB) is always accepted.
"""

from __future__ import annotations

GiB = 2**30

PRESETS: dict[str, tuple[int, str]] = {
    "ascend-910b-64g": (64 * GiB, "VENDOR-UNVERIFIED: Atlas 800T A2 / Ascend 910B, 64 GB HBM per NPU"),
    "ascend-910-32g": (32 * GiB, "VENDOR-UNVERIFIED: Atlas 300T / Ascend 910, 32 GB HBM per NPU"),
    "mlu370-x8": (48 * GiB, "VENDOR-UNVERIFIED: Cambricon MLU370-X8, 48 GB LPDDR5 per card"),
    "mtt-s4000": (48 * GiB, "VENDOR-UNVERIFIED: Moore Threads MTT S4000, 48 GB GDDR6 per card"),
}
