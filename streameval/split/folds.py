"""Hold-out, k-fold, repeated k-fold and leave-one-out assignments as lazy columns.

Two ways to assign, with different costs:

- **hash only** (the default without ``stratify=``): a unit's part is a function of its key
  hash alone — streaming, no pass over other rows, and appending data never moves a row. Part
  sizes and class shares are right in expectation (binomial spread: a fold of a stratum of
  ``n`` units differs from ``n/k`` by about ``√(n/k)``).
- **rank pass** (``stratify=`` or ``balanced=True``): rows are ordered by (stratum hash, row
  hash) and dealt out by rank, so within each stratum the fold sizes differ by at most one
  row — and so do the folds' totals — and a hold-out part holds round(n·share) rows of a
  stratum of n rows. Groups (``group=``) are ordered by hash within their stratum (a group's
  most frequent class) and laid end to end by row count, and the folds or parts cut that line
  at 1/k, 2/k … (at the cumulative shares): each fold's rows of a stratum are within one
  group's size of its share. It is a rank (or a windowed cumulative sum) over the whole
  frame: lazy, but Polars runs it in memory (a few 8-byte columns per row plus a sort), and
  a unit's part depends on which other units are present.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from ..errors import InputError
from ..source import require_columns
from .keys import uniform
from .units import (
    POSITION,
    STRATUM,
    UNIT,
    Frame,
    Units,
    add_group_share,
    add_position,
    finish,
    new_columns,
    numbers,
    open_frame,
    resalt,
    units,
    with_units,
)

Columns = str | Sequence[str] | None
NAMES = {2: ("train", "test"), 3: ("train", "validation", "test")}


def _count(value: int, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"expected {name} to be an integer ≥ {low}, got {value!r}")
    return value


def _add_fold(
    lf: pl.LazyFrame, k: int, u: Units, ranked: bool, over: str | None, name: str
) -> pl.LazyFrame:
    if ranked and u.grouped:
        lf = add_group_share(lf, u, over, POSITION)
        fold = (pl.col(POSITION) * k).floor().clip(0, k - 1)
    elif ranked:
        lf = add_position(lf, u, over, POSITION)
        fold = pl.col(POSITION) % k
    else:
        fold = (uniform(pl.col(UNIT)) * k).floor()
    lf = lf.with_columns(fold.cast(pl.Int32).alias(name))
    return lf.drop(UNIT, STRATUM, POSITION, strict=False)


def kfold(
    frame: Frame,
    k: int = 5,
    *,
    seed: int = 0,
    by: Columns = None,
    group: Columns = None,
    stratify: Columns = None,
    balanced: bool = False,
    name: str = "fold",
) -> Frame:
    """Add a k-fold column (Int32, 0 … k−1) assigned from a hash of each row's key.

    Parameters
    ----------
    frame : DataFrame or LazyFrame
        The data; a LazyFrame stays lazy (a scan of Parquet files works).
    k : int
        Number of folds (≥ 2).
    seed : int
        Seed of the hash; the same seed gives the same folds on any machine.
    by : str or list of str
        A row id (or key columns identifying a row). Give ``by`` or ``group``.
    group : str or list of str
        A group key: all rows of a group fall in one fold (as sklearn's ``GroupKFold``).
    stratify : str or list of str, optional
        Class column(s): a rank pass keeps each fold's count of every class within one row of
        n_class / k (with ``group``: within one group's size; a group counts in its most
        frequent class).
    balanced : bool
        Without ``stratify``: a rank pass so that fold sizes differ by at most one row (with
        ``group``: by at most about one group's size).
    name : str
        The new column.

    Returns
    -------
    DataFrame or LazyFrame
        ``frame`` with the fold column ``name`` (Int32, 0 … k−1) added, of the same kind: a
        DataFrame is collected, a LazyFrame stays lazy.

    Raises
    ------
    InputError
        ``k`` < 2, neither or both of ``by`` and ``group``, a missing or float ``stratify``
        column, or a column ``name`` already in ``frame``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"id": range(10), "y": [0, 1] * 5})
    >>> out = se.split.kfold(df, 5, seed=1, by="id", stratify="y")
    >>> out.group_by("fold").agg(pl.len(), pl.col("y").sum()).sort("fold").rows()
    [(0, 2, 1), (1, 2, 1), (2, 2, 1), (3, 2, 1), (4, 2, 1)]

    """
    _count(k, "k", 2)
    lf, schema = open_frame(frame)
    new_columns(schema, [name])
    u = units(by, group, stratify)
    lf = with_units(lf, schema, u, seed, "kfold")
    return finish(frame, _add_fold(lf, k, u, bool(u.stratify) or balanced, None, name))


def repeated_kfold(
    frame: Frame,
    k: int = 5,
    repeats: int | Sequence[int] = 2,
    *,
    seed: int = 0,
    by: Columns = None,
    group: Columns = None,
    stratify: Columns = None,
    balanced: bool = False,
    name: str = "fold",
    repeat_name: str = "repeat",
) -> Frame:
    """Repeated k-fold in long form: one row per (row, repeat), with repeat and fold columns.

    Each repeat is a :func:`kfold` with its own hash (the unit hash salted with the repeat
    number), so repeats are independent partitions. ``repeats`` is a count or a list of repeat
    numbers (``repeats=[3]`` gives repeat 3 alone, the same as within ``repeats=5``).

    Parameters
    ----------
    frame : DataFrame or LazyFrame
        The data; a LazyFrame stays lazy.
    k : int
        Number of folds (≥ 2).
    repeats : int or list of int
        How many repeats (numbered from 0), or which repeat numbers.
    seed : int
        Seed of the hash.
    by : str or list of str
        A row id (or key columns identifying a row). Give ``by`` or ``group``.
    group : str or list of str
        A group key: all rows of a group fall in one fold of each repeat.
    stratify : str or list of str, optional
        Class column(s), as :func:`kfold`: a rank pass per repeat.
    balanced : bool
        Without ``stratify``: fold sizes within one row of each other, as :func:`kfold`.
    name : str
        The new fold column.
    repeat_name : str
        The new repeat column.

    Returns
    -------
    DataFrame or LazyFrame
        One row per (row, repeat): ``frame``'s columns, ``repeat_name`` (Int32) and
        ``name`` (Int32, 0 … k−1); of the same kind as ``frame``.

    Raises
    ------
    InputError
        ``k`` < 2, ``repeats`` neither a count ≥ 1 nor a list of integers, neither or both
        of ``by`` and ``group``, or an output column already in ``frame``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"id": range(6)})
    >>> out = se.split.repeated_kfold(df, 3, repeats=2, by="id", balanced=True)
    >>> out.group_by("repeat", "fold").len().sort("repeat", "fold")["len"].to_list()
    [2, 2, 2, 2, 2, 2]

    """
    _count(k, "k", 2)
    chosen = numbers(repeats, "repeats")
    lf, schema = open_frame(frame)
    new_columns(schema, [repeat_name, name])
    u = units(by, group, stratify)
    lf = with_units(lf, schema, u, seed, "kfold")
    lf = lf.with_columns(pl.lit(chosen, pl.List(pl.Int32)).alias(repeat_name))
    lf = resalt(lf.explode(repeat_name), repeat_name, bool(u.stratify))
    return finish(frame, _add_fold(lf, k, u, bool(u.stratify) or balanced, repeat_name, name))


def _fractions(fractions: Sequence[float] | Mapping[str, float]) -> tuple[list[str], list[float]]:
    if isinstance(fractions, Mapping):
        names, values = [str(n) for n in fractions], list(fractions.values())
    else:
        values = list(fractions)
        if len(values) not in NAMES:
            raise InputError(
                f"expected 2 or 3 fractions (train/test or train/validation/test), got "
                f"{len(values)}; hint: name the parts with a mapping, {{'a': 0.2, 'b': 0.8, …}}"
            )
        names = list(NAMES[len(values)])
    ok = all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values)
    if not ok or len(values) < 2 or not math.isclose(sum(values), 1.0, abs_tol=1e-9):
        raise InputError(
            f"expected two or more positive fractions summing to 1, got {fractions!r}; "
            "hint: (0.5, 0.25, 0.25) for train/validation/test"
        )
    return names, [float(v) for v in values]


def holdout(
    frame: Frame,
    fractions: Sequence[float] | Mapping[str, float] = (0.75, 0.25),
    *,
    seed: int = 0,
    by: Columns = None,
    group: Columns = None,
    stratify: Columns = None,
    balanced: bool = False,
    name: str = "split",
) -> Frame:
    """Add a hold-out column (an Enum of the part names) assigned from a hash of each key.

    ``fractions`` are two (train, test) or three (train, validation, test) shares summing to
    1, or a mapping part name → share. Hash only, each unit falls in a part with its share's
    probability. With ``stratify`` (or ``balanced=True``) a rank pass puts exactly
    round(n·cumulative share) rows of each stratum of n rows below each cut, so every part's
    count is within one row of n·share, per stratum (with ``group``: within one group's size).
    Other parameters as :func:`kfold`.

    Parameters
    ----------
    frame : DataFrame or LazyFrame
        The data; a LazyFrame stays lazy.
    fractions : list of float or mapping str → float
        Two (train, test) or three (train, validation, test) positive shares summing to 1,
        or a mapping part name → share (two parts or more).
    seed : int
        Seed of the hash.
    by : str or list of str
        A row id (or key columns identifying a row). Give ``by`` or ``group``.
    group : str or list of str
        A group key: all rows of a group fall in one part.
    stratify : str or list of str, optional
        Class column(s): a rank pass keeps each part's share per stratum.
    balanced : bool
        Without ``stratify``: a rank pass so that part sizes match their shares to a row.
    name : str
        The new column.

    Returns
    -------
    DataFrame or LazyFrame
        ``frame`` with the column ``name`` added: an Enum of the part names (``"train"``,
        ``"test"``; ``"train"``, ``"validation"``, ``"test"``; or the mapping's keys, in
        order); of the same kind as ``frame``.

    Raises
    ------
    InputError
        Fractions that are not 2 or 3 shares (or a mapping) of positive values summing to
        1, neither or both of ``by`` and ``group``, or a column ``name`` already in
        ``frame``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"id": range(8), "y": [0, 0, 0, 0, 1, 1, 1, 1]})
    >>> out = se.split.holdout(df, (0.5, 0.25, 0.25), by="id", stratify="y")
    >>> out.group_by("split", "y").len().sort("split", "y")["len"].to_list()
    [2, 2, 1, 1, 1, 1]

    """
    names, values = _fractions(fractions)
    lf, schema = open_frame(frame)
    new_columns(schema, [name])
    u = units(by, group, stratify)
    lf = with_units(lf, schema, u, seed, "holdout")
    cuts = [sum(values[: j + 1]) for j in range(len(values) - 1)]
    if (u.stratify or balanced) and u.grouped:
        lf = add_group_share(lf, u, None, POSITION)
        index = pl.sum_horizontal([(pl.col(POSITION) >= c) for c in cuts])
    elif u.stratify or balanced:
        rank, size = pl.col(UNIT).rank("dense"), pl.col(UNIT).n_unique()
        if u.stratify:
            rank, size = rank.over(STRATUM), size.over(STRATUM)
        position = rank.cast(pl.Int64) - 1
        index = pl.sum_horizontal(
            [(position >= (size.cast(pl.Float64) * c + 0.5).floor()) for c in cuts]
        )
    else:
        index = pl.sum_horizontal([(uniform(pl.col(UNIT)) >= c) for c in cuts])
    part = index.cast(pl.Int64).replace_strict(
        list(range(len(names))), names, return_dtype=pl.Enum(names)
    )
    lf = lf.with_columns(part.alias(name))
    return finish(frame, lf.drop(UNIT, STRATUM, POSITION, strict=False))


def leave_one_out(
    frame: Frame, *, by: Columns = None, group: Columns = None, name: str = "fold"
) -> Frame:
    """Add a leave-one-out fold column: fold i is the i-th smallest key (Int64, from 0).

    With ``by`` (a row id) every row is its own fold; with ``group`` every group is (leave one
    group out). The fold number is the key's dense rank in sort order, so it does not depend
    on row order; it needs a sort of the keys, which suits the small data LOO is meant for.

    Parameters
    ----------
    frame : DataFrame or LazyFrame
        The data; a LazyFrame stays lazy.
    by : str or list of str
        A row id: every row is its own fold. Give ``by`` or ``group``.
    group : str or list of str
        A group key: every group is a fold (leave one group out).
    name : str
        The new column.

    Returns
    -------
    DataFrame or LazyFrame
        ``frame`` with the fold column ``name`` (Int64, from 0) added; of the same kind as
        ``frame``.

    Raises
    ------
    InputError
        Neither or both of ``by`` and ``group``, a missing key column, or a column
        ``name`` already in ``frame``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"patient": ["b", "a", "b", "c"]})
    >>> se.split.leave_one_out(df, group="patient")["fold"].to_list()
    [1, 0, 1, 2]

    """
    lf, schema = open_frame(frame)
    new_columns(schema, [name])
    u = units(by, group)
    require_columns(schema, u.columns, role="group" if u.grouped else "row id")
    fold = pl.struct(u.columns).rank("dense").cast(pl.Int64) - 1
    return finish(frame, lf.with_columns(fold.alias(name)))
