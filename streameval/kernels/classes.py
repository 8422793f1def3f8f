"""The multiclass kernel: a unit's confusion cells and AUC pair sums straight from its rows.

A multiclass state holds, besides its confusion rows, a score histogram per class column
(about one state row per row and column at the default precision). The metric table needs
far less of it: per group, the confusion cells with the rows' loss terms, and per score
column a and class b the pair sums behind every AUC (:mod:`streameval.tasks.multiclass.pairs`).
This kernel computes those from the unit's rows (:mod:`.classloops`): the confusion cells in one
pass, then each score column's rows placed by (group, binade) as the binary kernel places
them and read bucket by bucket. The metric table then comes from the confusion rows as a
state (:class:`~streameval.state.State`) with the pair sums given.

Where it applies (:meth:`ClassRows.tables`): bucketed precision up to
:data:`.compiled.MAX_WINDOW_BITS`, fewer than 2,048 classes, and at most :data:`MAX_CELLS`
confusion and pair cells per unit; elsewhere the metric table comes from the unit's state,
which the same collected rows give (:meth:`ClassRows.state`, :mod:`.classstate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EPS
from ..codes import KeyCode
from ..resample_draw import REPLICATE, REPLICATE_TYPE, draw_limits
from ..spec import Spec
from ..tasks.multiclass.state import group_columns, merge_ops
from . import buffer, chunks, classloops, give_back, small_pages
from .classstate import state_table
from .collect import key_exprs, unit_groups
from .compiled import (
    MAX_WINDOW_BITS,
    REPLICATE_BATCH,
    compact,
    loops,
    place_keyed,
    place_values,
    replicate_batches,
    replicate_salts,
)
from .staged import Staged

#: Cells of one unit at most: groups × classes × predicted classes, and groups × score
#: columns × classes (the pair sums).
MAX_CELLS = 1 << 24
#: Confusion and pair cells of a batch of replicates at most.
REPLICATE_CELLS = 1 << 21
#: Threads summing the score columns (the reading thread is a third).
WORKERS = 2
#: Classes at most (a class index shares a placed row's word with the score's 52 low bits).
MAX_CLASSES = 2047
_TOLERANCE = 1e-8 + math.sqrt(EPS)  # as :func:`streameval.tasks.multiclass.state._row_counts`


@dataclass
class ClassRows:
    """A unit's collected columns: key codes, ``_a``, ``_q`` (predicted), ``_c0``…, ``_w``."""

    frame: pl.DataFrame
    key_codes: list[KeyCode]
    weighted: bool
    predicted: bool
    columns: int
    keyed: bool = False

    def staged(self, spec: Spec) -> Staged:
        """The rows, to be summed into the unit's metric table or state (:class:`ClassTables`)."""
        return ClassTables(self, spec)

    def tables(self, spec: Spec) -> tuple[pl.DataFrame, pl.DataFrame] | None:
        """The unit's confusion rows (a state table) and its pair sums, or None (no kernel).

        Parameters
        ----------
        spec : Spec
            The multiclass spec, whose keys are the unit's varying keys only.

        Returns
        -------
        (DataFrame, DataFrame) or None
            The confusion rows as :func:`streameval.tasks.multiclass.state.state_query` gives
            them, with the rows' loss sums on them; and per group, score column ``a`` and
            class ``b`` ≠ ``a`` present in the group, ``_num``, ``_ties``, ``_N`` and ``_P``
            as :func:`streameval.tasks.multiclass.pairs._pairwise` gives them.

        """
        prepared = self._prepared(spec)
        if prepared is None:
            return None
        kernel, keys, codes, shape, frame = prepared
        size, classes, _ = shape
        names, (actual, predicted, weights) = self._arrays(frame)
        num = np.zeros((self.columns, size, classes), np.float64)
        ties = np.zeros((self.columns, size, classes), np.float64)
        with ThreadPoolExecutor(WORKERS) as pool:
            # the cells read each row's scores from the columns copied side by side; a
            # column's pairs read its own column (the frame's memory)
            cells = pool.submit(
                _cells, codes, (actual, predicted, frame.select(names), weights), spec, shape
            )
            columns = []
            for k, name in enumerate(names):
                rows = (codes, frame[name].to_numpy(), actual, weights)
                job = (kernel, rows, size, spec.precision, k, (num, ties))
                columns.append(pool.submit(_column, *job))
            counts, sums = cells.result()
            for done in columns:
                done.result()
        del frame
        confusion = _confusion(keys, counts, sums, spec, shape)
        present = counts[0].reshape(shape).sum(axis=2)
        mass = sums[0].reshape(shape).sum(axis=2)
        if not self.columns:
            return confusion, _pairs(keys, None, present, mass)
        return confusion, _pairs(keys, (num, ties), present, mass)

    def replicated(self, spec: Spec, replicates: int) -> tuple[pl.DataFrame, pl.DataFrame] | None:
        """:meth:`tables` of bootstrap replicates 0 … ``replicates`` (key ``replicate`` last).

        The rows must have been collected with their keys (``_k``). Each score column is
        placed once; each batch of replicates reads the rows once
        (:func:`.classloops.replicate_cells`, :func:`.classloops.replicate_pairs`), on two
        threads. A group a replicate draws no row of has no row there. None where the kernel
        does not apply (as :meth:`tables`, or rows read without keys).
        """
        prepared = self._prepared(spec) if self.keyed else None
        if prepared is None:
            return None
        kernel, keys, codes, shape, frame = prepared
        size, classes, guesses = shape
        names, (actual, predicted, weights) = self._arrays(frame)
        row_keys = frame["_k"].to_numpy()
        limits = draw_limits()
        index = np.arange(codes.size, dtype=np.int64).view(np.float64)
        with small_pages():
            scores = _columns(frame, names, codes.size)
            placed = [
                place_keyed(kernel, (codes, scores[k], actual), weights, row_keys, size, index)
                for k in range(len(names))
            ]
        del frame
        cells = size * classes * max(guesses, self.columns, 1)
        batches = replicate_batches(
            replicates, max(1, min(REPLICATE_BATCH, REPLICATE_CELLS // cells))
        )
        options = (spec.top_k, EPS, _TOLERANCE)

        def batch(members: list[int]) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
            salts = replicate_salts(members)
            drawn = row_keys if members[0] else row_keys[:0]
            rows = (codes, actual, predicted, scores, weights, drawn)
            counts, sums = classloops.replicate_cells(*rows, options, shape, salts, limits)
            num = np.zeros((len(members), self.columns, size, classes), np.float64)
            ties = np.zeros_like(num)
            for k, (at, at_keys, at_weights) in enumerate(placed):
                drawn = at_keys if members[0] else at_keys[:0]
                at_rows = (at.words, drawn, at_weights, at.bounds, at.occupied, at.tops)
                sums_k = (num[:, k], ties[:, k])
                classloops.replicate_pairs(*at_rows, spec.precision, k, salts, limits, *sums_k)
            out = []
            for b, r in enumerate(members):
                replicate = pl.Series(REPLICATE, np.full(size, r), REPLICATE_TYPE)
                with_replicate = [*keys, replicate]
                confusion = _confusion(with_replicate, counts[b], sums[b], spec, shape)
                present = counts[b, 0].reshape(shape).sum(axis=2)
                mass = sums[b, 0].reshape(shape).sum(axis=2)
                pair_sums = (num[b], ties[b]) if self.columns else None
                out.append((confusion, _pairs(with_replicate, pair_sums, present, mass)))
            return out

        with small_pages(), ThreadPoolExecutor(2) as pool:
            done = [part for parts in pool.map(batch, batches) for part in parts]
        for at, *_ in placed:
            at.give_back()
        give_back(scores)
        return pl.concat([c for c, _ in done]), pl.concat([p for _, p in done])

    def _arrays(
        self, frame: pl.DataFrame
    ) -> tuple[list[str], tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[Any]]]:
        """The score columns' names, and the actual and predicted classes and the weights.

        The predicted classes (when the arg max of the scores gives them) and the weights
        (unweighted) are empty.
        """
        names = [f"_c{k}" for k in range(self.columns)]
        actual = frame["_a"].to_numpy()
        predicted = frame["_q"].to_numpy() if self.predicted else np.zeros(0, np.int32)
        weights = frame["_w"].to_numpy() if self.weighted else np.zeros(0)
        return names, (actual, predicted, weights)

    def state(
        self, spec: Spec, schema: pl.Schema, constants: Mapping[str, Any]
    ) -> pl.DataFrame | None:
        """The unit's state table (:func:`.classstate.state_table`; None: not this kernel's)."""
        if loops() is None:
            return None
        keys, codes, size, frame = self._groups()
        names, (actual, predicted, weights) = self._arrays(frame)
        with small_pages():
            matrix = _columns(frame, names, codes.size)
        del frame
        rows = (actual, predicted, matrix, weights)
        table = state_table(keys, codes, size, rows, spec, schema, constants, (EPS, _TOLERANCE))
        give_back(matrix)
        return table

    def _groups(self) -> tuple[list[pl.Series], npt.NDArray[np.int64], int, pl.DataFrame]:
        """The key columns (a row a group), the rows' group codes, the groups, the frame's rest."""
        groups, frame = unit_groups(self.frame, self.key_codes)
        codes, back = compact(groups.codes.view(np.int64), 1 << groups.bits)
        return groups.decode(back.view(np.uint64)), codes, back.size, frame

    def _prepared(
        self, spec: Spec
    ) -> (
        tuple[
            ModuleType, list[pl.Series], npt.NDArray[np.int64], tuple[int, int, int], pl.DataFrame
        ]
        | None
    ):
        """The compiled loops, key columns, group codes, cells' shape and the frame's rest.

        None where the kernel does not apply.
        """
        kernel = loops()
        classes = len(spec.classes)
        guesses = classes if self.predicted else max(self.columns, 1)
        if kernel is None or self.frame.height == 0 or classes > MAX_CLASSES:
            return None
        if self.columns and (spec.exact or spec.precision > MAX_WINDOW_BITS):
            return None
        keys, codes, size, frame = self._groups()
        if size * classes * max(guesses, self.columns) > MAX_CELLS:
            return None
        return kernel, keys, codes, (size, classes, guesses), frame


@dataclass
class ClassTables(Staged):
    """Collected rows whose metric table or state the summing thread computes (no runs)."""

    rows: ClassRows
    spec: Spec

    def _finish(self) -> None:
        return None

    def grouped(self, spec: Spec, thresholds: list[float], variance: bool = False) -> None:
        """No grouped frame: a multiclass unit's metrics come from :meth:`metrics`."""
        return None

    def table(self, schema: pl.Schema, constants: Mapping[str, Any]) -> pl.DataFrame | None:
        """The unit's state table, as the Polars query gives it (None: not this kernel's)."""
        return self.rows.state(self.spec, schema, constants)

    def sums(
        self, spec: Spec, options: Mapping[str, Any]
    ) -> tuple[pl.DataFrame, pl.DataFrame] | None:
        """The unit's confusion rows and pair sums (None: not here)."""
        return self.rows.tables(spec)

    def replicated_sums(
        self, spec: Spec, options: Mapping[str, Any], replicates: int
    ) -> tuple[pl.DataFrame, pl.DataFrame] | None:
        """The confusion rows and pair sums of bootstrap replicates 0 … ``replicates``."""
        if options.get("metrics"):
            return None
        return self.rows.replicated(spec, replicates)


def _cells(
    codes: npt.NDArray[np.int64],
    rows: tuple[npt.NDArray[Any], npt.NDArray[Any], pl.DataFrame, npt.NDArray[Any]],
    spec: Spec,
    shape: tuple[int, int, int],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The confusion cells' counts and sums (:func:`.classloops.row_cells`)."""
    actual, predicted, scores, weights = rows
    with small_pages():
        matrix = _columns(scores, scores.columns, codes.size)
        out: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] = classloops.row_cells(
            codes, actual, predicted, matrix, weights, spec.top_k, EPS, _TOLERANCE, shape
        )
    give_back(matrix)
    return out


def _columns(frame: pl.DataFrame, names: list[str], rows: int) -> npt.NDArray[np.float64]:
    """The score columns side by side (columns × ``rows``), in a reused buffer.

    Without columns the matrix is 0 × ``rows`` (a frame of no columns has no height), so the
    loops' ``scores[:, i]`` is an empty column, never an index past the end.

    Each column is copied chunk by chunk into its row of the buffer (a row-major copy would
    write every value to a stride of its own, and a fresh array's pages are faulted in).
    """
    out: npt.NDArray[np.float64] = buffer(len(names) * rows, np.float64)
    out = out.reshape(len(names), rows)
    for k, name in enumerate(names):
        for start, (values,) in chunks(frame, [name]):
            out[k, start : start + values.size] = values
    return out


def _column(
    kernel: ModuleType,
    rows: tuple[npt.NDArray[Any], ...],
    size: int,
    p: int,
    column: int,
    out: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
) -> None:
    """Place one score column's rows by (group, binade) and add its pair sums to ``out``."""
    codes, score, actual, weights = rows
    placed = place_values(kernel, codes, score, actual, weights, size)
    num, ties = out
    with small_pages():
        classloops.pair_sums(
            placed.words, placed.weights, placed.bounds, placed.occupied, placed.tops, p,
            column, num[column], ties[column],
        )  # fmt: skip
    placed.give_back()


def _confusion(
    keys: list[pl.Series],
    counts: npt.NDArray[np.int64],
    sums: npt.NDArray[np.float64],
    spec: Spec,
    shape: tuple[int, int, int],
) -> pl.DataFrame:
    """The confusion rows of the filled cells, in the state table's columns and types."""
    _, classes, guesses = shape
    filled = np.flatnonzero(counts[0])
    group = filled // (classes * guesses)
    columns: dict[str, Any] = {s.name: s.gather(group) for s in keys}
    columns["actual"] = pl.Series((filled // guesses % classes).astype(np.int32))
    columns["predicted"] = pl.Series((filled % guesses).astype(np.int32))
    columns["column"] = pl.repeat(None, filled.size, dtype=pl.Int32, eager=True)
    columns["bucket"] = pl.repeat(None, filled.size, dtype=pl.Int64, eager=True)
    values: dict[str, npt.NDArray[Any]] = {"n": counts[0][filled]}
    if spec.weighted:
        values["w"] = sums[0][filled] + 0.0
    if spec.scores:
        values.update(log_loss=sums[1][filled], brier=sums[2][filled], top_k=sums[3][filled])
        values["hinge"] = sums[4][filled]
        values.update(n_outside=counts[1][filled], n_unnormalized=counts[2][filled])
    columns.update({name: values[name] for name in merge_ops(spec)})
    return pl.DataFrame(columns).select(*spec.keys, *group_columns(spec), *merge_ops(spec))


def _pairs(
    keys: list[pl.Series],
    sums: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None,
    present: npt.NDArray[np.int64],
    mass: npt.NDArray[np.float64],
) -> pl.DataFrame:
    """The pair sums of each group, score column a and class b ≠ a with rows in the group."""
    if sums is None:
        schema: dict[str, Any] = {s.name: s.dtype for s in keys}
        schema |= {"a": pl.Int32, "b": pl.Int32}
        schema |= dict.fromkeys(("_num", "_ties", "_N", "_P"), pl.Float64)
        return pl.DataFrame(schema=schema)
    num, ties = sums
    columns, size, classes = num.shape
    a, g, b = (x.ravel() for x in np.indices(num.shape))
    keep = (a != b) & (present[g, b] > 0)
    a, g, b = a[keep], g[keep], b[keep]
    shared = min(columns, classes)
    own_mass = np.zeros((size, columns))  # a column's class weight (0: a column of no class)
    own_mass[:, :shared] = mass[:, :shared]
    frame: dict[str, Any] = {s.name: s.gather(g) for s in keys}
    frame["a"] = pl.Series(a.astype(np.int32))
    frame["b"] = pl.Series(b.astype(np.int32))
    frame["_num"] = num[a, g, b] * 0.5
    frame["_ties"] = ties[a, g, b]
    frame["_N"] = mass[g, b]
    frame["_P"] = own_mass[g, a]
    return pl.DataFrame(frame)


def collect_classes(
    lf: pl.LazyFrame,
    keys: list[str],
    codes: Mapping[str, KeyCode | None],
    rows: tuple[pl.Expr, pl.Expr | None, list[pl.Expr], pl.Expr | None, pl.Expr, pl.Expr | None],
    collect: Callable[[pl.LazyFrame, list[pl.Expr]], pl.DataFrame],
    invalid: Callable[[], Exception],
) -> ClassRows | None:
    """The columns the multiclass kernel reads of the rows of ``lf`` (None: no key code).

    ``rows`` holds the actual class index, the predicted class index (None: the arg max of
    the scores), the score columns as Float64, the weight (or None), the bad-row flag and the
    row key of bootstrap draws (or None; collected as ``_k``).
    """
    actual, predicted, scores, weight, bad, row_key = rows
    coded = key_exprs(keys, codes)
    if coded is None:
        return None
    key_codes, exprs = coded
    exprs.append(pl.when(~bad).then(actual).alias("_a"))
    if predicted is not None:
        exprs.append(predicted.alias("_q"))
    exprs += [p.alias(f"_c{k}") for k, p in enumerate(scores)]
    if weight is not None:
        exprs.append(weight.alias("_w"))
    if row_key is not None:
        exprs.append(row_key.alias("_k"))
    frame = collect(lf, exprs)
    if frame["_a"].null_count():
        raise invalid()
    weighted, given = weight is not None, predicted is not None
    return ClassRows(frame, key_codes, weighted, given, len(scores), row_key is not None)
