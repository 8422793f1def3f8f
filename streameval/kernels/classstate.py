"""The multiclass state built by compiled loops (numba), without Polars' group-by.

The state (:mod:`streameval.tasks.multiclass.state`) holds a unit's confusion rows and, per score
column k, a histogram of p_k by actual class with the loss terms each row would add were its
class k's: about a state row per row and score column at the default precision. The rows are
ordered once by (group, actual class), a "segment" (:func:`by_segment`, a counting sort), and
copied there side by side (:func:`permute`). Each segment is then read for the confusion rows
(:func:`segment_cells`) and, for each score column, its buckets are summed in a hash table
small enough to stay in cache (:func:`score_cells`): the segments' rows are few, their
buckets fewer. No table of every (group, bucket) cell is made, so the state costs rows and
memory in proportion to its rows at any precision, exact included, and any number of groups.
A state's AUC pair sums, which its finalize needs, are read the same way
(:func:`state_pairs`): its score rows ordered by (group, column), each such segment's rows
sorted by bucket and read from the highest down (:func:`segment_pairs`), on two threads.

The sums are those of the Polars query, in another order of addition (weighted sums may
differ in the last bits). The state's rows come in no particular order, as the group-by's.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EXACT_BITS
from ..spec import Spec
from ..tasks.multiclass.state import group_columns, merge_ops
from . import buffer, give_back, small_pages
from .classloops import class_terms, first_max, score_checks
from .collect import table_groups
from .loops import _key
from .sums import twice_pairs

jit = numba.njit(cache=True, nogil=True)

#: Segments (groups × classes) of a unit at most; beyond, the Polars query builds the state.
MAX_SEGMENTS = 1 << 27
#: State rows a buffer starts with (it doubles when full).
FIRST_ROWS = 1 << 16
#: A segment's hash table starts with 2**MOST_BITS slots at most (it doubles when half full).
MOST_BITS = 16
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing's multiplier


@jit
def by_segment(codes, actual, classes, segments):  # type: ignore[no-untyped-def]
    """Each row's place in (group, actual class) order, and each segment's first row.

    A counting sort: the rows of a segment keep their order. Returns ``dest`` (row i goes to
    ``dest[i]``) and ``bounds`` (segment s is ``bounds[s]`` … ``bounds[s + 1] − 1``).

    >>> dest, bounds = by_segment(np.array([1, 0, 1]), np.array([0, 1, 0], np.int32), 2, 4)
    >>> dest.tolist(), bounds.tolist()
    ([1, 0, 2], [0, 0, 1, 3, 3])
    """
    bounds = np.zeros(segments + 1, np.int64)
    for i in range(codes.size):
        bounds[codes[i] * classes + actual[i] + 1] += 1
    for s in range(segments):
        bounds[s + 1] += bounds[s]
    cursor = bounds[:-1].copy()
    dest = np.empty(codes.size, np.int64)
    for i in range(codes.size):
        s = codes[i] * classes + actual[i]
        dest[i] = cursor[s]
        cursor[s] += 1
    return dest, bounds


@jit
def permute(dest, columns, out):  # type: ignore[no-untyped-def]
    """``out[dest[i], j] = columns[j, i]``: the columns side by side, rows in ``dest`` order."""
    for i in range(dest.size):
        r = dest[i]
        for j in range(columns.shape[0]):
            out[r, j] = columns[j, i]


@numba.njit(cache=True, nogil=True, inline="always")
def _grown(array, size):  # type: ignore[no-untyped-def]
    """``array`` with room for ``size`` elements (its values kept)."""
    if array.size >= size:
        return array
    out = np.empty(max(size, 2 * array.size), array.dtype)
    out[: array.size] = array
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _grown_rows(array, size):  # type: ignore[no-untyped-def]
    """A 2-d ``array`` with room for ``size`` rows (its values kept)."""
    if array.shape[0] >= size:
        return array
    out = np.empty((max(size, 2 * array.shape[0]), array.shape[1]), array.dtype)
    out[: array.shape[0]] = array
    return out


@jit
def segment_cells(bounds, scores, predicted, weights, guesses, tolerance):  # type: ignore[no-untyped-def]
    """The confusion rows of the segments: each (segment, predicted class) filled.

    Parameters
    ----------
    bounds : ndarray of int64
        Each segment's first row (and the end), as :func:`by_segment` gives them.
    scores : 2-d ndarray of float64
        The rows' score columns side by side (rows × columns; no columns without scores),
        rows in segment order.
    predicted : ndarray of int32
        Each row's predicted class, in segment order (empty: the arg max of its scores).
    weights : ndarray of float64
        Each row's weight, in segment order (empty: unweighted).
    guesses : int
        Predicted classes (a cell's index below it).
    tolerance : float
        Scores whose sum is farther than this from 1 are unnormalized.

    Returns
    -------
    segment, guess : ndarray of int64
        Each filled cell's segment and predicted class.
    counts : 2-d ndarray of int64
        Rows, rows with a score outside [0, 1], and rows whose scores do not sum to 1.
    sums : ndarray of float64
        Σw (the row count unweighted).

    """
    most = min(scores.shape[0], (bounds.size - 1) * guesses)
    segment = np.empty(most, np.int64)
    guess = np.empty(most, np.int64)
    counts = np.zeros((3, most), np.int64)
    sums = np.zeros(most, np.float64)
    slot = np.full(guesses, -1, np.int64)
    emitted = 0
    for s in range(bounds.size - 1):
        first = emitted
        for r in range(bounds[s], bounds[s + 1]):
            q = predicted[r] if predicted.size else first_max(scores[r])
            at = slot[q]
            if at < 0:
                at = emitted
                slot[q] = at
                segment[at], guess[at] = s, q
                emitted += 1
            outside, unnormalized = score_checks(scores[r], tolerance)
            counts[0, at] += 1
            counts[1, at] += outside
            counts[2, at] += unnormalized
            sums[at] += weights[r] if weights.size else 1.0
        for at in range(first, emitted):
            slot[guess[at]] = -1
    return segment[:emitted], guess[:emitted], counts[:, :emitted], sums[:emitted]


@jit
def score_cells(bounds, scores, weights, column, options, shift):  # type: ignore[no-untyped-def]
    """Score column ``column``'s histogram rows: each (segment, bucket of p_k) filled.

    ``bounds``, ``scores`` and ``weights`` are as :func:`segment_cells`'; ``options`` holds
    the classes, ``top_k`` and the log loss's clip ``eps``. A row's bucket is its score's
    ordered key with its low ``shift`` bits cleared (0: the key, exact mode). Each segment's
    buckets are found in a hash table of twice its rows at most (it doubles as its buckets
    fill it), so it stays in cache.

    Returns
    -------
    group, actual : ndarray of int64, ndarray of int32
        Each filled cell's group and actual class (its segment).
    bucket : ndarray of int64
        Its bucket key.
    counts : ndarray of int64
        Its rows.
    sums : 2-d ndarray of float64
        Σw, and Σw·term of the log loss, the Brier score, the top-k hit and the hinge loss,
        were the rows' class column ``column``'s
        (:func:`streameval.tasks.multiclass.state.state_query`); a row a sum.

    """
    classes, top_k, eps = options
    size = FIRST_ROWS
    bucket = np.empty(size, np.int64)
    segment = np.empty(size, np.int64)
    counts = np.empty(size, np.int64)
    sums = np.empty((size, 5), np.float64)  # a cell's sums side by side
    table = np.full(1 << MOST_BITS, -1, np.int64)
    ordered = scores.view(np.int64)  # (the scores' bits)
    emitted = 0
    for s in range(bounds.size - 1):
        begin, end = bounds[s], bounds[s + 1]
        if begin == end:
            continue
        if emitted + (end - begin) > bucket.size:
            want = emitted + (end - begin)
            bucket, segment, counts = (
                _grown(bucket, want),
                _grown(segment, want),
                _grown(counts, want),
            )
            sums = _grown_rows(sums, want)
        first = emitted
        bits = 3  # the table: 2**bits slots, at most half of them filled
        while bits < MOST_BITS and 1 << bits < 2 * (end - begin):
            bits += 1
        table[: 1 << bits] = -1
        for r in range(begin, end):
            key = (_key(ordered[r, column]) >> shift) << shift
            h = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))
            mask = (1 << bits) - 1
            while True:
                at = table[h]
                if at < 0 or bucket[at] == key:
                    break
                h = (h + 1) & mask
            if at < 0:
                at = emitted
                table[h] = at
                bucket[at], segment[at], counts[at] = key, s, 0
                for j in range(5):
                    sums[at, j] = 0.0
                emitted += 1
                if 2 * (emitted - first) > (1 << bits):  # half full: twice the slots
                    bits += 1
                    if table.size < 1 << bits:
                        table = np.empty(1 << bits, np.int64)
                    table[: 1 << bits] = -1
                    mask = (1 << bits) - 1
                    for b in range(first, emitted):
                        g = np.int64((np.uint64(bucket[b]) * _GOLDEN) >> np.uint64(64 - bits))
                        while table[g] >= 0:
                            g = (g + 1) & mask
                        table[g] = b
            loss, brier, hit, hinge = class_terms(scores[r], column, top_k, eps)
            w = weights[r] if weights.size else 1.0
            counts[at] += 1
            sums[at, 0] += w
            sums[at, 1] += w * loss
            sums[at, 2] += w * brier
            sums[at, 3] += w * hit
            sums[at, 4] += w * hinge
    group = np.empty(emitted, np.int64)
    actual = np.empty(emitted, np.int32)
    for at in range(emitted):
        group[at] = segment[at] // classes
        actual[at] = segment[at] % classes
    return group, actual, bucket[:emitted], counts[:emitted], sums[:emitted].T.copy()


#: The state's columns' types (beyond the keys and the float sums).
_TYPES: dict[str, Any] = {
    "actual": pl.Int32, "predicted": pl.Int32, "column": pl.Int32, "bucket": pl.Int64,
    "n": pl.Int64, "n_outside": pl.Int64, "n_unnormalized": pl.Int64,
}  # fmt: skip


def state_table(
    keys: list[pl.Series],
    codes: npt.NDArray[np.int64],
    size: int,
    rows: tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[np.float64], npt.NDArray[Any]],
    spec: Spec,
    schema: pl.Schema,
    constants: Mapping[str, Any],
    limits: tuple[float, float],
) -> pl.DataFrame | None:
    """A unit's multiclass state table, as the Polars query gives it (None: too many segments).

    Parameters
    ----------
    keys : list of Series
        The unit's varying keys, a row per group code.
    codes : ndarray of int64
        Each row's group code, 0 … ``size`` − 1.
    size : int
        The groups.
    rows : tuple of ndarray
        The actual classes, the predicted classes (empty: the arg max of the scores), the
        score columns (columns × rows) and the weights (empty: unweighted).
    spec, schema, constants
        The task's spec, the source's schema and the unit's constant keys.
    limits : (float, float)
        The log loss's clip ``eps`` and the tolerance of the scores' sum.

    """
    actual, predicted, matrix, weights = rows
    classes, columns = len(spec.classes), matrix.shape[0]
    if size * classes > MAX_SEGMENTS:
        return None
    eps, tolerance = limits
    with small_pages():
        dest, bounds = by_segment(codes, actual, classes, size * classes)
        scores = buffer(codes.size * columns, np.float64).reshape(codes.size, columns)
        permute(dest, matrix, scores)
        predicted, weights = _moved(dest, predicted), _moved(dest, weights)
        guesses = classes if predicted.size else max(columns, 1)
        confusion = segment_cells(bounds, scores, predicted, weights, guesses, tolerance)
        shift = 0 if spec.exact else max(EXACT_BITS - spec.precision, 0)

        def histogram(k: int) -> tuple[npt.NDArray[Any], ...]:
            options = (classes, spec.top_k, eps)
            out: tuple[npt.NDArray[Any], ...] = score_cells(
                bounds, scores, weights, k, options, shift
            )
            return out

        with ThreadPoolExecutor(2) as pool:
            histograms = list(pool.map(histogram, range(columns)))
    give_back(scores)
    parts = [_confusion_rows(keys, classes, confusion, spec)]
    parts += [_score_rows(keys, k, part, spec) for k, part in enumerate(histograms)]
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    order = [*spec.keys, *group_columns(spec), *merge_ops(spec)]
    return pl.concat(parts).with_columns(fixed).select(order)


def _moved(dest: npt.NDArray[np.int64], values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``values`` in segment order (empty stays empty)."""
    if not values.size:
        return values
    out = np.empty((values.size, 1), values.dtype)
    permute(dest, values.reshape(1, -1), out)
    return out.reshape(-1)


def _rows(
    keys: list[pl.Series],
    cells: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]],
    values: dict[str, Any],
    spec: Spec,
) -> pl.DataFrame:
    """State rows of the cells (their groups and actual classes): ``values``, 0 elsewhere."""
    group, actual = cells
    frame: dict[str, Any] = {s.name: s.gather(group) for s in keys}
    frame["actual"] = actual
    for name in group_columns(spec)[1:]:
        if name not in values:
            frame[name] = pl.repeat(None, group.size, dtype=_TYPES[name], eager=True)
    frame.update(values)
    for name in merge_ops(spec):
        if name not in frame:
            kind = np.int64 if _TYPES.get(name) == pl.Int64 else np.float64
            frame[name] = np.zeros(group.size, kind)
    return pl.DataFrame(frame).select(
        *(s.name for s in keys), *group_columns(spec), *merge_ops(spec)
    )


def _confusion_rows(
    keys: list[pl.Series], classes: int, cells: tuple[npt.NDArray[Any], ...], spec: Spec
) -> pl.DataFrame:
    """The confusion rows (:func:`segment_cells`' cells) as state rows."""
    segment, guess, counts, sums = cells
    values: dict[str, Any] = {"predicted": guess.astype(np.int32), "n": counts[0]}
    if spec.weighted:
        values["w"] = sums
    if spec.scores:
        values.update(n_outside=counts[1], n_unnormalized=counts[2])
    actual = (segment % classes).astype(np.int32)
    return _rows(keys, (segment // classes, actual), values, spec)


def _score_rows(
    keys: list[pl.Series], column: int, cells: tuple[npt.NDArray[Any], ...], spec: Spec
) -> pl.DataFrame:
    """Score column ``column``'s histogram rows (:func:`score_cells`' cells) as state rows."""
    group, actual, bucket, counts, sums = cells
    values: dict[str, Any] = {
        "column": np.full(group.size, column, np.int32),
        "bucket": bucket,
        "n": counts,
    }
    if spec.weighted:
        values["w"] = sums[0]
    values.update(log_loss=sums[1], brier=sums[2], top_k=sums[3], hinge=sums[4])
    return _rows(keys, (group, actual), values, spec)


@jit
def segment_pairs(bounds, keys, actual, weights, segments, shape):  # type: ignore[no-untyped-def]
    """The AUCs' pair sums of segments ``segments[0]`` … ``segments[1] − 1`` of a state.

    The segments are (group, column) pairs (:func:`by_segment`); each one's rows are sorted
    by bucket (a merge sort of its keys) and read from the highest bucket down: each row of
    class b ≠ a (the segment's column) adds w·(class a's weight above its bucket + ½ in it)
    to ``num[b]``, w·(class a's weight in its bucket) to ``ties[b]`` and w to ``mass[b]``,
    as :func:`streameval.tasks.multiclass.pairs._pairwise` sums them. ``shape`` holds the score
    columns and the classes.

    Returns
    -------
    group, a, b : ndarray of int64
        Each (group, column, class) with rows, b ≠ a.
    sums : 2-d ndarray of float64
        Its ``num``, ``ties``, ``mass``, and its group's weight of class a in column a.

    """
    columns, classes = shape
    first, last = segments
    most = bounds[last] - bounds[first]
    group = np.empty(most, np.int64)
    a_out = np.empty(most, np.int64)
    b_out = np.empty(most, np.int64)
    sums = np.empty((4, most), np.float64)
    num, ties, mass = np.zeros(classes), np.zeros(classes), np.zeros(classes)
    seen = np.zeros(classes, np.bool_)
    listed = np.empty(classes, np.int64)
    emitted = 0
    for s in range(first, last):
        begin, end = bounds[s], bounds[s + 1]
        if begin == end:
            continue
        a = s % columns
        rank = begin + np.argsort(keys[begin:end], kind="mergesort")
        above = 0.0
        found = 0
        t = rank.size - 1
        while t >= 0:  # a bucket's rows, from the highest bucket down
            key = keys[rank[t]]
            u = t
            own = 0.0
            while u >= 0 and keys[rank[u]] == key:
                if actual[rank[u]] == a:
                    own += weights[rank[u]]
                u -= 1
            for v in range(u + 1, t + 1):
                b = actual[rank[v]]
                if b != a:
                    w = weights[rank[v]]
                    num[b] += 0.5 * twice_pairs(own, w, above)
                    ties[b] += w * own
                    mass[b] += w
                    if not seen[b]:
                        seen[b] = True
                        listed[found] = b
                        found += 1
            above += own
            t = u
        for f in range(found):
            b = listed[f]
            group[emitted], a_out[emitted], b_out[emitted] = s // columns, a, b
            sums[0, emitted], sums[1, emitted], sums[2, emitted] = num[b], ties[b], mass[b]
            sums[3, emitted] = above
            num[b], ties[b], mass[b], seen[b] = 0.0, 0.0, 0.0, False
            emitted += 1
    return group[:emitted], a_out[:emitted], b_out[:emitted], sums[:, :emitted]


def state_pairs(table: pl.DataFrame, spec: Spec) -> pl.DataFrame | None:
    """The pair sums of a multiclass state's score rows, by the compiled loops.

    The frame of :func:`streameval.tasks.multiclass.pairs._pairwise` (its rows in another order, its
    sums added in another order); None where the loops are off or a key has no code.
    """
    mass = pl.col("w") if spec.weighted else pl.col("n").cast(pl.Float64)
    rows = table.lazy().filter(pl.col("column").is_not_null())
    wanted = [pl.col("column", "actual", "bucket"), mass.alias("_w")]
    coded = table_groups(rows, list(spec.keys), wanted)
    if coded is None:
        return None
    keys, group, size, frame = coded
    column, actual, bucket, weight = (
        frame[c].to_numpy() for c in ("column", "actual", "bucket", "_w")
    )
    segments, columns = size * len(spec.scores), len(spec.scores)
    with small_pages():
        dest, bounds = by_segment(group, column, columns, segments)
        keys_in_order, classes, weights = (_moved(dest, x) for x in (bucket, actual, weight))
        del column, actual, bucket, weight, frame, dest
        half = int(np.searchsorted(bounds, bounds[-1] // 2))  # two halves of the rows
        shape = (columns, len(spec.classes))
        with ThreadPoolExecutor(2) as pool:
            parts = list(
                pool.map(
                    lambda part: segment_pairs(
                        bounds, keys_in_order, classes, weights, part, shape
                    ),
                    [(0, half), (half, segments)],
                )
            )
    at, a, b = (np.concatenate([part[i] for part in parts]) for i in range(3))
    sums = np.concatenate([part[3] for part in parts], axis=1)
    out: dict[str, Any] = {s.name: s.gather(at) for s in keys}
    out["a"], out["b"] = a.astype(np.int32), b.astype(np.int32)
    out.update(_num=sums[0], _ties=sums[1], _N=sums[2], _P=sums[3])
    return pl.DataFrame(out)
