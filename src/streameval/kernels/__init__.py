"""Sort-based kernels: binary states (and their metrics) of one unit with NumPy.

Polars' group-by hashes every row; for the exact mode, whose state has about one row per
distinct score, one ``np.sort`` of packed (group, score, label) integers is several times
faster, and the sorted runs give the metrics' cumulative sums directly (:mod:`.metrics`).
The results are the same tables as the Polars path's (row order aside; weighted sums may
differ in the last bits, as summation order does in Polars itself).

Where: hive units (:func:`streameval.accumulate.unit_rows`) and in-memory sources. In exact
mode, unweighted metrics come straight from the runs; weighted ones from the Polars finalize
of the runs' state table. Bucketed states are counted straight into dense buckets
(:mod:`.dense`), or, when the buckets would be too many, summed from the exact runs
(:mod:`.buckets`); their unweighted metrics come from the buckets taken as runs, the same
way. Keys without an integer code (Int64, floats, …) and units whose codes do not fit in 64
bits use the Polars group-by.

``ENABLED`` switches the kernels off (tests compare both paths).
"""

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")

ENABLED = True


_pages_lock = threading.Lock()
_pages_users = 0
_pages_previous = True


def _hugepage_setter() -> Callable[[bool], bool] | None:
    """NumPy's private switch for huge pages on large arrays, if this NumPy has one."""
    multiarray = getattr(getattr(np, "_core", np), "multiarray", None)
    setter: Callable[[bool], bool] | None = getattr(multiarray, "_set_madvise_hugepage", None)
    return setter


@contextmanager
def small_pages() -> Iterator[None]:
    """Allocate NumPy arrays without transparent huge pages for the duration of the block.

    NumPy asks the kernel for huge pages on large arrays; where the kernel then compacts
    memory synchronously (``defrag=madvise``, a common default), each fresh array can stall
    for tens of milliseconds, several times the kernels' own work. The setting is global to
    NumPy: it is switched off by the first thread to enter and restored by the last to leave.
    """
    global _pages_users, _pages_previous
    setter = _hugepage_setter()
    if setter is None:
        yield
        return
    with _pages_lock:
        if _pages_users == 0:
            _pages_previous = setter(False)
        _pages_users += 1
    try:
        yield
    finally:
        with _pages_lock:
            _pages_users -= 1
            if _pages_users == 0:
                setter(_pages_previous)


def prefetch(items: Sequence[T], work: Callable[[T], R]) -> Iterator[tuple[T, R]]:
    """Each item with ``work(item)``, the next item's work running in a thread meanwhile.

    Polars and NumPy release the GIL in their heavy loops, so reading (and starting the runs
    of) the next unit overlaps finishing this one (two units in memory at most).

    >>> list(prefetch([1, 2, 3], lambda x: x * 10))
    [(1, 10), (2, 20), (3, 30)]
    """
    if len(items) < 2:
        yield from ((item, work(item)) for item in items)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(work, items[0])
        for i, item in enumerate(items):
            result = future.result()
            if i + 1 < len(items):
                future = pool.submit(work, items[i + 1])
            yield item, result
