"""Timing shared by the benchmarks that run their cells in one process."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(work: Callable[[], object], repeat: int) -> float:
    """The median wall time of ``repeat`` calls of ``work``, after one untimed warm-up.

    The warm-up takes numba's compilation and the caches out of the timings.
    """
    work()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
