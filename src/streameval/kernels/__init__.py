"""Sort-based kernels: exact binary states (and their metrics) of one unit with NumPy.

Polars' group-by hashes every row; for the exact mode, whose state has about one row per
distinct score, one ``np.sort`` of packed (group, score, label) integers is several times
faster, and the sorted runs give the metrics' cumulative sums directly (:mod:`.metrics`).
The results are the same tables as the Polars path's (row order aside).

``ENABLED`` switches the kernels off (tests compare both paths).
"""

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

ENABLED = True


@contextmanager
def small_pages() -> Iterator[None]:
    """Allocate NumPy arrays without transparent huge pages for the duration of the block.

    NumPy asks the kernel for huge pages on large arrays; where the kernel then compacts
    memory synchronously (``defrag=madvise``, a common default), each fresh array can stall
    for tens of milliseconds, several times the kernels' own work. The setting is global to
    NumPy, so it is restored on exit.
    """
    toggle = getattr(getattr(np, "_core", np), "multiarray", None)
    setter = getattr(toggle, "_set_madvise_hugepage", None)
    if setter is None:
        yield
        return
    previous = setter(False)
    try:
        yield
    finally:
        setter(previous)
