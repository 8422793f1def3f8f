"""A unit's rows collected for the binary kernels: coded by group, then counted or sorted.

:func:`collect_unit` reads a unit's key codes, label, score and weight; :class:`Collected`
codes its groups and :func:`choose` picks the kernel: rows counted into dense cells
(:func:`dense_cells`, the compiled loops) in bucketed mode, or else sorted into runs
(:class:`Sorting`, :mod:`.runs`). :func:`state_runs` reads a state table back as runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EXACT_BITS
from ..codes import KeyCode, hashed_key, key_code
from ..ordered import ORDERED
from ..spec import Spec
from ..tasks.binary.state import labelled_columns, with_unlabeled
from . import chunks, compiled, path, small_pages
from .buckets import bucketed_state
from .compiled import CompiledCells, compiled_cells, loops
from .groups import GroupCodes
from .hashcodes import hashed_codes, hashed_exprs
from .runs import U64, Runs, runs_state, sorted_runs
from .scorekeys import ScoreField, pack
from .staged import Staged

Collect = Callable[[pl.LazyFrame, list[pl.Expr]], pl.DataFrame]


def collect_unit(
    lf: pl.LazyFrame,
    keys: list[str],
    codes: Mapping[str, KeyCode | None],
    rows: tuple[pl.Expr, pl.Expr, pl.Expr | None, pl.Expr, pl.Expr | None, pl.Expr | None],
    collect: Collect,
    invalid: Callable[[], Exception],
) -> Collected | Unlabeled | None:
    """The columns the sort needs of the rows of ``lf`` (None when a key has no code).

    Parameters
    ----------
    lf : LazyFrame
        The unit's rows.
    keys : list of str
        Group keys that vary over ``lf``.
    codes : mapping of str to KeyCode or None
        Integer code of each key column (None: not codable, so no sort path).
    rows : tuple of Expr
        The label as Boolean, the score as Float64, the weight (or None), the bad-row flag,
        the row key of bootstrap draws (or None; collected as ``_k``) and, with optional
        labels, the flag of rows without a label (or None).
    collect : callable
        ``collect(lf, exprs)`` collects the columns ``exprs`` of ``lf`` (with the source's
        error handling; the shards of a source read once hand their rows over instead).
    invalid : callable
        The error to raise when some rows are bad.

    Returns
    -------
    Collected, Unlabeled or None
        :class:`Unlabeled` with optional labels: the rows with and without a label apart.

    """
    label, score, weight, bad, row_key, unknown = rows
    coded = key_exprs(keys, codes)
    if coded is None:
        return None
    key_codes, exprs = coded
    exprs += [
        label.fill_null(False).cast(pl.UInt8).alias("_y"),  # 0/1 bytes: read as bool
        pl.when(~bad).then(score).alias("_p"),
    ]
    if weight is not None:
        exprs.append(weight.alias("_w"))
    if row_key is not None:
        exprs.append(row_key.alias("_k"))
    if unknown is not None:
        exprs.append(unknown.alias("_u"))
    frame = collect(lf, exprs)
    if frame["_p"].null_count():
        raise invalid()
    if unknown is None:
        return Collected(frame, key_codes, weight is not None)
    # the rows without a label are counted apart, as positives: their weight and rows
    known = frame.filter(~pl.col("_u")).drop("_u")
    unlabeled = frame.filter(pl.col("_u")).drop("_u").with_columns(pl.lit(1, pl.UInt8).alias("_y"))
    weighted = weight is not None
    return Unlabeled(
        Collected(known, key_codes, weighted),
        Collected(unlabeled, key_codes, weighted),
        frame.height,
    )


def key_exprs(
    keys: list[str], codes: Mapping[str, KeyCode | None]
) -> tuple[list[KeyCode], list[pl.Expr]] | None:
    """The key columns' codes and the columns a unit collects for them (``_g0``, …).

    String keys (and keys without a small integer code) are collected as two hashes and the
    values (:func:`.hashcodes.hashed_exprs`); None when a key has no code, or needs the
    hashes while the compiled loops are switched off (by the tests: the Polars path).
    """
    key_codes = [codes.get(k) for k in keys]
    if any(c is None for c in key_codes):
        return None
    hashing = compiled.loops() is not None
    if not hashing and any(c is not None and c.decode is None for c in key_codes):
        return None
    exprs: list[pl.Expr] = []
    out: list[KeyCode] = []
    for i, c in enumerate(key_codes):
        assert c is not None
        out.append(c)
        exprs += (
            hashed_exprs(c, i) if hashing and c.text is not None else [c.encode.alias(f"_g{i}")]
        )
    return out, exprs


def unit_groups(frame: pl.DataFrame, key_codes: list[KeyCode]) -> tuple[GroupCodes, pl.DataFrame]:
    """The unit's group codes (:func:`key_exprs` columns), and the frame without those columns."""
    raw: list[Any] = []
    decoders, names = [], []
    ranges: list[tuple[int, int] | None] = []
    for i, code in enumerate(key_codes):
        names.append(f"_g{i}")
        if f"_h{i}" in frame.columns:  # String key collected as hashes
            loops = compiled.loops()
            assert loops is not None
            codes, decode, span = hashed_codes(frame, code, i, loops)
            raw.append(codes)
            decoders.append(decode)
            ranges.append(span)
            names += [f"_h{i}", f"_s{i}"]
        else:
            assert code.decode is not None  # (hashed-only keys are hashed above)
            raw.append(chunks(frame, [f"_g{i}"]))
            decoders.append(code.decode)
            ranges.append(None)
    with small_pages():
        groups = GroupCodes.build(decoders, raw, frame.height, ranges)
        del raw
        # the codes hold them now (indexing keeps the columns' chunks: drop would align them)
        return groups, frame[[c for c in frame.columns if c not in names]]


def table_codes(
    lf: pl.LazyFrame, keys: list[str], columns: list[pl.Expr]
) -> tuple[GroupCodes, pl.DataFrame] | None:
    """A table's rows' group codes, and ``columns`` collected with the key columns' codes.

    None where a key has no code or the compiled loops are off.
    """
    if compiled.loops() is None:
        return None
    schema = lf.collect_schema()
    coded = key_exprs(keys, {k: key_code(k, schema[k]) or hashed_key(k, schema[k]) for k in keys})
    if coded is None:
        return None
    key_codes, exprs = coded
    return unit_groups(
        lf.select(*exprs, *columns).collect(engine="in-memory", optimizations=ORDERED), key_codes
    )


def table_groups(
    lf: pl.LazyFrame, keys: list[str], columns: list[pl.Expr]
) -> tuple[list[pl.Series], npt.NDArray[np.int64], int, pl.DataFrame] | None:
    """A table's rows coded by group: the keys (a row a group), the codes, the groups, ``columns``.

    The codes are 0 … groups − 1 (every row 0 without keys): :func:`table_codes` renumbered.
    """
    coded = table_codes(lf, keys, columns)
    if coded is None:
        return None
    groups, frame = coded
    codes, back = compiled.compact(groups.codes.view(np.int64), 1 << groups.bits)
    return groups.decode(back.view(np.uint64)), codes, back.size, frame


def packed_rows(
    table: pl.DataFrame, keys: list[str], columns: list[str]
) -> tuple[GroupCodes, pl.DataFrame, tuple[ScoreField, U64, int, int]] | None:
    """A state table's rows coded by group, each packed with its bucket into one word.

    Returns the codes, the ``bucket`` and ``columns`` collected, and :func:`.scorekeys.pack`'s
    field, words and key range; None where the keys have no code or the words do not pack.
    """
    coded = table_codes(table.lazy(), keys, [pl.col("bucket", *columns)])
    if coded is None:
        return None
    groups, frame = coded
    packed = pack(groups.codes, frame["bucket"].to_numpy(), groups.bits)
    return None if packed is None else (groups, frame, packed)


def pairs_fit(positives: int, negatives: int) -> bool:
    """Whether unweighted runs' Int64 pair sums hold P·N (a merged state's may pass it).

    >>> pairs_fit(10, 10), pairs_fit(2**31, 2**31)
    (True, False)
    """
    return 2 * positives * negatives < 1 << 62


def state_runs(table: pl.DataFrame, spec: Spec) -> Runs | None:
    """A binary state table read back as runs (sorted by group, then bucket), for its metrics.

    The inverse of :func:`runs_state` (bucketed: of :func:`.dense.as_runs`' buckets): the
    table's rows are coded by group, packed with their bucket key and sorted; rows of one
    (group, bucket), which a table concatenated without merging may hold, are summed. None
    for an empty table, one without a stored column, keys without a code, keys and buckets
    too wide to pack, or unweighted counts whose pairs could pass an Int64 (states merged
    over billions of rows: the Polars finalize scales them as floats).
    """
    stored = labelled_columns(spec)  # (the metrics' rows alone)
    if not table.height or any(c not in table.columns for c in stored):
        return None  # (a table written before a column was stored: the Polars finalize)
    if not spec.weighted and not pairs_fit(*(int(table[c].sum()) for c in ("pos", "neg"))):
        return None
    coded = packed_rows(table, list(spec.keys), stored)
    if coded is None:
        return None
    groups, frame, (field, value, low, high) = coded
    columns = {c: frame[c].to_numpy() for c in stored}
    if value.size > 1 and not bool((value[1:] >= value[:-1]).all()):
        # (a state written from runs is sorted already; else Polars' multithreaded stable
        # sort of the frame takes a third of NumPy's argsort and gathers)
        ordered = frame.select(stored).with_columns(pl.Series("_v", value))
        ordered = ordered.sort("_v", maintain_order=True)
        value = ordered["_v"].to_numpy()
        columns = {c: ordered[c].to_numpy() for c in stored}
    starts = np.flatnonzero(np.append(True, value[1:] != value[:-1]))
    if starts.size < value.size:
        value = value[starts]
        columns = {c: np.add.reduceat(v, starts) for c, v in columns.items()}
    pos, neg, n = columns.pop("pos"), columns.pop("neg"), columns.pop("n", None)
    bucketed = None if spec.exact else (spec.precision, spec.splits)
    sums = columns or None
    return Runs(value, pos, neg, n, field, low, high, groups, sums=sums, bucketed=bucketed)


@dataclass
class Collected:
    """A unit's collected columns (``_g0``…, ``_y``, ``_p``, ``_w``), not yet sorted.

    Collecting (Polars) and sorting (NumPy) are separate steps so that the next unit can be
    read while this one is sorted.
    """

    frame: pl.DataFrame
    key_codes: list[KeyCode]
    weighted: bool

    def runs(self, spec: Spec | None = None) -> Runs | None:
        """Sort and reduce the rows (None when the codes do not fit in 64 bits).

        Given a bucketed ``spec``, the rows are counted straight into their buckets when
        there are few enough (:mod:`.dense`): the runs are then the buckets. Call it (or
        :meth:`staged`) once: the group code columns are dropped once read.
        """
        return self.staged(spec).runs()

    def staged(self, spec: Spec | None = None) -> Staged:
        """Start :meth:`runs` here; the :class:`Staged` returned finishes it (in another thread).

        Counting into dense buckets starts here (group codes, each row's cell, the counts);
        the float sums, or the sort, are left to the function.
        """
        if self.frame.height == 0:
            return Sorting(None, None, False)
        groups, frame = unit_groups(self.frame, self.key_codes)
        self.frame = frame
        weighted = self.weighted

        def kernel() -> Staged:
            return choose(frame, groups, spec, weighted)

        # The compiled loops leave the summing thread less to do: it places the rows too.
        return Deferred(kernel) if compiled.loops() is not None else kernel()


class Unlabeled:
    """A unit's rows of optional labels: those with a label and those without, apart.

    Each part is counted by the binary kernel under the spec without ``unlabeled`` (the
    rows without a label as positives: their weight and rows), and :class:`UnlabeledStaged`
    joins the two tables into the unit's state table.
    """

    def __init__(self, labelled: Collected, unlabeled: Collected, height: int) -> None:
        self.labelled, self.unlabeled = labelled, unlabeled
        self.frame = pl.DataFrame({"_": pl.Series([], dtype=pl.Null)}).clear(height)

    def staged(self, spec: Spec | None = None) -> Staged:
        """Both parts staged (an empty part: None), to be joined by the summing thread."""
        inner = None if spec is None else replace(spec, unlabeled=False)
        parts = [
            c.staged(inner) if c.frame.height else None for c in (self.labelled, self.unlabeled)
        ]
        assert spec is not None  # (a state's spec is known when optional labels are read)
        return UnlabeledStaged(parts[0], parts[1], spec)


@dataclass
class UnlabeledStaged(Staged):
    """The staged parts of :class:`Unlabeled` rows; its state table joins theirs.

    It has no runs: its metrics come from the state table (where ``n_unlabeled`` is).
    """

    labelled: Staged | None
    unlabeled: Staged | None
    spec: Spec

    def _finish(self) -> Runs | None:
        return None

    def table(self, schema: pl.Schema, constants: Mapping[str, Any]) -> pl.DataFrame | None:
        """The joined table of the two parts (None: a part's kernel built none)."""
        inner = replace(self.spec, unlabeled=False)
        tables = []
        for part in (self.labelled, self.unlabeled):
            table = None if part is None else _part_table(part, inner, schema, constants)
            if part is not None and table is None:
                return None
            tables.append(table)
        if tables[0] is None and tables[1] is None:
            return None
        return with_unlabeled(tables[0], tables[1], self.spec)


def _part_table(
    staged: Staged, spec: Spec, schema: pl.Schema, constants: Mapping[str, Any]
) -> pl.DataFrame | None:
    """A staged part's state table: the kernel's own, or from its runs (None: neither)."""
    table = staged.table(schema, constants)
    if table is not None:
        return table
    runs = staged.runs()
    if runs is None:
        return None
    if spec.exact:
        return runs_state(runs, spec, schema, constants)
    return bucketed_state(runs, spec, schema, constants)


def choose(frame: pl.DataFrame, groups: GroupCodes, spec: Spec | None, weighted: bool) -> Staged:
    """The kernel of a unit's coded rows (``_y``, ``_p``, ``_w``): cells, or else the sort.

    Bucketed rows are counted into their cells (:func:`dense_cells`) where they can
    be; exact ones, and the rest, are sorted into runs (:class:`Sorting`).
    """
    cells = None
    if spec is not None and not spec.exact:
        with small_pages():
            cells = dense_cells(frame, groups, spec, weighted)
    return cells if cells is not None else Sorting(frame, groups, weighted)


@dataclass
class Deferred(Staged):
    """Rows whose kernel is chosen (and started) by the summing thread."""

    kernel: Callable[[], Staged]

    def _staged(self) -> Staged:
        if not hasattr(self, "_chosen"):
            self._chosen = self.kernel()
            del self.kernel  # (it holds the unit's frame and codes)
        chosen: Staged = self._chosen
        return chosen

    def _finish(self) -> Runs | None:
        """The chosen kernel's runs."""
        return self._staged().runs()

    def grouped(
        self, spec: Spec, thresholds: list[float], variance: bool = False
    ) -> pl.DataFrame | None:
        """The chosen kernel's grouped frame."""
        return self._staged().grouped(spec, thresholds, variance)

    def replicated(
        self, spec: Spec, thresholds: list[float], replicates: int
    ) -> pl.DataFrame | None:
        """The chosen kernel's replicates."""
        return self._staged().replicated(spec, thresholds, replicates)


@dataclass
class Sorting(Staged):
    """Rows to sort into exact runs (no rows: no runs)."""

    frame: pl.DataFrame | None
    groups: GroupCodes | None
    weighted: bool

    def _finish(self) -> Runs | None:
        frame, groups = self.frame, self.groups
        if frame is None or groups is None:
            return None
        self.frame = self.groups = None
        with small_pages():
            return sorted_runs(frame, groups, self.weighted)


def dense_cells(
    frame: pl.DataFrame, groups: GroupCodes, spec: Spec, weighted: bool
) -> CompiledCells | None:
    """Each row's cell, and the rows (and labels) counted per cell; None: use the sort.

    Parameters
    ----------
    frame : DataFrame
        The collected columns ``_y``, ``_p`` (and ``_w``) of :func:`collect_unit`.
    groups : GroupCodes
        The rows' group codes.
    spec : Spec
        The bucketed binary state's spec.
    weighted : bool
        Whether ``_w`` holds weights.

    Returns
    -------
    CompiledCells or None

    """
    compiled = loops()
    if path() != "all" or compiled is None or spec.exact or spec.precision >= EXACT_BITS:
        return None
    return compiled_cells(frame, groups, spec, weighted, compiled)
