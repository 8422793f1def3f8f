"""What a split assigns (rows or groups), their hash, their stratum, and the frame plumbing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from ..errors import InputError
from ..ordered import ORDERED
from .keys import INTERNAL, add_key_hash, as_columns, rehash

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
UNIT, STRATUM, _COUNT, POSITION = "_se_unit", "_se_stratum", "_se_count", "_se_position_"


def open_frame(frame: pl.DataFrame | pl.LazyFrame) -> tuple[pl.LazyFrame, pl.Schema]:
    """The frame as a LazyFrame and its schema (a scan reads file metadata only)."""
    if not isinstance(frame, pl.DataFrame | pl.LazyFrame):
        raise InputError(
            f"expected a polars DataFrame or LazyFrame, got {type(frame).__name__}; "
            "hint: pl.scan_parquet(path) gives a LazyFrame of Parquet files"
        )
    lf = frame.lazy()
    return lf, lf.collect_schema()


def finish(frame: Frame, lf: pl.LazyFrame) -> Frame:
    """A DataFrame gets a DataFrame back, a LazyFrame stays lazy."""
    out = (
        lf.collect(engine="in-memory", optimizations=ORDERED)
        if isinstance(frame, pl.DataFrame)
        else lf
    )
    return out


def new_columns(schema: pl.Schema, names: Sequence[str]) -> None:
    """Raise unless every output column name is new (and the names are distinct)."""
    if len(set(names)) < len(names):
        raise InputError(f"expected distinct output column names, got {list(names)!r}")
    for name in [*names, UNIT, STRATUM, _COUNT, POSITION, *INTERNAL]:
        if name in schema:
            raise InputError(
                f"expected a new column name for the split, but {name!r} is already a column; "
                "hint: pass another name= or drop that column first"
            )


def numbers(value: int | Sequence[int], name: str) -> list[int]:
    """A count (numbers 0 … count−1) or a list of integers, as a list of numbers."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise InputError(f"expected {name} to be ≥ 1, got {value}")
        return list(range(value))
    items = list(value) if isinstance(value, Sequence) else []
    if not items or not all(isinstance(r, int) and not isinstance(r, bool) for r in items):
        raise InputError(f"expected {name} to be a count or a list of integers, got {value!r}")
    return items


@dataclass(frozen=True)
class Units:
    """The units a split assigns: rows (``by=``, a row id) or groups (``group=``)."""

    columns: list[str]
    grouped: bool
    stratify: list[str]

    def check(self, schema: pl.Schema) -> None:
        """Raise for a continuous stratify column."""
        for name in self.stratify:
            if name in schema and schema[name].is_float():
                raise InputError(
                    f"expected a discrete stratify column, got {name!r} of type {schema[name]}; "
                    f"hint: bin it first, e.g. pl.col({name!r}).qcut(5)"
                )


def units(
    by: str | Sequence[str] | None,
    group: str | Sequence[str] | None,
    stratify: str | Sequence[str] | None = None,
) -> Units:
    """Exactly one of ``by`` (a row id) and ``group`` (a group key), with the strata columns."""
    rows, groups = as_columns(by, "by"), as_columns(group, "group")
    if bool(rows) == bool(groups):
        raise InputError(
            "expected either by= (a row id column, or key columns identifying a row) or "
            f"group= (a group key whose rows stay together), got by={by!r} and group={group!r}; "
            "hint: a split hashes that key, so a row's assignment never depends on its position "
            "— add an id before writing the data (e.g. with_row_index) if there is none"
        )
    return Units(rows or groups, bool(groups), as_columns(stratify, "stratify"))


def with_units(
    lf: pl.LazyFrame, schema: pl.Schema, u: Units, seed: int, stream: str
) -> pl.LazyFrame:
    """``lf`` with the unit hash (and stratum hash) columns; a group takes its modal stratum.

    A group's stratum is its most frequent stratum value (ties: the smallest stratum hash), so
    a group is never split between strata; finding it costs two window passes.
    """
    u.check(schema)
    role = "group" if u.grouped else "row id"
    lf = add_key_hash(lf, schema, u.columns, seed=seed, stream=stream, role=role, out=UNIT)
    if not u.stratify:
        return lf
    lf = add_key_hash(
        lf, schema, u.stratify, seed=seed, stream="stratum", role="stratify", out=STRATUM
    )
    if u.grouped:  # staged: nested windows in one expression are very slow in Polars
        lf = lf.with_columns(pl.len().over(UNIT, STRATUM).alias(_COUNT))
        lf = lf.with_columns((pl.col(_COUNT) == pl.col(_COUNT).max().over(UNIT)).alias(_COUNT))
        modal = pl.when(pl.col(_COUNT)).then(pl.col(STRATUM)).min().over(UNIT)
        lf = lf.with_columns(modal.alias(STRATUM)).drop(_COUNT)
    return lf


def add_group_share(lf: pl.LazyFrame, u: Units, over: str | None, out: str) -> pl.LazyFrame:
    """Add ``out``: where a group's rows sit, as a share in (0, 1), among its stratum's rows.

    The groups of a stratum (per ``over``) are ordered by their hash and laid end to end by
    row count; a group's share is the midpoint of its rows. Cutting the shares at 1/k, 2/k …
    (or at a hold-out's cumulative fractions) gives every fold (part) the stratum's rows
    within one group's size of its share: a cut can miss by at most half a group on each side.
    """
    keys = [] if over is None else [over]
    strata = [*keys, STRATUM] if u.stratify else keys
    table = lf.group_by([*keys, UNIT, *([STRATUM] if u.stratify else [])]).agg(
        pl.len().cast(pl.Float64).alias(out)
    )
    size = pl.col(out)
    before = size.cum_sum().over(strata, order_by=UNIT) if strata else size.cum_sum()
    total = size.sum().over(strata) if strata else size.sum()
    if not strata:
        table = table.sort(UNIT)
    table = table.with_columns(((before - size / 2) / total).alias(out))
    return lf.join(
        table.select(*keys, UNIT, out), on=[*keys, UNIT], how="left", maintain_order="left"
    )


def add_position(lf: pl.LazyFrame, u: Units, over: str | None, out: str) -> pl.LazyFrame:
    """Add ``out``: 0-based dense rank of the units ordered by (stratum hash, unit hash).

    Within a stratum the positions are consecutive, and the strata follow each other, so
    dealing positions out (``position % k``) balances every stratum and the total alike.
    Computed per ``over`` (the repeat column), on the distinct units when they are groups.
    """
    keys = [] if over is None else [over]
    if not u.stratify:
        rank = pl.col(UNIT).rank("dense")
        rank = rank if over is None else rank.over(over)
        return lf.with_columns((rank.cast(pl.Int64) - 1).alias(out))
    table = lf.select(*keys, UNIT, STRATUM).unique() if u.grouped else lf
    within = pl.col(UNIT).rank("dense").over([*keys, STRATUM])
    before = pl.col(STRATUM).rank("min")
    before = before if over is None else before.over(over)
    table = table.with_columns(within.cast(pl.Int64).alias(out))
    table = table.with_columns((pl.col(out) + before.cast(pl.Int64) - 2).alias(out))
    if not u.grouped:
        return table
    return lf.join(
        table.select(*keys, UNIT, out), on=[*keys, UNIT], how="left", maintain_order="left"
    )


def resalt(lf: pl.LazyFrame, salt: str, stratified: bool) -> pl.LazyFrame:
    """Unit (and stratum) hashes made independent per value of the repeat or replicate ``salt``."""
    lf = rehash(lf, UNIT, salt)
    return rehash(lf, STRATUM, salt) if stratified else lf
