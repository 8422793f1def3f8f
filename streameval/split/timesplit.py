"""Rolling-origin (time series) splits over the ordered distinct values of a time column."""

from __future__ import annotations

import polars as pl

from ..errors import InputError
from ..source import require_columns
from .units import Frame, finish, new_columns, open_frame

ROLES = pl.Enum(["train", "test"])


def _positive(value: int | None, name: str, low: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"expected {name} to be an integer ≥ {low}, got {value!r}")


def time_split(
    frame: Frame,
    column: str,
    n_splits: int = 5,
    *,
    test_size: int | None = None,
    gap: int = 0,
    max_train_size: int | None = None,
    name: str = "split",
    role_name: str = "role",
) -> Frame:
    """Rolling-origin splits in long form: one row per (row, split) it is in, with its role.

    The distinct values of ``column`` (days, timestamps, any sortable type) are ordered and
    split as scikit-learn's ``TimeSeriesSplit`` splits samples — so rows sharing a time value
    stay together, and with distinct times the splits are exactly ``TimeSeriesSplit``'s: split
    ``i`` (0 … n_splits−1) tests ``test_size`` values (default n // (n_splits + 1)) and trains
    on the values before them, ``gap`` values apart; an expanding window by default, a rolling
    one of ``max_train_size`` values when given.

    A row is in the training set of several splits and the test set of at most one, so the
    result has one row per membership, with ``split`` (Int32) and ``role`` (Enum "train",
    "test"); rows in no split (a null time, the earliest values when the window rolls, the gap)
    are dropped. Evaluate the test rows' predictions with ``folds="split"``.

    The distinct values are read once, when this is called (one column of a lazy source);
    the rows themselves stay lazy and streaming (one pass, an explode).

    Parameters
    ----------
    frame : DataFrame or LazyFrame
        The data; a LazyFrame stays lazy.
    column : str
        The time column (any sortable type).
    n_splits : int
        Number of splits (≥ 2).
    test_size : int, optional
        Distinct time values per test set (≥ 1); default n // (n_splits + 1).
    gap : int
        Distinct time values left out between each training set and its test set (≥ 0).
    max_train_size : int, optional
        A rolling window of at most this many distinct values (≥ 1) instead of an expanding
        one.
    name : str
        The new split number column (Int32, 0 … n_splits−1).
    role_name : str
        The new role column (Enum ``"train"``, ``"test"``).

    Returns
    -------
    DataFrame or LazyFrame
        One row per (row, split) the row is in: ``frame``'s columns, ``name`` and
        ``role_name``; of the same kind as ``frame``.

    Raises
    ------
    InputError
        A missing ``column``, an output column already in ``frame``, an option out of
        range, fewer than n_splits + 1 distinct values, or no room left for a training set.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"day": [1, 2, 3, 4, 5, 6]})
    >>> out = se.split.time_split(df, "day", n_splits=2, test_size=2)
    >>> out.group_by("split", "role").agg(pl.col("day")).sort("split", "role").rows()
    [(0, 'train', [1, 2]), (0, 'test', [3, 4]), (1, 'train', [1, 2, 3, 4]), (1, 'test', [5, 6])]

    """
    _positive(n_splits, "n_splits", 2)
    _positive(test_size, "test_size", 1)
    _positive(gap, "gap", 0)
    _positive(max_train_size, "max_train_size", 1)
    lf, schema = open_frame(frame)
    require_columns(schema, [column], role="time")
    new_columns(schema, [name, role_name])
    values = lf.select(pl.col(column).drop_nulls().unique().sort()).collect(engine="streaming")[
        column
    ]
    n = values.len()
    size = n // (n_splits + 1) if test_size is None else test_size
    if n_splits + 1 > n or size < 1:
        raise InputError(
            f"expected at least n_splits + 1 = {n_splits + 1} distinct values in {column!r}, "
            f"got {n}; hint: fewer splits"
        )
    first = n - n_splits * size
    if first - gap <= 0:
        raise InputError(
            f"expected room for a training set: {n} distinct values in {column!r} minus "
            f"gap={gap} and {n_splits} test sets of {size} leave none; hint: a smaller "
            "test_size, gap or n_splits"
        )
    t = pl.lit(values).search_sorted(pl.col(column), side="left").cast(pl.Int64)
    lowest = (t - first + gap) // size + 1  # first split whose training set holds t
    highest = pl.lit(n_splits - 1, pl.Int64)
    if max_train_size is not None:
        highest = pl.min_horizontal(highest, (t - first + gap + max_train_size) // size)
    train = pl.int_ranges(pl.max_horizontal(lowest, 0), highest + 1, dtype=pl.Int64) * 2
    test = pl.when(t >= first).then(pl.concat_list(((t - first) // size) * 2 + 1))
    codes = pl.concat_list(train, test.fill_null(pl.lit([], pl.List(pl.Int64))))
    known = pl.col(column).is_not_null()
    codes = pl.when(known).then(codes).otherwise(pl.lit([], pl.List(pl.Int64)))
    lf = lf.with_columns(codes.alias(name)).explode(name).drop_nulls(name)
    code = pl.col(name)
    role = (code % 2).replace_strict([0, 1], ["train", "test"], return_dtype=ROLES)
    lf = lf.with_columns((code // 2).cast(pl.Int32).alias(name), role.alias(role_name))
    return finish(frame, lf)
