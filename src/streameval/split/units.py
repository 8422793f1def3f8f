"""What a split assigns (rows or groups), their hash, their stratum, and the frame plumbing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from ..errors import InputError
from .keys import as_columns, key_hash, rehash

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
UNIT, STRATUM = "_se_unit", "_se_stratum"


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
    out = lf.collect() if isinstance(frame, pl.DataFrame) else lf
    return out  # type: ignore[return-value]


def new_columns(schema: pl.Schema, names: Sequence[str]) -> None:
    """Raise unless every output column name is new (and the names are distinct)."""
    if len(set(names)) < len(names):
        raise InputError(f"expected distinct output column names, got {list(names)!r}")
    for name in [*names, UNIT, STRATUM]:
        if name in schema:
            raise InputError(
                f"expected a new column name for the split, but {name!r} is already a column; "
                "hint: pass another name= or drop that column first"
            )


@dataclass(frozen=True)
class Units:
    """The units a split assigns: rows (``by=``, a row id) or groups (``group=``)."""

    columns: list[str]
    grouped: bool
    stratify: list[str]

    def exprs(self, schema: pl.Schema, seed: int, stream: str) -> list[pl.Expr]:
        """The unit hash and stratum hash columns (two window passes for a grouped stratum)."""
        role = "group" if self.grouped else "row id"
        unit = key_hash(schema, self.columns, seed=seed, stream=stream, role=role).alias(UNIT)
        if not self.stratify:
            return [unit]
        for name in self.stratify:
            if name in schema and schema[name].is_float():
                raise InputError(
                    f"expected a discrete stratify column, got {name!r} of type {schema[name]}; "
                    f"hint: bin it first, e.g. pl.col({name!r}).qcut(5)"
                )
        stratum = key_hash(schema, self.stratify, seed=seed, stream="stratum", role="stratify")
        return [unit, stratum.alias(STRATUM)]


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


def with_units(lf: pl.LazyFrame, schema: pl.Schema, u: Units, seed: int, stream: str) -> pl.LazyFrame:
    """``lf`` with the unit hash (and stratum hash) columns; a group takes its modal stratum."""
    lf = lf.with_columns(u.exprs(schema, seed, stream))
    if u.stratify and u.grouped:
        count = pl.len().over(UNIT, STRATUM)
        modal = pl.when(count == count.max().over(UNIT)).then(pl.col(STRATUM))
        lf = lf.with_columns(modal.min().over(UNIT).alias(STRATUM))
    return lf


def resalt(salt: pl.Expr, stratified: bool) -> list[pl.Expr]:
    """Unit (and stratum) hashes made independent per repeat or replicate ``salt``."""
    out = [rehash(pl.col(UNIT), salt).alias(UNIT)]
    if stratified:
        out.append(rehash(pl.col(STRATUM), salt).alias(STRATUM))
    return out
