"""The local pipeline: inputs checked and planned, units read and summed into a state table."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from . import kernels, resample_draw, resample_plan
from . import progress as bar
from .errors import InputError, caller_level
from .kernels.buckets import bucketed_state
from .kernels.collect import Collected
from .kernels.runs import Runs, runs_state
from .kernels.scatter import Scatter, Shard
from .kernels.staged import Staged
from .options import Accumulation
from .ordered import ORDERED
from .source import (
    BATCH_ROWS,
    Engine,
    Source,
    Unit,
    collect,
    collect_batches,
    diagnose_files,
    hive_units,
    require_columns,
    schema_of,
    shard_units,
    source_files,
    split_large,
    to_lazyframe,
)
from .spec import Spec, parse_precision
from .state import State, summed
from .states import kind_module
from .tasks.binary.metrics import as_thresholds
from .tasks.common import Inputs, Opened, TaskPlan, label_fields
from .tasks.registry import offering, offers, task_of


def as_list(by: str | Sequence[str] | None) -> list[str]:
    """The group keys ``by=`` names, as a list of distinct column names, or raise."""
    keys = [] if by is None else [by] if isinstance(by, str) else by
    if not isinstance(keys, Sequence) or not all(isinstance(k, str) for k in keys):
        raise InputError(
            f"expected by= to be a column name or a list of column names, got {by!r}; "
            "hint: by=['segment', 'day']"
        )
    if len(set(keys)) < len(keys):
        raise InputError(f"expected distinct group keys, got {list(keys)!r}")
    return list(keys)


@dataclass
class Plan:
    """A validated accumulation: the source, the task's plan and the units to compute."""

    lf: pl.LazyFrame
    schema: pl.Schema
    files: list[str] | None
    engine: Engine
    wanted: list[str]
    task: TaskPlan
    units: list[Unit] | None
    in_memory: bool = False
    replication: resample_draw.Replication | None = None
    #: The shards' rows, read once for all of them (:mod:`streameval.kernels.scatter`).
    scatter: Scatter | None = None

    @property
    def spec(self) -> Spec:
        """The spec of the states this plan computes."""
        spec: Spec = self.task.spec
        return spec


def prepare(
    source: Source,
    inputs: Inputs,
    *,
    by: str | Sequence[str] | None = None,
    drop_nulls: bool = False,
    engine: Engine = "streaming",
    drawn: bool = False,
    tables: bool = False,
) -> Plan:
    """Validate the inputs (schema, types, label values) and plan the pass.

    Reads no rows, except label values when classes must be found or checked, and the values
    of a hive partition key (from the file list). ``drawn``: with ``bootstrap=``, plan for the
    kernel's replicates (:meth:`Staged.replicated`, units read once each) rather than for the
    state (whose replicates are Polars passes), where the task's kernel draws them.
    ``tables``: plan for a metric table, where a kernel that builds no states
    (:attr:`streameval.tasks.common.TaskPlan.states`) serves too.
    """
    module, opened, boot, used = open_source(source, inputs, by, drop_nulls, engine)
    lf, schema, files, keys = opened.lf, opened.schema, opened.files, opened.keys
    replication = None
    if boot is None:
        task = module.plan(opened, inputs)
    else:
        task, replication = resample_plan.plan_replicated(module, opened, inputs, boot, used)
        if drawn and replication.runs is not None:
            task = replace(task, runs=replication.runs)
    if not (tables or task.states):
        task = replace(task, runs=None)
    wanted = [*used, *keys, *(list(boot.row_id) if boot else [])]
    units = hive_units(lf, source, files, keys) if files and not task.whole else None
    # (a replicated state's Polars passes have no reader: its partitions stay whole)
    if units is not None and engine == "streaming" and task.runs is not None:
        units = split_large(units, keys, schema, len(wanted), Scatter)
    in_memory = isinstance(source, pl.DataFrame) or (
        type(source).__module__.startswith("pyarrow")
        and type(source).__name__ in ("Table", "RecordBatch")
    )
    if units is None and not in_memory and engine == "streaming" and task.runs is not None:
        rows = collect(lf.select(pl.len()), engine, files).item()
        # a shard's budget is in rows of four columns: wider rows (class scores) make more
        units = shard_units(lf, keys, schema, rows * max(4, len(wanted)) // 4)
    scatter = None
    if units and units[0].shard is not None and not units[0].constants:
        scatter = Scatter(lf, len(units), units[0].shard[0])
    return Plan(lf, schema, files, engine, wanted, task, units, in_memory, replication, scatter)


def open_source(
    source: Source,
    inputs: Inputs,
    by: str | Sequence[str] | None,
    drop_nulls: bool,
    engine: Engine,
    key_role: str = "group key",
    reserved: bool = True,
) -> tuple[Any, Opened, Any, list[str]]:
    """Open and validate the source for a task.

    Checks the schema, the columns' roles and types and the group keys (``by``, named
    ``key_role`` in errors; with ``reserved``, refused when named like a state's or metric
    table's column); with ``drop_nulls``, counts the rows dropped (one pass) and filters
    them out. Returns the task's module, the opened source, the bootstrap options and the
    columns read in a role.
    """
    module = task_of(inputs.task)
    if inputs.labels and not offers(inputs.task, "labels"):
        raise InputError(
            f"expected label= to name one column for task={inputs.task!r}, got a list "
            f"{list(inputs.labels)!r}; hint: a label column per class is task='multilabel'"
        )
    boot = resample_plan.bootstrap_options(inputs)
    keys = as_list(by)
    files = source_files(source) if not isinstance(source, pl.LazyFrame | pl.DataFrame) else None
    lf = to_lazyframe(source, files)
    schema = schema_of(lf, files)
    roles = module.roles(inputs)
    if inputs.weight is not None:
        roles.append((inputs.weight, "weight"))
    used = [column for column, _ in roles]
    # A regression may compare a column with itself; the other tasks read each column once.
    twice = sorted({c for c in used if used.count(c) > 1})
    if twice and not offers(inputs.task, "one_column"):
        named = ", ".join(
            f"{c!r} as {' and '.join(r for col, r in roles if col == c)}" for c in twice
        )
        raise InputError(
            f"expected each column in one role, got {named}; hint: a model's predictions and "
            "the labels are different columns (copy one in a LazyFrame to compare a column "
            "with itself)"
        )
    ids = list(boot.row_id) if boot else []
    wanted = [*used, *keys, *ids]
    if files and len(files) > 1 and any(c not in schema for c in wanted):
        hint = diagnose_files(files, wanted)
        if hint:
            raise InputError(hint)
    for column, role in roles:
        require_columns(schema, [column], role=role)
    require_columns(schema, keys, role=key_role)
    require_columns(schema, ids, role="row id")
    taken = ({resample_draw.REPLICATE} if boot else set()) | (
        module.RESERVED if reserved else set()
    )
    for name in keys:
        if name in taken or name.startswith("_") or name in used:
            tables = ", and the state's and metric table's own columns" if reserved else ""
            raise InputError(
                f"expected {key_role}s other than the columns read ({', '.join(used)}) and "
                f"names starting with '_'{tables}, got {name!r}; hint: rename it in a LazyFrame"
            )
    _check_key_types(schema, keys, key_role)
    numeric = module.numeric(inputs) + ([(inputs.weight, "weight")] if inputs.weight else [])
    for column, role in numeric:
        if not schema[column].is_numeric():
            raise InputError(
                f"expected the {role} column {column!r} to be numeric, got {schema[column]}; "
                "hint: cast it to Float64"
            )
    if drop_nulls:
        # (an optional label's nulls are rows without a label yet, not rows to drop)
        checked = [c for c in used if not (inputs.unlabeled and c == inputs.label)]
        valid = pl.all_horizontal([pl.col(c).is_not_null() for c in checked])
        dropped = collect(lf.select((~valid).sum()), engine, files).item()
        if dropped:
            warnings.warn(
                f"dropped {dropped} rows with a null in {', '.join(checked)}",
                stacklevel=caller_level(),
            )
        lf = lf.filter(valid)
    return module, Opened(lf, schema, files, engine, keys), boot, used


def _check_key_types(schema: pl.Schema, keys: Sequence[str], role: str = "group key") -> None:
    """Refuse group keys whose type Polars cannot group or sort (Python objects)."""
    for name in keys:
        if schema[name] == pl.Object:
            raise InputError(
                f"expected the {role} {name!r} to be a column Polars can group by, got "
                f"{schema[name]} (Python objects); hint: convert it to strings or numbers"
            )


def unit_rows(plan: Plan, unit: Unit | None = None) -> Collected | None:
    """The rows of a unit (or of an in-memory source) collected for the sort kernel, if it applies.

    The kernel collects the unit's rows, so it runs on hive units (bounded by the largest
    partition) and on sources already in memory, never on a whole scanned source.
    """
    if plan.task.runs is None or not kernels.enabled():
        return None
    if unit is None:
        if not plan.in_memory:
            return None
        rows: Collected | None = plan.task.runs(plan.lf, {})
        return rows
    shard = None
    scatter = plan.scatter if unit.scatter is None else unit.scatter
    if scatter is not None and unit.shard is not None:
        shard = Shard(scatter, unit.shard[1])
    rows = plan.task.runs(unit.lf, unit.constants, shard=shard)
    return rows


def unit_staged(plan: Plan, unit: Unit | None = None) -> Staged | None:
    """The staged rows of a unit (or of an in-memory source), when the sort kernel applies."""
    rows = unit_rows(plan, unit)
    return None if rows is None else rows.staged(plan.spec)


def unit_runs(plan: Plan, unit: Unit | None = None) -> Runs | None:
    """The sorted runs of a unit (or of an in-memory source), when the sort kernel applies."""
    staged = unit_staged(plan, unit)
    return None if staged is None else staged.runs()


def compute(plan: Plan, unit: Unit | None = None) -> pl.DataFrame:
    """The state table of one unit (a hive partition whose key is constant), or of everything."""
    return staged_table(plan, unit, unit_staged(plan, unit))


def staged_table(plan: Plan, unit: Unit | None, staged: Staged | None) -> pl.DataFrame:
    """The state table of a unit from its staged rows: the kernel's table, or from its runs.

    A replicated state's comes from the Polars passes (the staged rows are not replicated).
    """
    if plan.replication is not None:
        return state_table(plan, unit, None)
    if staged is not None:
        table = staged.table(plan.schema, {} if unit is None else unit.constants)
        if table is not None:
            return table
    return state_table(plan, unit, None if staged is None else staged.runs())


def state_table(plan: Plan, unit: Unit | None, runs: Runs | None) -> pl.DataFrame:
    """The state table of a unit from its sorted runs, or by the Polars query without them."""
    lf, constants = (plan.lf, {}) if unit is None else (unit.lf, unit.constants)
    if runs is not None:
        if plan.spec.exact:
            return runs_state(runs, plan.spec, plan.schema, constants)
        table = bucketed_state(runs, plan.spec, plan.schema, constants)
        if table is not None:
            return table
    if plan.replication is None:
        return _query_table(plan, lf, constants)
    return plan.replication.state_table(lf, constants, lambda q, c: _query_table(plan, q, c))


def _query_table(plan: Plan, lf: pl.LazyFrame, constants: Mapping[str, Any]) -> pl.DataFrame:
    """The state table of ``lf`` by the task's Polars query; bad rows raise their error.

    The streaming engine's group-by adds a group's rows in the order its threads deliver
    them, which changes the last bits of a float sum from run to run
    (:mod:`streameval.ordered`). A query with a float sum over a streaming source therefore
    runs on batches of :data:`BATCH_ROWS` rows in memory, the batches' tables summed in
    their order (:func:`streameval.state.summed`). A query whose sums are all integers (an
    unweighted paired state's counts) is exact in any order and keeps the streaming engine,
    its groups in the order they first come (``maintain_order``), as does a task read whole
    (ranking, whose query sums nothing).
    """
    query, finish = plan.task.build(lf, constants)
    if plan.engine == "streaming" and not plan.task.whole and _float_sums(plan.spec, query):
        table = _batched_table(plan, lf, constants)
    else:
        table = finish(collect(query, plan.engine, plan.files, plan.wanted))
    if plan.task.invalid(table):
        raise plan.task.diagnose()
    return table


def _float_sums(spec: Spec, query: pl.LazyFrame) -> bool:
    """Whether any of the state's value columns ``query`` sums is a float."""
    schema = query.collect_schema()
    values = kind_module(spec).merge_ops(spec)
    return any(schema[c].is_float() for c in values if c in schema)


def _batched_table(plan: Plan, lf: pl.LazyFrame, constants: Mapping[str, Any]) -> pl.DataFrame:
    """The state query's table of ``lf``, summed batch by batch (see :func:`_query_table`).

    Only the columns the query may read are streamed: the source's columns in a role or a
    key, and those ``lf`` adds (a replicate pass's). The tables summed so far are summed
    again whenever the new ones outgrow them, so memory holds about twice the state.
    """
    names = lf.collect_schema().names()
    read = lf.select(c for c in names if c in plan.wanted or c not in plan.schema)

    def table_of(rows: pl.LazyFrame) -> pl.DataFrame:
        query, finish = plan.task.build(rows, constants)
        return finish(query.collect(engine="in-memory", optimizations=ORDERED))

    done: list[pl.DataFrame] = []
    new: list[pl.DataFrame] = []
    for batch in collect_batches(read, plan.files, plan.wanted, rows=BATCH_ROWS):
        new.append(table_of(batch.lazy()))
        if sum(t.height for t in new) > max(sum(t.height for t in done), BATCH_ROWS):
            done, new = [summed(plan.spec, [*done, *new])], []
    if not done and not new:
        return table_of(read.clear())
    parts = [*done, *new]
    return parts[0] if len(parts) == 1 else summed(plan.spec, parts)


def units_staged(plan: Plan) -> Iterator[tuple[Unit, Staged | None]]:
    """Each hive unit with its staged rows (or None); the next units are read meanwhile.

    The reading thread also starts the runs (:meth:`Collected.staged`: group codes, and with
    NumPy alone in bucketed mode each row's cell and the counts); the rest, and the caller's
    finalize, run here, so both cores stay busy, with three units in memory at most
    (:data:`streameval.kernels.AHEAD`).
    """

    def start(unit: Unit) -> tuple[Staged | None, int | None]:
        rows = unit_rows(plan, unit)
        if rows is None:
            return None, None
        return rows.staged(plan.spec), rows.frame.height

    units = plan.units or []
    bar.expect(len(units), "partitions" if _hive(units) else "shards")
    with kernels.reusing():  # the units' row buffers, reused rather than faulted in anew
        for unit, (staged, height) in kernels.prefetch(units, start):
            yield unit, staged
            bar.step(rows=height, name=_unit_name(unit))


def _hive(units: Sequence[Unit]) -> bool:
    """Whether the units are hive partitions (each with its key's value) rather than shards."""
    return bool(units) and bool(units[0].constants)


def _unit_name(unit: Unit) -> str:
    """``day=2026-10-01`` for a hive unit, empty for a shard."""
    return " ".join(f"{k}={v}" for k, v in unit.constants.items())


def unit_states(plan: Plan) -> Iterator[State]:
    """One state per unit, computed when asked for (or one state for everything)."""
    if plan.units is None:
        yield State(plan.spec, compute(plan))
        return
    for unit, staged in units_staged(plan):
        yield State(plan.spec, staged_table(plan, unit, staged))


def combine(plan: Plan) -> State:
    """The whole state: unit tables concatenated (units hold disjoint groups)."""
    tables = [state.table for state in unit_states(plan)]
    if len(tables) == 1:
        return State(plan.spec, tables[0])
    return State(plan.spec, pl.concat(tables, how="vertical_relaxed"))


def inputs_of(options: Accumulation) -> Inputs:
    """What a task reads of an accumulation's options: precision and thresholds parsed."""
    return Inputs(
        **label_fields(options.label),
        score=options.score,
        task=options.task,
        prediction=options.prediction,
        scores=options.scores,
        classes=options.classes,
        weight=options.weight,
        positive=options.positive,
        precision=parse_precision(options.precision),
        thresholds=tuple(as_thresholds(options.thresholds)),
        top_k=options.top_k,
        power=options.power,
        query=options.query,
        k=options.k,
        bootstrap=options.bootstrap,
        row_id=options.row_id,
        seed=options.seed,
        unlabeled=optional_labels(options),
    )


def optional_labels(options: Accumulation) -> bool:
    """Whether ``labels="optional"``: refused for tasks without it, and with a bootstrap."""
    if options.labels not in ("required", "optional"):
        raise InputError(
            f"expected labels='required' or 'optional', got {options.labels!r}; hint: "
            "'optional' keeps rows whose label has not arrived in the score histogram"
        )
    if options.labels == "required":
        return False
    if not offers(options.task, "unlabeled"):
        raise InputError(
            f"expected labels='optional' with a {' or '.join(offering('unlabeled'))} task, got "
            f"task={options.task!r}; hint: drop labels= (its rows need their labels)"
        )
    if options.bootstrap:
        raise InputError(
            "expected labels='optional' without bootstrap replicates, got bootstrap="
            f"{options.bootstrap}; hint: accumulate the replicates of labelled rows"
        )
    return True


def local_accumulate(source: Source, options: Accumulation) -> State:
    """:func:`streameval.accumulate` on this machine (no Spark, no progress bar)."""
    plan = prepare(
        source,
        inputs_of(options),
        by=options.by,
        drop_nulls=options.drop_nulls,
        engine=options.engine,
    )
    return combine(plan)
