"""ACCUMULATE: source → validated lazy query → state table, in one streaming pass."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .bucketing import ABOVE_ONE, EXACT_BITS, is_bucket_edge
from .errors import InputError
from .metrics.binary import COLUMNS, as_thresholds
from .source import (
    Engine,
    Source,
    Unit,
    collect,
    diagnose_files,
    hive_units,
    require_columns,
    schema_of,
    source_files,
    to_lazyframe,
)
from .spec import Spec, parse_precision
from .state import State
from .states import binary
from .validate import diagnose_bad_rows, label_expr

_RESERVED = {"bucket", *binary.ALL_COLUMNS, *COLUMNS}


def _as_list(by: str | Sequence[str] | None) -> list[str]:
    keys = [] if by is None else [by] if isinstance(by, str) else by
    if not isinstance(keys, Sequence) or not all(isinstance(k, str) for k in keys):
        raise InputError(
            f"expected by= to be a column name or a list of column names, got {by!r}; "
            "hint: by=['segment', 'day']"
        )
    if len(set(keys)) < len(keys):
        raise InputError(f"expected distinct group keys, got {list(keys)!r}")
    return list(keys)


def accumulate(
    source: Source,
    *,
    label: str,
    score: str,
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    positive: Any = None,
    precision: int | str | None = None,
    thresholds: float | Sequence[float] = (0.5,),
    drop_nulls: bool = False,
    engine: Engine = "streaming",
) -> State:
    """Compute the mergeable state of a binary classifier's scores in one streaming pass.

    Parameters
    ----------
    source : path, glob, directory, list of paths, LazyFrame, DataFrame or pyarrow data
        The predictions. Hive partition columns (``day=2026-10-01/``) can be used in ``by``.
    label : str
        Label column: 0/1, booleans, or two values with ``positive=`` naming the positive one.
    score : str
        Score column, any numeric range (probabilities, logits, margins).
    by : str or list of str, optional
        Group key columns; one state row set per group.
    weight : str, optional
        Non-negative sample weights (sklearn's ``sample_weight``).
    positive : optional
        The positive class value (default 1 / True).
    precision : "exact" or int, optional
        Mantissa bits of score buckets; ``"exact"`` keeps every distinct score. Default 11.
    thresholds : float or list of float
        Thresholds whose confusion counts must stay exact in bucketed mode (buckets are cut
        there). ``0.5`` and other short binary fractions are always bucket edges.
    drop_nulls : bool
        Drop rows with a null label, score or weight (with a warning giving the count)
        instead of raising.
    engine : {"streaming", "in-memory"}
        Polars engine; streaming keeps memory bounded.

    Returns
    -------
    State

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "a", "b"], "y": [1, 0, 1], "p": [0.9, 0.2, 0.6]})
    >>> st = se.accumulate(df, label="y", score="p", by="g")
    >>> st.table.sort("g", "bucket").select("g", "pos", "neg")
    shape: (3, 3)
    ┌─────┬─────┬─────┐
    │ g   ┆ pos ┆ neg │
    │ --- ┆ --- ┆ --- │
    │ str ┆ i64 ┆ i64 │
    ╞═════╪═════╪═════╡
    │ a   ┆ 0   ┆ 1   │
    │ a   ┆ 1   ┆ 0   │
    │ b   ┆ 1   ┆ 0   │
    └─────┴─────┴─────┘

    """
    plan = prepare(
        source,
        label=label,
        score=score,
        by=by,
        weight=weight,
        positive=positive,
        precision=precision,
        thresholds=thresholds,
        drop_nulls=drop_nulls,
        engine=engine,
    )
    return combine(plan)


@dataclass
class Plan:
    """A validated accumulation: the spec, the row expressions and the units to compute."""

    spec: Spec
    lf: pl.LazyFrame
    schema: pl.Schema
    files: list[str] | None
    engine: Engine
    y: pl.Expr
    p: pl.Expr
    w: pl.Expr | None
    bad: pl.Expr
    not_allowed: pl.Expr
    wanted: list[str]
    units: list[Unit] | None


def prepare(
    source: Source,
    *,
    label: str,
    score: str,
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    positive: Any = None,
    precision: int | str | None = None,
    thresholds: float | Sequence[float] = (0.5,),
    drop_nulls: bool = False,
    engine: Engine = "streaming",
) -> Plan:
    """Validate the inputs (schema, types, label values) and plan the pass.

    Reads no rows, except the label values when ``positive`` must be checked and the values
    of a hive partition key (from the file list).
    """
    keys = _as_list(by)
    files = source_files(source) if not isinstance(source, pl.LazyFrame | pl.DataFrame) else None
    lf = to_lazyframe(source)
    schema = schema_of(lf, files)
    wanted = [label, score, *keys] + ([weight] if weight is not None else [])
    if files and len(files) > 1 and any(c not in schema for c in wanted):
        hint = diagnose_files(files, wanted)
        if hint:
            raise InputError(hint)
    require_columns(schema, [label], role="label")
    require_columns(schema, [score], role="score")
    if weight is not None:
        require_columns(schema, [weight], role="weight")
    require_columns(schema, keys, role="group key")
    for name in keys:
        if name in _RESERVED or name.startswith("_") or name in (label, score, weight):
            raise InputError(
                f"expected group keys other than the label/score/weight, names starting with "
                f"'_', and the state's and metric table's own columns, got {name!r}; "
                "hint: rename it in a LazyFrame"
            )
    numeric_roles: list[tuple[str, str]] = [(score, "score")]
    if weight is not None:
        numeric_roles.append((weight, "weight"))
    for column, role in numeric_roles:
        if not schema[column].is_numeric():
            raise InputError(
                f"expected the {role} column {column!r} to be numeric, got {schema[column]}; "
                "hint: cast it to Float64"
            )
    bits = parse_precision(precision)
    cuts = {t for t in as_thresholds(thresholds) if not is_bucket_edge(t, bits)}
    splits = () if bits >= EXACT_BITS else tuple(sorted(cuts | {ABOVE_ONE}))

    valid = pl.lit(True)
    if drop_nulls:
        valid = pl.col(label).is_not_null() & pl.col(score).is_not_null()
        if weight is not None:
            valid = valid & pl.col(weight).is_not_null()
        dropped = collect(lf.select((~valid).sum()), engine, files).item()
        if dropped:
            warnings.warn(
                f"dropped {dropped} rows with a null label, score or weight", stacklevel=3
            )
        lf = lf.filter(valid)

    y, not_allowed, pos_value = label_expr(lf, schema, label, positive, engine, files)
    p = pl.col(score).cast(pl.Float64)
    w = pl.col(weight).cast(pl.Float64) if weight is not None else None
    bad = pl.col(label).is_null() | (~p.is_finite()).fill_null(True) | not_allowed.fill_null(False)
    if w is not None:
        bad = bad | (w < 0).fill_null(True) | (~w.is_finite()).fill_null(True)
    spec = Spec(
        kind="binary",
        keys=tuple(keys),
        precision=bits,
        splits=splits,
        weighted=weight is not None,
        label=label,
        score=score,
        weight=weight,
        positive=pos_value if isinstance(pos_value, bool | int | float | str) else str(pos_value),
    )
    units = hive_units(lf, source, files, keys) if files else None
    return Plan(spec, lf, schema, files, engine, y, p, w, bad, not_allowed, wanted, units)


def compute(plan: Plan, unit: Unit | None = None) -> pl.DataFrame:
    """The state table of one unit (a hive partition whose key is constant), or of everything."""
    lf, constants = (plan.lf, {}) if unit is None else (unit.lf, unit.constants)
    query, finish = binary.state_query(
        lf, plan.spec, plan.schema, plan.y, plan.p, plan.w, plan.bad, constants
    )
    table = finish(collect(query, plan.engine, plan.files, plan.wanted))
    if table["bucket"].null_count():
        s = plan.spec
        raise diagnose_bad_rows(
            plan.lf, s.label, s.score, s.weight, plan.not_allowed, plan.engine, plan.files
        )
    return table


def unit_states(plan: Plan) -> Iterator[State]:
    """One state per unit, computed when asked for (or one state for everything)."""
    if plan.units is None:
        yield State(plan.spec, compute(plan))
        return
    for unit in plan.units:
        yield State(plan.spec, compute(plan, unit))


def combine(plan: Plan) -> State:
    """The whole state: unit tables concatenated (units hold disjoint groups)."""
    tables = [state.table for state in unit_states(plan)]
    if len(tables) == 1:
        return State(plan.spec, tables[0])
    return State(plan.spec, pl.concat(tables, how="vertical_relaxed"))
