"""Sort-based kernels: binary states (and their metrics) of one unit with NumPy.

Polars' group-by hashes every row; for the exact mode, whose state has about one row per
distinct score, one ``np.sort`` of packed (group, score, label) integers is several times
faster, and the sorted runs give the metrics' cumulative sums directly (:mod:`.metrics`).
The results are the same tables as the Polars path's (row order aside; weighted sums may
differ in the last bits, as summation order does in Polars itself).

Where: hive units (:func:`streameval.pipeline.unit_rows`), in-memory sources, and the shards
of every other source (:func:`streameval.source.shard_units`). In exact mode,
unweighted metrics come straight from the runs; weighted ones from the Polars finalize of the
runs' state table. Bucketed states are counted straight into their cells by compiled loops
(:mod:`.dense`, :mod:`.compiled`, :mod:`.loops`) at any density, or, above the windows'
precision bound, summed from the exact runs (:mod:`.buckets`); their metrics, weighted or not,
come straight from the placed rows (:mod:`.loops`, :mod:`.weightedloops`). Multiclass metric
tables (:mod:`.classes`) and regression states and metric tables (:mod:`.regression`) use the
same placement of rows by (group, binary exponent); multiclass states sum each (group, actual
class)'s buckets in a small hash table (:mod:`.classstate`); a paired metric table sums each model's
scores as a binary one over the rows read once (:mod:`.paired`). A state's finalize reads its
table with compiled loops too where Polars' sorts and joins were slow: a multiclass state's
AUC pair sums (:func:`.classstate.state_pairs`), a paired state's DeLong test
(:mod:`.pairedstate`). Bootstrap replicates of
binary, multiclass and regression metric tables are drawn from the placed rows' keys, a
batch of replicates per read of the rows. String keys, and keys
without a small integer code (Int64, floats, …), are coded by hashing (:mod:`.hashcodes`).
Units whose codes do not fit in 64 bits use the Polars group-by. Within a pass
(:func:`reusing`), row-sized buffers go from unit to unit instead of being faulted in anew.

The environment variable ``STREAMEVAL_KERNEL`` narrows the paths taken (:data:`PATHS`,
read at each use: :func:`path`), to diagnose a result or to compare the paths, as the tests
do.
"""

import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from ..errors import InputError

T = TypeVar("T")
R = TypeVar("R")

#: The environment variable naming the paths the kernels may take, one of :data:`PATHS`.
VARIABLE = "STREAMEVAL_KERNEL"
#: Its values: each leaves out more of the kernels (the results agree to the last bits of
#: weighted sums, summed in another order).
PATHS = {
    "all": "every path (the default)",
    "no-dense": "bucketed states summed from sorted rows, not counted into dense cells",
    "no-loops": "no compiled loops: sorted NumPy runs, and the Polars queries for the rest",
    "off": "no kernel: the Polars queries only (the reference the kernels are tested against)",
}


def path() -> str:
    """The paths the kernels may take: ``STREAMEVAL_KERNEL``, ``"all"`` when unset.

    >>> path()
    'all'
    """
    value = os.environ.get(VARIABLE, "all")
    if value not in PATHS:
        raise InputError(
            f"expected the environment variable {VARIABLE} to be one of {', '.join(PATHS)}, got "
            f"{value!r}; hint: unset it for every path"
        )
    return value


def enabled() -> bool:
    """Whether the kernels may run at all (``STREAMEVAL_KERNEL`` is not ``off``)."""
    return path() != "off"


#: Units read ahead of the one being summed: two smooth out units that take longer to read
#: or to sum than the others (measured: about 4% off a pass of 30 day partitions).
AHEAD = 2


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


_pool_lock = threading.Lock()
_pool_users = 0
_pool: list[npt.NDArray[np.uint8]] = []
#: The buffers :func:`buffer` allocated, by id (arrays are not hashable), while they live.
_ours: dict[int, weakref.ref[npt.NDArray[np.uint8]]] = {}
#: Buffers kept for reuse at most (three units in flight, a few buffers each).
POOL_SIZE = 8


@contextmanager
def reusing() -> Iterator[None]:
    """Let :func:`buffer` hand out the buffers given back by :func:`give_back` in the block.

    A fresh array's pages are faulted in on first touch, about 0.6 ms per MB; the units of a
    pass need row-sized buffers of the same sizes over and over. The buffers are freed when
    the last block (of any thread) ends.
    """
    global _pool_users
    with _pool_lock:
        _pool_users += 1
    try:
        yield
    finally:
        with _pool_lock:
            _pool_users -= 1
            if _pool_users == 0:
                _pool.clear()


def buffer(size: int, dtype: type[np.generic] | np.dtype[np.generic], zero: bool = False) -> Any:
    """An uninitialized (or zeroed) array of ``size`` elements, reused if one was given back.

    >>> with reusing():
    ...     a = buffer(4, np.int64, zero=True)
    ...     give_back(a)
    ...     buffer(3, np.float64, zero=True).tolist()
    [0.0, 0.0, 0.0]
    """
    kind = np.dtype(dtype)
    nbytes = size * kind.itemsize
    raw = None
    with _pool_lock:
        fits = [i for i, b in enumerate(_pool) if b.size >= nbytes]
        if fits:
            raw = _pool.pop(min(fits, key=lambda i: _pool[i].size))
    if raw is None:
        with small_pages():
            raw = np.empty(nbytes, np.uint8)
        _ours[id(raw)] = weakref.ref(raw, _forget(id(raw)))
    out = raw[:nbytes].view(kind)
    if zero:
        out.fill(0)
    return out


def _forget(key: int) -> Callable[[object], None]:
    """The callback that drops a freed buffer's id from the ones allocated here."""

    def forget(_: object) -> None:
        _ours.pop(key, None)

    return forget


def give_back(array: npt.NDArray[Any]) -> None:
    """Give a :func:`buffer` array back for reuse (dropped outside :func:`reusing`)."""
    raw = array
    while isinstance(raw.base, np.ndarray):
        raw = raw.base
    mine = _ours.get(id(raw))
    if mine is None or mine() is not raw:  # not a buffer of ours (a Series' memory, say)
        return
    with _pool_lock:
        if _pool_users and len(_pool) < POOL_SIZE and all(b is not raw for b in _pool):
            _pool.append(raw)


def chunks(frame: pl.DataFrame, names: Sequence[str]) -> list[tuple[int, list[Any]]]:
    """The named columns chunk by chunk: each chunk's first row and its columns as arrays.

    The arrays are the chunks' own memory (no copy; the columns must hold no nulls). Columns
    whose chunks do not line up are joined into one chunk first.

    >>> s = pl.concat([pl.Series("a", [1.0, 2.0]), pl.Series("a", [3.0])], rechunk=False)
    >>> [(start, [a.tolist() for a in arrays]) for start, arrays in chunks(s.to_frame(), ["a"])]
    [(0, [[1.0, 2.0]]), (2, [[3.0]])]
    """
    columns = [frame[name] for name in names]
    if any(c.null_count() for c in columns):
        raise ValueError(f"expected no nulls in {names}")
    parts = [c.get_chunks() for c in columns]
    sizes = [[len(chunk) for chunk in part] for part in parts]
    if any(other != sizes[0] for other in sizes[1:]):
        parts = [[c.rechunk()] for c in columns]
        sizes = [[len(columns[0])]]
    out = []
    start = 0
    for i, size in enumerate(sizes[0]):
        out.append((start, [part[i].to_numpy() for part in parts]))
        start += size
    return out


Parts = list[tuple[int, list[Any]]]


def split_rows(parts: Parts, rows: int) -> list[Parts]:
    """The chunks (:func:`chunks`) of ``rows`` rows as two lists of half the rows each.

    The chunk holding the middle row is cut there (views, no copy).

    >>> parts = [(0, [np.arange(3)]), (3, [np.arange(3, 5)])]
    >>> [[(start, a[0].tolist()) for start, a in half] for half in split_rows(parts, 5)]
    [[(0, [0, 1])], [(2, [2]), (3, [3, 4])]]
    """
    middle = rows // 2
    first: Parts = []
    second: Parts = []
    for start, arrays in parts:
        size = len(arrays[0])
        if start + size <= middle:
            first.append((start, arrays))
        elif start >= middle:
            second.append((start, arrays))
        else:
            cut = middle - start
            first.append((start, [a[:cut] for a in arrays]))
            second.append((middle, [a[cut:] for a in arrays]))
    return [first, second]


def span(parts: Parts) -> tuple[int, int]:
    """The first row of the chunks and the row after their last ((0, 0) without chunks).

    >>> span([(2, [np.arange(3)]), (5, [np.arange(4)])])
    (2, 9)
    """
    if not parts:
        return 0, 0
    return parts[0][0], max(start + len(arrays[0]) for start, arrays in parts)


def each(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``work`` of each item, on a thread each when there are two or more (in order)."""
    if len(items) < 2:
        return [work(item) for item in items]
    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(work, items))


def prefetch(
    items: Sequence[T], work: Callable[[T], R], ahead: int = AHEAD
) -> Iterator[tuple[T, R]]:
    """Each item with ``work(item)``, the next items' work running in a thread meanwhile.

    Polars, NumPy and the compiled loops release the GIL in their heavy loops, so reading
    (and starting the runs of) the next units overlaps finishing this one: ``ahead`` units
    are read ahead, so ``ahead + 1`` are in memory at most.

    >>> list(prefetch([1, 2, 3], lambda x: x * 10))
    [(1, 10), (2, 20), (3, 30)]
    """
    if len(items) < 2:
        yield from ((item, work(item)) for item in items)
        return
    ahead = max(1, ahead)
    with ThreadPoolExecutor(max_workers=1) as pool:
        futures = deque(pool.submit(work, item) for item in items[:ahead])
        for i, item in enumerate(items):
            result = futures.popleft().result()
            if i + ahead < len(items):
                futures.append(pool.submit(work, items[i + ahead]))
            yield item, result
