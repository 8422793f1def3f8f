"""Bootstrap replicates as in-bag counts: a Poisson(1) count per row (or group) and replicate.

The texts' bootstrap draws n rows with replacement (a multinomial count per row). That needs
the whole table at once. Drawing each row's count independently from Poisson(1) — the
"Poisson bootstrap" — needs only the row's key: the count is the inverse Poisson CDF of a
uniform number from the key's hash, so it streams, and each row's count is the same whatever
else is in the data. The two agree as n grows (a multinomial count is Binomial(n, 1/n) →
Poisson(1)); in particular a row is out of bag with probability e⁻¹ ≈ 0.368, the texts'
limit of (1 − 1/n)ⁿ. A replicate's size is then n on average instead of exactly n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from .keys import uniform
from .units import UNIT, Frame, finish, new_columns, numbers, open_frame, resalt, units, with_units


def poisson_cuts() -> list[float]:
    """P(X ≤ j) for X ~ Poisson(1), j = 0, 1, …, while it is below 1 − 2⁻⁵³.

    >>> [round(c, 4) for c in poisson_cuts()[:3]]
    [0.3679, 0.7358, 0.9197]
    """
    cuts, term, total, j = [], math.exp(-1.0), 0.0, 0
    while total + term < 1.0 - 2.0**-53 and j < 40:
        total += term
        cuts.append(total)
        j += 1
        term /= j
    return cuts


def bootstrap(
    frame: Frame,
    replicates: int | Sequence[int] = 1,
    *,
    seed: int = 0,
    by: str | Sequence[str] | None = None,
    group: str | Sequence[str] | None = None,
    name: str = "replicate",
    count_name: str = "in_bag",
    oob_name: str = "oob",
) -> Frame:
    """Bootstrap replicates in long form: one row per (row, replicate), with its in-bag count.

    Parameters
    ----------
    frame : DataFrame or LazyFrame
        The data (a LazyFrame stays lazy).
    replicates : int or list of int
        How many replicates (numbered from 0), or which replicate numbers: ``[7]`` gives
        replicate 7 alone, identical to replicate 7 of ``replicates=10``.
    seed : int
        Seed of the hash.
    by : str or list of str
        A row id: rows are drawn. Give ``by`` or ``group``.
    group : str or list of str
        A group key: whole groups are drawn (the cluster bootstrap).
    name : str
        The new replicate number column (Int32).
    count_name : str
        The new in-bag count column (Int32: how many times the row is drawn — use it as a
        sample weight, or repeat the row).
    oob_name : str
        The new out-of-bag flag column (Boolean: in-bag count 0).

    Returns
    -------
    DataFrame or LazyFrame
        One row per (row, replicate): ``frame``'s columns, ``name``, ``count_name`` and
        ``oob_name``; of the same kind as ``frame``.

    Raises
    ------
    InputError
        ``replicates`` neither a count ≥ 1 nor a list of integers, neither or both of
        ``by`` and ``group``, or an output column already in ``frame``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"id": range(10_000)})
    >>> boot = se.split.bootstrap(df, 2, seed=3, by="id")
    >>> boot.group_by("replicate").agg(pl.col("oob").mean().round(2)).sort("replicate").rows()
    [(0, 0.37), (1, 0.36)]

    """
    chosen = numbers(replicates, "replicates")
    lf, schema = open_frame(frame)
    new_columns(schema, [name, count_name, oob_name])
    u = units(by, group)
    lf = with_units(lf, schema, u, seed, "bootstrap")
    lf = lf.with_columns(pl.lit(chosen, pl.List(pl.Int32)).alias(name)).explode(name)
    lf = resalt(lf, name, False)
    draw = uniform(pl.col(UNIT))
    count = pl.lit(pl.Series(poisson_cuts())).search_sorted(draw, side="right")
    lf = lf.with_columns(count.cast(pl.Int32).alias(count_name)).drop(UNIT)
    return finish(frame, lf.with_columns((pl.col(count_name) == 0).alias(oob_name)))
