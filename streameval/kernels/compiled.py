"""The bucketed binary kernel: a unit's rows counted into their cells by compiled loops.

:func:`compiled_cells` lays a unit's rows out in the cells of :mod:`.dense` (same cells, same
order, each cell's terms added in the same order) with the loops of :mod:`.loops`: the rows
are ordered by (group, binade), and each such block is summed in a window that stays in
cache. A metric table needs no cells: :meth:`CompiledCells.grouped` reads each group's
aggregates off the windows, the log loss as the log of a product (a multiply per row rather
than a ``log``). All of it runs in the summing thread (:class:`.collect.Deferred`); the reading
thread codes the keys. A unit of :data:`PARALLEL_ROWS` rows or more is counted and placed by
two threads over halves of its rows (the second half's rows placed after the first's in each
cell: the same layout), and read by two over halves of its groups. There is no density
limit: only filled cells are kept, whatever the groups and the precision (up to
:data:`MAX_WINDOW_BITS`), and sparse group codes are renumbered first (:func:`compact`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import (
    EPS,
    EXACT_BITS,
    KEY_FLIP,
    bucket_floor_scalar,
    float_to_key_scalar,
    key_to_float_scalar,
)
from ..resample_draw import REPLICATE, REPLICATE_TYPE, draw_limits
from ..spec import ALL, Spec
from ..split.keys import mix_int
from . import Parts, buffer, chunks, each, give_back, path, small_pages, span, split_rows
from . import loops as compiled_loops
from .dense import SAFE, coarse_starts, cuts_inside, slot_runs
from .groups import GroupCodes
from .metrics import delong_variance, grouped_frame, in_order, pair_scale, weighted_grouped
from .staged import Staged
from .weightedloops import replicate_metrics, replicate_rows, weighted_metrics

if TYPE_CHECKING:
    from .runs import Runs

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

_SAFE = 1e300  # (total weight)² below this: no weighted pair sum overflows
_NONE = np.zeros(0)  # no weights
#: The most mantissa bits a bucket window (2**bits slots, kept in cache) is made for; at a
#: higher precision the rows are sorted instead (:mod:`.buckets`).
MAX_WINDOW_BITS = 16
#: Entries of the table of every (group, binade) pair a unit may allocate beyond 4 per row;
#: with more, the pairs present are numbered by a sort (:func:`_coarse_cells`).
SPARSE_CELLS = 1 << 24
#: Bootstrap replicates read off a coarse cell's rows while they stay in cache.
REPLICATE_BATCH = 8
#: Rows from which a unit is counted, placed and its String keys numbered by two threads
#: (halves of its rows), and its metric aggregates read by two (halves of its groups).
PARALLEL_ROWS = 1 << 22


def loops() -> ModuleType | None:
    """The compiled loops (None where ``STREAMEVAL_KERNEL`` leaves them out: :func:`.path`)."""
    return compiled_loops if path() in ("all", "no-dense") else None


@dataclass
class CompiledCells(Staged):
    """A unit's rows with their coarse cells counted; :meth:`runs` places and sums them.

    Unweighted, :meth:`grouped` reads each group's metric aggregates straight off the
    placed rows instead.
    """

    groups: GroupCodes
    spec: Spec
    loops: ModuleType
    rows: tuple[I64, list[tuple[list[tuple[int, list[Any]]], I64]], I64, I64, int]
    bounds: I64
    starts: I64
    occupied: I64
    tops: I64
    back: I64 | None = None
    heaviest: float = 1.0
    keyed: bool = False

    def original(self, codes: npt.NDArray[np.generic]) -> npt.NDArray[np.uint64]:
        """The unit's group codes of the kernel's (renumbered when they were sparse)."""
        if self.back is None:
            return codes.astype(np.uint64, copy=False)
        out: npt.NDArray[np.uint64] = self.back[codes.astype(np.int64)].view(np.uint64)
        return out

    def _filled(self) -> tuple[F64, npt.NDArray[np.uint64], I64, I64]:
        """The filled cells: their sums (a row each), group codes, binades and slots (once)."""
        if not hasattr(self, "_cells"):
            words, weights = self._placed()
            with small_pages():
                self._cells = self.loops.block_sums(
                    words, weights, self.bounds, self.starts, self.occupied, self.tops,
                    self.spec.precision, *self._cuts(), EPS,
                )  # fmt: skip
            self._let_go()
        cells: tuple[F64, npt.NDArray[np.uint64], I64, I64] = self._cells
        return cells

    def _cuts(self) -> tuple[I64, npt.NDArray[np.bool_]]:
        """The splits inside buckets (sorted keys), and which binades have some."""
        cuts = cuts_inside(self.spec)
        cut_tops = np.zeros(2 * self.loops.OFFSET, np.bool_)
        cut_tops[(cuts >> np.int64(EXACT_BITS)) + self.loops.OFFSET] = True
        return cuts, cut_tops

    def _placed(self) -> tuple[I64, F64]:
        """The rows ordered by coarse cell, as words (and their weights); the rows let go."""
        if getattr(self, "_gone", False):
            raise RuntimeError("the unit's rows were let go after its grouped frame")
        if not hasattr(self, "_words"):
            codes, halves, rank, ordinal, ntops = self.rows
            del self.rows
            words = buffer(codes.size, np.int64)
            ordered = buffer(codes.size, np.float64) if self.spec.weighted else np.zeros(0)

            def placing(column: int, out: I64, moved: F64) -> Callable[[Any], None]:
                """Place a half's rows, with column ``column`` (-1: none) moved beside them."""

                def place(half: tuple[Parts, I64]) -> None:
                    parts, before = half
                    at = self.bounds[:-1] + before  # this half's rows follow the earlier half's
                    for start, (score, y, *rest) in parts:
                        values = rest[column].view(np.float64) if column >= 0 else _NONE
                        self.loops.place(
                            codes, start, score.view(np.int64), y, values, rank, ntops,
                            ordinal, at, out, moved,
                        )  # fmt: skip

                return place

            each(placing(0 if self.spec.weighted else -1, words, ordered), halves)
            if self.keyed:  # the row keys placed likewise (their bits moved as floats)
                self._keys = buffer(codes.size, np.uint64)
                scratch = buffer(codes.size, np.int64)
                each(placing(1, scratch, self._keys.view(np.float64)), halves)
                give_back(scratch)
            give_back(codes)
            self._words = (words, ordered)
        placed: tuple[I64, F64] = self._words
        return placed

    def _keyed(self) -> npt.NDArray[np.uint64]:
        """The placed rows' keys (``keyed`` only), after :meth:`_placed`."""
        keys: npt.NDArray[np.uint64] = self._keys
        return keys

    def _let_go(self) -> None:
        """Give the placed rows' buffers back: nothing reads them any more."""
        for array in self._words:
            give_back(array)
        if self.keyed:
            give_back(self._keys)
            del self._keys
        del self._words
        self._gone = True

    def _finish(self) -> Runs | None:
        """The buckets as runs with their sums (None, for the Polars path, if a sum overflows)."""
        got, group, binade, local = self._filled()
        group = self.original(group)
        with small_pages():
            sums = _sums(got, self.spec.weighted)
            if sums is None:
                return None
            return slot_runs(group, binade, local, sums, self.groups, self.spec)

    def grouped(
        self, spec: Spec, thresholds: list[float], variance: bool = False
    ) -> pl.DataFrame | None:
        """The grouped frame of the unit straight from its rows.

        As :func:`.metrics.runs_grouped` of :meth:`runs`, unweighted integer sums and the AP
        numerator bit for bit; the log-loss, Brier and hinge sums differ in the last bits (the log
        loss is the log of a product, :func:`.loops.group_metrics`), and so do weighted sums
        (:func:`.weightedloops.weighted_metrics`). After a frame, :meth:`runs` raises: the
        rows are let go. None (the runs' or the state's finalize) when a weighted pair sum
        could overflow.
        """
        if hasattr(self, "_cells"):  # summed already (runs() came first): from the runs
            return super().grouped(spec, thresholds, variance)
        if spec.weighted and not (self.heaviest * self.bounds[-1]) ** 2 < _SAFE:
            return None
        words, ordered = self._placed()
        cuts, cut_tops, marks, place = self._marks(thresholds)
        with small_pages():
            if spec.weighted:
                count = len(thresholds)
                return self._weighted(ordered, cuts, cut_tops, marks, place, count, variance)
            codes, counts, sums, largest = self._in_halves(
                self.loops.group_metrics, (words,),
                (self.tops, self.spec.precision, cuts, cut_tops, EPS, marks, variance),
            )  # fmt: skip
        if not np.isfinite(sums).all():  # a squared error overflowed: the Polars path
            return None
        self._let_go()
        positives, negatives = counts[0], counts[1]
        below = {i: (counts[4 + 2 * j], counts[5 + 2 * j]) for i, j in place.items()}
        zero, above_one = below[len(thresholds)], below[len(thresholds) + 1]
        outside = zero[0] + zero[1] + (positives - above_one[0]) + (negatives - above_one[1])
        tp_fp = [(positives - below[i][0], negatives - below[i][1]) for i in range(len(thresholds))]
        scale = pair_scale(float(largest))
        return grouped_frame(
            self.groups.decode(self.original(codes)),
            ALL,
            (positives, negatives, scale),
            (counts[2], counts[3]),
            {
                "_ap_num": sums[0] * scale,
                "_log_loss": sums[1],
                "_brier": sums[2],
                "_ap_over": sums[3] * scale,
                "_ap_under": sums[4] * scale,
                "_hinge": sums[7],
                **(delong_variance(positives, negatives, sums[5], sums[6]) if variance else {}),
            },
            outside,
            tp_fp,
        )

    def _in_halves(self, kernel: Any, rows: tuple[Any, ...], rest: tuple[Any, ...]) -> Any:
        """``kernel(*rows, bounds, starts, occupied, *rest)``, of each half of the groups.

        A unit of at least :data:`PARALLEL_ROWS` rows is read by two threads, each over whole
        groups (the coarse cells split at a group's first cell near the middle row); their
        outputs are joined (arrays end to end, a number by its maximum).
        """
        bounds, starts, occupied = self.bounds, self.starts, self.occupied
        cut = 0
        if bounds[-1] >= PARALLEL_ROWS and occupied.size > 1:
            ntops = self.tops.size
            middle = min(int(np.searchsorted(bounds, bounds[-1] // 2)), occupied.size - 1)
            cut = int(np.searchsorted(occupied, occupied[middle] // ntops * ntops))
            if cut == 0:  # the first group holds the middle row: cut after it
                cut = int(np.searchsorted(occupied, (occupied[0] // ntops + 1) * ntops))
        if cut in (0, occupied.size):
            return kernel(*rows, bounds, starts, occupied, *rest)

        def half(span: slice) -> Any:
            edges = slice(span.start, None if span.stop is None else span.stop + 1)
            return kernel(*rows, bounds[edges], starts[edges], occupied[span], *rest)

        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(half, (slice(0, cut), slice(cut, None)))
        return tuple(
            np.concatenate((a, b), axis=-1) if isinstance(a, np.ndarray) else max(a, b)
            for a, b in zip(first, second, strict=True)
        )

    def _marks(
        self, thresholds: list[float]
    ) -> tuple[I64, npt.NDArray[np.bool_], I64, dict[int, int]]:
        """The cuts, the binades with cuts, and the marks the summing loops count rows below.

        The marks are each threshold, 0 (scores below are outside [0, 1]) and just above 1,
        in score order (a row each: binade, slot); ``place`` maps a point's index (the
        thresholds, then 0 and 1) to its column among the marks.
        """
        cuts, cut_tops = self._cuts()
        top, slot = _slot_above(float_to_key_scalar(1.0), self.spec, cuts)
        points = [_slot_above(float_to_key_scalar(t), self.spec, cuts) for t in thresholds]
        points += [(0, 0), (top, slot + 1)]
        ordered, place = in_order(points)
        marks = np.array(ordered, np.int64).T.copy()
        return cuts, cut_tops, marks, place

    def _weighted(
        self,
        weights: F64,
        cuts: I64,
        cut_tops: npt.NDArray[np.bool_],
        marks: I64,
        place: dict[int, int],
        count: int,
        variance: bool,
    ) -> pl.DataFrame | None:
        """:meth:`grouped` of weighted rows (``count`` thresholds, then the marks 0 and 1)."""
        words, _ = self._placed()
        sums = self._in_halves(
            weighted_metrics, (words, weights),
            (self.tops, self.spec.precision, cuts, cut_tops, EPS, marks, variance),
        )  # fmt: skip
        frame = self._weighted_frame(sums, place, count, variance=variance)
        if frame is not None:
            self._let_go()
        return frame

    def _weighted_frame(
        self,
        out: tuple[Any, ...],
        place: dict[int, int],
        count: int,
        extra: Any = None,
        variance: bool = False,
    ) -> pl.DataFrame | None:
        """The grouped frame of :func:`.weightedloops.weighted_metrics`' ``out``.

        ``extra`` is one more key column (the replicate), after the unit's keys; ``variance``
        adds DeLong's ``_var``. None when a squared error overflowed (the Polars path).
        """
        codes, rows, sums, scales = out
        keys = self.groups.decode(self.original(codes))
        keys = keys if extra is None else [*keys, extra]
        return weighted_grouped(keys, (rows, sums, scales), place, count, variance)

    def replicated(
        self, spec: Spec, thresholds: list[float], replicates: int
    ) -> pl.DataFrame | None:
        """The grouped frame of bootstrap replicates 0 … ``replicates`` of the unit's groups.

        The rows must have been collected with their keys (``_k``: the row key of
        :func:`streameval.resample_draw.with_row_key`); replicate r ≥ 1 weighs each row by
        its Poisson count (:func:`.weightedloops.drawn`), as
        :meth:`streameval.resample_draw.Replication.rows` does, and a group a replicate draws
        no row of has no row there. The key ``replicate`` follows the unit's keys. The
        replicates are read off the placed rows, on two threads; None when the kernel cannot
        (no keys, a weighted sum that could overflow).
        """
        limits = draw_limits()
        if not self.keyed or not (self.heaviest * limits.size * self.bounds[-1]) ** 2 < _SAFE:
            return None
        words, weights = self._placed()
        keys = self._keyed()
        cuts, cut_tops, marks, place = self._marks(thresholds)
        with small_pages():
            slot, terms, filled, ends = replicate_rows(
                words, self.bounds, self.starts, self.occupied, self.tops, self.spec.precision,
                cuts, cut_tops, EPS,
            )  # fmt: skip
        fixed = (self.bounds, filled, ends, self.occupied, self.tops, marks)
        batches = replicate_batches(replicates, REPLICATE_BATCH)

        def batch(members: list[int]) -> pl.DataFrame | None:
            salts = replicate_salts(members)
            drawn = keys if members[0] else keys[:0]
            codes, rows, sums, scales = replicate_metrics(
                slot, terms, drawn, weights, *fixed, salts, limits
            )
            # the replicates' groups end to end (replicate-major), one frame for the batch
            size = len(members) * codes.size
            replicate = pl.Series(REPLICATE, np.repeat(members, codes.size), REPLICATE_TYPE)
            out = (
                np.tile(codes, len(members)),
                rows.transpose(1, 0, 2).reshape(-1, size),
                sums.transpose(1, 0, 2).reshape(-1, size),
                scales.reshape(size),
            )
            frame = self._weighted_frame(out, place, len(thresholds), replicate)
            return None if frame is None else frame.filter(pl.col("n") > 0)

        with small_pages(), ThreadPoolExecutor(2) as pool:
            frames = [frame for frame in pool.map(batch, batches) if frame is not None]
        if len(frames) < len(batches):
            return None
        self._let_go()
        return pl.concat(frames)


def replicate_salts(members: list[int]) -> npt.NDArray[np.uint64]:
    """The draws' salts of replicates ``members`` (replicate 0, the data, is not drawn).

    >>> replicate_salts([0, 1]).tolist()
    [0, 10451216379200822465]
    """
    return np.array([mix_int(r) if r else 0 for r in members], np.uint64)


def replicate_batches(replicates: int, size: int) -> list[list[int]]:
    """Replicate 0 alone, then replicates 1 … ``replicates`` in batches of ``size``.

    >>> replicate_batches(5, 2)
    [[0], [1, 2], [3, 4], [5]]
    """
    return [[0]] + [
        list(range(lo, min(lo + size, replicates + 1))) for lo in range(1, replicates + 1, size)
    ]


def _slot_above(key: int, spec: Spec, cuts: I64) -> tuple[int, int]:
    """The binade of ordered key ``key``, and its first slot whose bucket starts at or above it.

    >>> from streameval.spec import Spec
    >>> spec = Spec(kind="binary", keys=(), precision=2, splits=(0.3,))
    >>> cuts = np.array([float_to_key_scalar(0.3)])
    >>> # slots of [0.25, 0.5): [0.25, 0.3), [0.3, 0.3125), [0.3125, 0.375), …
    >>> [_slot_above(float_to_key_scalar(x), spec, cuts)[1] for x in (0.25, 0.3, 0.31, 0.375)]
    [0, 1, 2, 3]
    """
    shift = EXACT_BITS - spec.precision
    top = key >> EXACT_BITS
    floor = top << EXACT_BITS
    inside = cuts[(cuts >= floor) & (cuts <= key)]
    slot = (key >> shift) - (floor >> shift) + inside.size
    start = max([bucket_floor_scalar(key, spec.precision), *inside.tolist()])
    return top, slot + (start < key)


def _sums(got: F64, weighted: bool) -> dict[str, npt.NDArray[np.generic]] | None:
    """The filled cells' sums by name (None if a float sum overflowed); a row of ``got`` each."""
    floats = got[-4:]
    # a squared error that overflows makes its cell's sum inf (or nan, times a zero weight)
    if not np.isfinite(floats).all():
        return None
    out: dict[str, npt.NDArray[np.generic]] = {
        "log_loss": np.negative(floats[0]) + 0.0,  # +0.0: -0.0 becomes 0.0, as in Polars
        "brier": floats[1] + 0.0,
        "psum": floats[2] + 0.0,
        "hinge": floats[3] + 0.0,
    }
    if weighted:
        out["n"] = got[0].astype(np.int64)
        out["pos"] = got[1] + 0.0
        out["neg"] = got[2] + 0.0
    else:
        out["neg"] = got[0].astype(np.int64)
        out["pos"] = got[1].astype(np.int64)
    return out


def compiled_cells(
    frame: pl.DataFrame, groups: GroupCodes, spec: Spec, weighted: bool, loops: ModuleType
) -> CompiledCells | None:
    """Each row's cell, as :func:`.collect.dense_cells` places it; None: use the sort.

    Parameters
    ----------
    frame, groups, spec, weighted
        As for :func:`.collect.dense_cells`.
    loops : module
        The compiled loops (:func:`loops`).

    Returns
    -------
    CompiledCells or None

    """
    rows = frame.height
    p = spec.precision
    if p > MAX_WINDOW_BITS:
        return None
    keyed = weighted and "_k" in frame.columns  # the row keys of bootstrap draws
    parts = chunks(frame, ["_p", "_y", *(["_w"] if weighted else []), *(["_k"] if keyed else [])])
    halves = split_rows(parts, rows) if rows >= PARALLEL_ROWS else [parts]
    seen, (low, high) = _binades(halves, loops)
    largest = max(1.0, abs(key_to_float_scalar(int(low))), abs(key_to_float_scalar(int(high))))
    heaviest = max(1.0, float(frame["_w"].max())) if weighted else 1.0  # type: ignore[arg-type]
    if not largest * largest * heaviest * rows < SAFE:
        return None
    space = 1 << groups.bits
    offset = loops.OFFSET
    tops: I64 = np.flatnonzero(seen) - offset
    ntops = tops.size
    rank = np.zeros(seen.size, np.int64)
    rank[tops + offset] = np.arange(ntops)
    codes = groups.codes.view(np.int64)
    back = None
    if space * ntops > max(rows, 1 << 20):  # sparse codes: the coarse cells' table stays small
        codes, back = compact(codes, space)
        space = back.size
    occupied, counts, (row_codes, row_rank, ordinal, place_ntops), split = coarse_layout(
        codes, halves, rank, ntops, space, loops
    )
    placing = (row_codes, split, row_rank, ordinal, place_ntops)
    cuts = cuts_inside(spec)
    starts = coarse_starts(tops[occupied % ntops], cuts, p)
    bounds = np.zeros(occupied.size + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    # the group codes are decoded from the cells: the rows' codes go with the rows
    rest = replace(groups, codes=np.zeros(0, np.uint64))
    return CompiledCells(
        rest, spec, loops, placing, bounds, starts, occupied, tops, back, heaviest, keyed
    )


def _binades(halves: list[Parts], loops: ModuleType) -> tuple[npt.NDArray[np.bool_], I64]:
    """The binades the chunks' scores occupy (:func:`.loops.binades`), least and largest key."""

    def scan(parts: Parts) -> tuple[npt.NDArray[np.bool_], I64]:
        seen = np.zeros(2 * loops.OFFSET, np.bool_)
        extremes = np.array([KEY_FLIP, -KEY_FLIP - 1], np.int64)
        for _, (score, *_) in parts:
            loops.binades(score.view(np.int64), seen, extremes)
        return seen, extremes

    found = each(scan, halves)
    seen = np.logical_or.reduce([s for s, _ in found])
    low = min(int(e[0]) for _, e in found)
    high = max(int(e[1]) for _, e in found)
    return seen, np.array([low, high], np.int64)


def coarse_layout(
    codes: I64,
    halves: list[Parts],
    rank: I64,
    ntops: int,
    space: int,
    loops: ModuleType,
) -> tuple[I64, I64, tuple[I64, I64, I64, int], list[tuple[Parts, I64]]]:
    """The coarse cells present (``code * ntops + rank``, sorted), their rows, how to place.

    ``halves`` are the rows' chunks in one or two lists (:func:`split_rows`), counted on a
    thread each. The third item holds :func:`.loops.place`'s codes, rank, ordinal and
    ``ntops``; the last, each list of chunks to place on a thread of its own with how many
    of each coarse cell's rows the earlier lists hold (where its own rows go in the cell).

    A table of every (group, binade) pair counts the rows while it stays within 4 entries a
    row (or :data:`SPARSE_CELLS`; a table a thread while they stay within one a row); beyond
    that (a million groups over hundreds of binades) the pairs present are numbered by a
    sort, and each row's code becomes its cell's ordinal: memory stays proportional to the
    rows.

    >>> from streameval.kernels.compiled import loops
    >>> bits = np.array([0.75, 0.3, 0.6])
    >>> rank = np.zeros(4096, np.int64)
    >>> rank[[1021 + 2048, 1022 + 2048]] = [0, 1]  # binades of 0.3 and of 0.6, 0.75
    >>> codes, parts = np.array([1, 0, 1]), [(0, [bits])]
    >>> occupied, counts, _, _ = coarse_layout(codes, [parts], rank, 2, 2, loops())
    >>> occupied.tolist(), counts.tolist()  # (group 0, binade 0), (group 1, binade 1)
    ([0, 3], [1, 2])
    >>> bits = np.array([0.75, 0.3, 0.6, 0.3, 0.75, 0.3, 0.6, 0.6])  # one group, two halves
    >>> halves = split_rows([(0, [bits])], 8)
    >>> _, counts, _, split = coarse_layout(np.zeros(8, np.int64), halves, rank, 2, 1, loops())
    >>> counts.tolist(), [before.tolist() for _, before in split]  # the second half's go after
    ([3, 5], [[0, 0], [2, 2]])
    """
    rows = codes.size
    cells = space * ntops
    if cells <= max(4 * rows, SPARSE_CELLS):
        if len(halves) > 1 and len(halves) * cells > rows:  # a table each would be too big
            halves = [[part for half in halves for part in half]]

        def count(parts: Parts) -> I64:
            sizes = np.zeros(cells, np.int64)
            for start, (score, *_) in parts:
                loops.occupied(codes, start, score.view(np.int64), rank, ntops, sizes)
            return sizes

        tables = each(count, halves)
        sizes = tables[0] if len(tables) == 1 else np.add.reduce(tables)
        occupied = np.flatnonzero(sizes)
        ordinal = np.zeros(cells, np.int64)
        ordinal[occupied] = np.arange(occupied.size)
        earlier = [np.zeros(occupied.size, np.int64)] + [t[occupied] for t in tables[:-1]]
        before = np.cumsum(earlier, axis=0)
        placing = (codes, rank, ordinal, ntops)
        return occupied, sizes[occupied], placing, list(zip(halves, before, strict=True))
    ids = buffer(rows, np.int64)

    def number(parts: Parts) -> None:
        for start, (score, *_) in parts:
            loops.coarse_ids(codes, start, score.view(np.int64), rank, ntops, ids)

    each(number, halves)
    occupied, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    give_back(ids)
    row_cells = inverse.astype(np.int64, copy=False).reshape(-1)
    offsets = [np.zeros(occupied.size, np.int64)]
    for half in halves[:-1]:  # (rows before a later half's first row)
        end = span(half)[1]
        counted = np.bincount(row_cells[:end], minlength=occupied.size)
        offsets.append(counted.astype(np.int64))
    # one "binade" of rank 0: a row's code is its cell's ordinal
    placing = (row_cells, np.zeros(rank.size, np.int64), np.arange(occupied.size), 1)
    return occupied, counts.astype(np.int64), placing, list(zip(halves, offsets, strict=True))


#: Coarse cells (groups × 4,096 binades) below which :func:`place_values` assumes every binade
#: rather than reading the values once to find those used.
FEW_CELLS = 1 << 20


@dataclass
class Placed:
    """One value column's rows placed by (group, binade) (:func:`place_values`).

    ``words`` and ``weights`` are the placed rows (:func:`.loops.place`), ``bounds`` each
    coarse cell's first row and the end, ``occupied`` the coarse cells present
    (``group * tops.size + binade rank``, sorted) and ``tops`` the binades ranked.
    """

    words: I64
    weights: F64
    bounds: I64
    occupied: I64
    tops: I64

    def give_back(self) -> None:
        """Hand the row buffers back for reuse (:func:`.give_back`)."""
        give_back(self.words)
        give_back(self.weights)


def place_values(
    kernel: ModuleType, codes: I64, values: F64, labels: Any, weights: F64, groups: int
) -> Placed:
    """Place one value column's rows by (group, binade), each with its label above its key.

    ``codes`` are the rows' groups (0 … ``groups`` − 1); ``labels`` go where the binary kernel
    puts the label (a class index, say); ``weights`` may be empty. With few groups every
    binade gets a coarse cell of each group (most stay empty), which spares a pass over the
    values to find the binades they occupy.
    """
    bits = values.view(np.int64)
    offset = kernel.OFFSET
    if groups * 2 * offset <= FEW_CELLS:
        tops = np.arange(2 * offset) - offset
        rank = np.arange(2 * offset)
    else:
        seen = np.zeros(2 * offset, np.bool_)
        kernel.binades(bits, seen, np.array([KEY_FLIP, -KEY_FLIP - 1], np.int64))
        tops = np.flatnonzero(seen) - offset
        rank = np.zeros(seen.size, np.int64)
        rank[tops + offset] = np.arange(tops.size)
    with small_pages():
        occupied, counts, placing, _ = coarse_layout(
            codes, [[(0, [values])]], rank, tops.size, groups, kernel
        )
        row_codes, row_rank, ordinal, ntops = placing
        bounds = np.zeros(occupied.size + 1, np.int64)
        np.cumsum(counts, out=bounds[1:])
        at = bounds[:-1].copy()
        words = buffer(codes.size, np.int64)
        ordered = buffer(codes.size, np.float64) if weights.size else weights
        kernel.place(
            row_codes, 0, bits, labels, weights, row_rank, ntops, ordinal, at, words, ordered
        )
    return Placed(words, ordered, bounds, occupied, tops)


def place_keyed(
    kernel: ModuleType,
    rows: tuple[I64, F64, Any],
    weights: F64,
    keys: npt.NDArray[np.uint64],
    groups: int,
    index: F64 | None = None,
) -> tuple[Placed, npt.NDArray[np.uint64], F64]:
    """:func:`place_values` of rows drawn by the bootstrap: and their keys and weights, placed.

    ``rows`` are the group codes, values and labels. The rows are placed with their row
    numbers as weights (``index``, the bits of 0, 1, … as floats; made here if not given),
    which then gather the rows' bootstrap keys and weights (empty: unweighted) into placed
    order. The placed rows' ``weights`` hold the row numbers.
    """
    codes, values, labels = rows
    if index is None:
        index = np.arange(codes.size, dtype=np.int64).view(np.float64)
    at = place_values(kernel, codes, values, labels, index, groups)
    order = at.weights.view(np.int64)
    return at, keys[order], (weights[order] if weights.size else weights)


def compact(codes: I64, space: int) -> tuple[I64, I64]:
    """Group codes renumbered 0, 1, … in the same order, and each new code's old code.

    The kernel's table of (group, binade) pairs then grows with the groups present, not with
    the codes' range (several key columns' codes side by side, a million groups).

    >>> dense, back = compact(np.array([9, 3, 9, 700]), 1024)
    >>> dense.tolist(), back.tolist()
    ([1, 0, 1, 2], [3, 9, 700])
    """
    if space <= 1 << 26:
        present = np.zeros(space, np.int64)
        present[codes] = 1
        back = np.flatnonzero(present)
        present[back] = np.arange(back.size)
        dense: I64 = present[codes]
        return dense, back
    unique, inverse = np.unique(codes, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), unique
