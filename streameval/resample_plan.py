"""Planning a bootstrap pass: the options checked, the task planned over replicate rows.

:func:`plan_replicated` gives the task's plan with ``replicate`` as its last group key and a
weighted spec recording ``replicates``, ``seed`` and ``row_id``, and the
:class:`~streameval.resample_draw.Replication` that turns source rows into replicate rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from .errors import InputError
from .resample_draw import (
    MASK,
    MAX_REPLICATES,
    REPLICATE,
    REPLICATE_TYPE,
    ROW_KEY,
    Bootstrap,
    Replication,
    with_row_key,
)
from .source import collect
from .tasks.common import Inputs, Opened, TaskPlan
from .tasks.registry import Task, offering

DUPLICATE_SHARE = 0.05  # the share of repeated rows above which row_id= is required
EXACT_DISTINCT = 1 << 20  # up to this many rows, distinct rows are counted exactly
WEIGHT = "_se_bootstrap_weight"  # the weight column of an unweighted source's replicates
#: The tasks whose kernels draw bootstrap replicates from the rows' keys.
DRAWN = offering("replicates")


def bootstrap_options(inputs: Inputs) -> Bootstrap | None:
    """The bootstrap options of ``inputs`` checked, or None without ``bootstrap=``.

    >>> from streameval.tasks.common import Inputs
    >>> bootstrap_options(Inputs(label="y", bootstrap=200, row_id="id"))
    Bootstrap(replicates=200, seed=0, row_id=('id',))
    """
    replicates, seed, row_id = inputs.bootstrap, inputs.seed, inputs.row_id
    if replicates is None:
        if row_id is not None:
            raise InputError(
                f"expected row_id= only with bootstrap=, got row_id={row_id!r} alone; "
                "hint: bootstrap=200 draws 200 replicates"
            )
        return None
    if isinstance(replicates, bool) or not isinstance(replicates, int):
        replicates = -1
    if not 1 <= replicates <= MAX_REPLICATES:
        raise InputError(
            f"expected bootstrap= to be a number of replicates from 1 to {MAX_REPLICATES}, "
            f"got {inputs.bootstrap!r}; hint: 200 replicates give 95% percentile intervals"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MASK:
        raise InputError(
            f"expected seed= to be an integer from 0 to 2**64 - 1, got {seed!r}; hint: seed=0"
        )
    ids = [] if row_id is None else [row_id] if isinstance(row_id, str) else row_id
    if not isinstance(ids, Sequence) or not all(isinstance(c, str) for c in ids):
        raise InputError(
            f"expected row_id= to be a column name or a list of column names, got {row_id!r}; "
            "hint: row_id='request_id'"
        )
    return Bootstrap(replicates, seed, tuple(ids))


def plan_replicated(
    module: Task, opened: Opened, inputs: Inputs, boot: Bootstrap, used: Sequence[str]
) -> tuple[TaskPlan, Replication]:
    """The task's plan over bootstrap replicates, and how source rows become replicate rows.

    ``used`` are the columns the task reads; they and the group keys are hashed when no row
    id is given. The task plans (and checks its input) over the source with a placeholder
    replicate 0 and weight column; its state query then runs on :meth:`Replication.rows`.
    The task's ``runs`` is None (its kernel would sum the rows unreplicated); the kernels of
    the :data:`DRAWN` tasks draw the replicates themselves from rows read by
    ``Replication.runs``.
    """
    for name in (REPLICATE, WEIGHT):
        if name in used or (name == WEIGHT and name in opened.schema):
            raise InputError(
                f"expected no source column named {name!r} among the columns read with "
                "bootstrap= (the replicate key and weight take that name), got one; hint: "
                "rename it in a LazyFrame"
            )
    hashed = list(boot.row_id) or [*used, *opened.keys]
    weight = inputs.weight or WEIGHT
    extra = {REPLICATE: pl.lit(0, REPLICATE_TYPE)}
    types: dict[str, pl.DataType] = {REPLICATE: REPLICATE_TYPE()}
    if inputs.weight is None:
        extra[WEIGHT] = pl.lit(1.0)
        types[WEIGHT] = pl.Float64()
    placeholder = Opened(
        opened.lf.with_columns(**extra),
        pl.Schema({**opened.schema, **types}),
        opened.files,
        opened.engine,
        [*opened.keys, REPLICATE],
    )
    task = module.plan(placeholder, replace(inputs, weight=weight))
    if not boot.row_id:
        check_distinct(opened, hashed)
    spec = replace(
        task.spec,
        weight=inputs.weight,
        replicates=boot.replicates,
        seed=boot.seed,
        row_id=boot.row_id,
    )
    runs = None
    if task.runs is not None and spec.kind in DRAWN:
        runs = _keyed_reader(task.runs, extra, opened.schema, tuple(hashed), boot)
    replication = Replication(boot, tuple(hashed), weight, inputs.weight, runs)
    return replace(task, spec=spec, runs=None), replication


def _keyed_reader(
    read: Callable[..., Any],
    extra: Mapping[str, pl.Expr],
    schema: pl.Schema,
    hashed: tuple[str, ...],
    boot: Bootstrap,
) -> Callable[..., Any]:
    """The task's reader of a unit's rows for its kernel, each row with its key.

    The key (column :data:`~streameval.resample_draw.ROW_KEY`) is the one
    :meth:`Replication.rows` draws from; the placeholder replicate (0, held fixed) and
    weight columns are those the task was planned with.
    """

    def keyed(lf: pl.LazyFrame) -> pl.LazyFrame:
        return with_row_key(
            lf.with_columns(**extra), hashed, schema, boot.seed, ROW_KEY, stable=bool(boot.row_id)
        )

    def runs(unit: pl.LazyFrame, constants: Mapping[str, Any], shard: Any = None) -> Any:
        shard = None if shard is None else shard.mapped(keyed)
        return read(keyed(unit), {**constants, REPLICATE: 0}, shard=shard)

    return runs


def check_distinct(opened: Opened, hashed: Sequence[str]) -> None:
    """Raise when many rows repeat another row's values in the hashed columns.

    Such rows get the same draws: they are resampled as one cluster, which widens the
    intervals, badly so for hard predictions or rounded scores. One pass counts the rows and
    the distinct keys approximately (HyperLogLog: about 1% off from a million rows on, but
    up to 20% off for a few rows, so below :data:`EXACT_DISTINCT` rows a second pass counts
    them exactly); above :data:`DUPLICATE_SHARE` the hint asks for a row id.
    """
    keyed = with_row_key(opened.lf, hashed, opened.schema, 0, "_se_key", stable=False)
    keys = keyed.select("_se_key")
    approx = pl.col("_se_key").approx_n_unique()
    rows, distinct = collect(keys.select(pl.len(), approx), opened.engine, opened.files).row(0)
    if 0 < rows <= EXACT_DISTINCT:
        exact = keys.select(pl.col("_se_key").n_unique())
        distinct = collect(exact, opened.engine, opened.files).item()
    share = 1 - min(distinct, rows) / rows if rows else 0.0
    if share > DUPLICATE_SHARE:
        raise InputError(
            f"expected rows to differ in the columns hashed for bootstrap draws without "
            f"row_id= ({', '.join(hashed)}), but about {share:.0%} of the {rows} rows repeat "
            "another row's values, and equal rows are drawn together, which widens the "
            "intervals; hint: pass row_id= naming a column that identifies each row (for a "
            "DataFrame, df.with_row_index('row_id')); rows sharing an id are resampled "
            "together, so a user id gives a cluster bootstrap by user"
        )
