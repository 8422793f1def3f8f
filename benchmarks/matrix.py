"""Run ``se.evaluate`` over a matrix of sources, key types and options, against a floor.

Each configuration is measured for each data generator (``generate.py``'s data and
``spread.py``'s) and each row count. Every measurement runs in a fresh child process
(this script re-invoked with ``--worker``): the child times the work alone, after its
imports and after loading in-memory sources, and the parent takes the child's peak RSS
(``ru_maxrss``) from :func:`os.wait4`. Each cell is the median over ``--repeat`` runs
(peak RSS: the largest).

Contenders
----------
floor
    The same source grouped by the same keys with ``pl.len()`` and the sum of every
    column read, ``collect(engine="streaming")`` for scans (the group-by is eager on an
    in-memory DataFrame; a pyarrow Table goes through ``pl.from_arrow`` first).
streameval
    ``se.evaluate(source, ...)``; its compiled loops are loaded before timing.
polars_ds
    ``polars_ds.query_roc_auc(label, score)`` in ``group_by(keys).agg(...)`` on the same
    source (binary, unweighted).
sklearn
    The data read into memory before timing; timed: ``partition_by`` the keys and a
    per-group loop of ``roc_auc_score`` (binary), accuracy, macro F1 and one-vs-rest
    ROC AUC (multiclass), or MSE, MAE, median absolute error and R² (regression).

Configurations (``--only``) are listed in :data:`CONFIGS`; ``fresh-process`` times
whole interpreters from the parent instead. Data sets are written once under
``--data-root`` (one folder per generator, row count and layout) and reused.

Usage::

    python benchmarks/matrix.py --rows 1_000_000 --repeat 1
    python benchmarks/matrix.py --rows 20_000_000,100_000_000 --readme benchmarks/README.md \\
        --json /tmp/se_matrix/results.json
    python benchmarks/matrix.py --generator spread --only hive-string,exact,multiclass
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import (  # noqa: E402
    _child_env,
    _cpu_model,
    _maxrss_bytes,
    _ram_gib,
    _version,
    update_readme,
)

if TYPE_CHECKING:
    import polars as pl

GENERATORS: tuple[str, ...] = ("generate", "spread")
CONTENDERS: tuple[str, ...] = ("floor", "streameval", "polars_ds", "sklearn")
MARKER = "matrix"
SEED = 0
SEGMENTS, DAYS = 100, 30
CLASSES = 10
THRESHOLDS = [0.1, 0.3, 0.5, 0.7, 0.9]
BOOTSTRAP_ROWS, REPLICATES = 1_000_000, 200
GROUP_VALUES = 1_000_000
CHALLENGER = "challenger"  # the paired configuration's second model
# Key type of each generator's own data; the other key types are derived from it.
BASE_KEY: dict[str, str] = {"generate": "string", "spread": "int32"}
# Per-group metrics compared between streameval and the contenders, by task.
CHECKED: dict[str, tuple[str, ...]] = {
    "binary": ("roc_auc",),
    "paired": ("roc_auc",),
    "multiclass": ("accuracy", "f1_macro", "roc_auc_ovr_macro"),
    "regression": ("mse", "mae", "median_ae", "r2"),
    "ranking": ("ndcg", "mrr"),
    "multilabel": ("f1_samples", "hamming_loss", "roc_auc_macro"),
}
# streameval's bound on the bucketing error of a metric, where it reports one.
ERROR_COLUMN: dict[str, str] = {
    "roc_auc": "roc_auc_error",
    "roc_auc_ovr_macro": "roc_auc_ovr_macro_error",
    "roc_auc_macro": "roc_auc_macro_error",
}
LABELS = 5  # the multilabel configuration's labels
EXACT_TOLERANCE = 1e-9
# The 1,000-row frame of the fresh-process row, built inside each interpreter.
SMALL_FRAME = (
    "import numpy as np, polars as pl; rng = np.random.default_rng(0); "
    "df = pl.DataFrame({'segment': rng.integers(0, 10, 1000), "
    "'label': rng.integers(0, 2, 1000), 'score': rng.random(1000)}); "
)
FRESH: dict[str, str] = {
    "import": "import streameval",
    "floor": SMALL_FRAME
    + "df.group_by('segment').agg(pl.len(), pl.col('label').sum(), pl.col('score').sum())",
    "streameval": "import streameval as se; "
    + SMALL_FRAME
    + "se.evaluate(df, label='label', score='score', by=['segment'])",
    "polars_ds": "import polars_ds as pds; "
    + SMALL_FRAME
    + "df.group_by('segment').agg(pds.query_roc_auc('label', 'score'))",
    "sklearn": "from sklearn.metrics import roc_auc_score; "
    + SMALL_FRAME
    + "[roc_auc_score(g['label'], g['score']) for g in df.partition_by('segment')]",
}


# --------------------------------------------------------------------------
# Configurations and data sets
# --------------------------------------------------------------------------


@dataclass
class Config:
    """One row of the matrix.

    Attributes
    ----------
    name : str
        Name used by ``--only``.
    layout : str
        Data set layout (see :func:`build`).
    by : tuple of str
        Group keys.
    form : {"path", "lazyframe", "dataframe", "arrow"}
        What ``se.evaluate`` receives: the path (directory, file or glob), a
        ``pl.scan_parquet`` LazyFrame, or the data read in memory before timing.
    task : {"binary", "multiclass", "regression", "paired", "ranking", "multilabel"}
        Task.
    options : dict
        Further ``se.evaluate`` arguments.
    rows : int or None
        Fixed row count instead of ``--rows``.
    about : str
        What the row measures, for the notes.
    """

    name: str
    layout: str
    by: tuple[str, ...] = ("segment", "day")
    form: str = "path"
    task: str = "binary"
    options: dict[str, Any] = field(default_factory=dict)
    rows: int | None = None
    about: str = ""


CONFIGS: tuple[Config, ...] = (
    Config("hive-string", "key-string", about="hive dir, String segment"),
    Config("hive-int32", "key-int32", about="hive dir, Int32 segment"),
    Config("hive-int64", "key-int64", about="hive dir, Int64 segment"),
    Config("hive-categorical", "key-categorical", about="hive dir, Categorical segment"),
    Config("hive-date", "key-date", about="hive dir, Date segment"),
    Config("hive-segment-only", "hive", by=("segment",), about="by segment only"),
    Config("single-file", "single", about="one file, day a column"),
    Config("glob", "glob", about="glob over flat part-*.parquet"),
    Config("lazyframe", "single", form="lazyframe", about="pl.scan_parquet LazyFrame"),
    Config("dataframe", "single", form="dataframe", about="DataFrame read before timing"),
    Config("arrow", "single", form="arrow", about="pyarrow Table read before timing"),
    Config("logit", "logit", about="logit scores clipped to [-30, 30]"),
    Config("segments-100k", "seg100k", about="100,000 segments × 10 days"),
    Config("groups-1m", "groups", by=("group",), about=f"Int32 key of {GROUP_VALUES:,} values"),
    Config(
        "weighted",
        "weighted",
        options={"weight": "weight"},
        about="Float64 weight",
    ),
    Config(
        "weighted-exact",
        "weighted",
        options={"weight": "weight", "precision": "exact"},
        about='Float64 weight, precision="exact"',
    ),
    Config(
        "thresholds-5",
        "hive",
        options={"threshold": THRESHOLDS},
        about="5 thresholds",
    ),
    Config("exact", "hive", options={"precision": "exact"}, about='precision="exact"'),
    Config(
        "intervals",
        "hive",
        options={"ci": "wilson"},
        about="ci='wilson': Wilson intervals, caret's statistics, DeLong AUC interval",
    ),
    Config(
        "bootstrap-200",
        "ids",
        by=("segment",),
        options={"ci": "bootstrap", "bootstrap": REPLICATES, "row_id": "id"},
        rows=BOOTSTRAP_ROWS,
        about=f"ci='bootstrap', {REPLICATES} replicates, row_id, by segment",
    ),
    Config(
        "bootstrap-200-regression",
        "regression-ids",
        by=("segment",),
        task="regression",
        options={"ci": "bootstrap", "bootstrap": REPLICATES, "row_id": "id"},
        rows=BOOTSTRAP_ROWS,
        about=f"task='regression', ci='bootstrap', {REPLICATES} replicates, row_id, by segment",
    ),
    Config(
        "bootstrap-200-multiclass",
        "multiclass-ids",
        by=("segment",),
        task="multiclass",
        options={"ci": "bootstrap", "bootstrap": REPLICATES, "row_id": "id"},
        rows=BOOTSTRAP_ROWS,
        about=f"10 classes, ci='bootstrap', {REPLICATES} replicates, row_id, by segment",
    ),
    Config(
        "paired",
        "paired",
        task="paired",
        about="task='paired': two models' scores on the same rows, DeLong interval of each AUC",
    ),
    Config("multiclass", "multiclass", task="multiclass"),
    Config("regression", "regression", task="regression"),
    Config(
        "regression-exact",
        "regression",
        task="regression",
        options={"precision": "exact"},
        about='precision="exact": every distinct label and error value',
    ),
    Config(
        "ranking",
        "ranking",
        by=("day",),
        task="ranking",
        options={"k": [5, 10]},
        about="task='ranking': queries of 20 consecutive rows, label as relevance, k=[5, 10], "
        "by day",
    ),
    Config(
        "multilabel",
        "multilabel",
        task="multilabel",
        about=f"task='multilabel': {LABELS} 0/1 label columns and their scores",
    ),
    Config("fresh-process", "", rows=1000),
)
CONFIG_BY_NAME: dict[str, Config] = {c.name: c for c in CONFIGS}
# Contenders that do not apply to a configuration, and why.
NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("weighted", "polars_ds"): "no weights",
    ("weighted-exact", "polars_ds"): "no weights",
    ("thresholds-5", "polars_ds"): "AUC as hive-string",
    ("thresholds-5", "sklearn"): "AUC as hive-string",
    ("intervals", "polars_ds"): "no intervals",
    ("intervals", "sklearn"): "no intervals",
    ("bootstrap-200", "polars_ds"): "no bootstrap",
    ("bootstrap-200", "sklearn"): "no bootstrap",
    ("bootstrap-200-regression", "polars_ds"): "no bootstrap",
    ("bootstrap-200-regression", "sklearn"): "no bootstrap",
    ("bootstrap-200-multiclass", "polars_ds"): "no bootstrap",
    ("bootstrap-200-multiclass", "sklearn"): "no bootstrap",
    ("paired", "polars_ds"): "one model's AUC, no intervals",
    ("paired", "sklearn"): "one model's AUC, no intervals",
    ("multiclass", "polars_ds"): "binary AUC only",
    ("regression", "polars_ds"): "binary AUC only",
    ("regression-exact", "polars_ds"): "binary AUC only",
    ("ranking", "polars_ds"): "no ranking metrics",
    ("ranking", "sklearn"): "per query: benchmarks/ranking.py",
    ("multilabel", "polars_ds"): "no multilabel metrics",
}


def layout_folder(root: Path, generator: str, rows: int, layout: str) -> Path:
    """Folder of a data set; a ``key-TYPE`` layout of the generator's own type is ``hive``.

    Parameters
    ----------
    root : Path
        ``--data-root``.
    generator : str
        ``generate`` or ``spread``.
    rows : int
        Row count (half of it for ``multiclass``, see :func:`data_rows`).
    layout : str
        Layout name.

    Returns
    -------
    Path
        ``root / f"{generator}-{rows}" / layout``.
    """
    if layout == f"key-{BASE_KEY[generator]}":
        layout = "hive"
    return root / f"{generator}-{rows}" / layout


def data_rows(config: Config, rows: int) -> int:
    """Rows of a configuration's data: fixed, half of ``--rows`` (multiclass) or ``--rows``."""
    if config.rows is not None:
        return config.rows
    return max(rows // 2, 1) if config.task == "multiclass" else rows


def _done(folder: Path) -> Path:
    return folder.with_name(folder.name + ".done")


@dataclass
class Source:
    """Where a configuration's data live and how they are read.

    Attributes
    ----------
    path : str
        Directory, file or glob.
    hive : bool
        Whether ``path`` is a hive-partitioned directory.
    form : str
        See :class:`Config`.
    by : list of str
        Group keys.
    columns : list of str
        Columns read (summed by the floor).
    evaluate : dict
        Keyword arguments of ``se.evaluate`` (without the source).
    """

    path: str
    hive: bool
    form: str
    by: list[str]
    columns: list[str]
    evaluate: dict[str, Any]


def resolve(config: Config, generator: str, rows: int, root: Path) -> Source:
    """The source of a configuration for one generator and row count.

    Parameters
    ----------
    config : Config
        Configuration.
    generator : str
        ``generate`` or ``spread``.
    rows : int
        ``--rows`` value.
    root : Path
        ``--data-root``.

    Returns
    -------
    Source
        Paths, columns and ``se.evaluate`` arguments.
    """
    folder = layout_folder(root, generator, data_rows(config, rows), config.layout)
    path, hive = str(folder), True
    if config.layout == "single":
        path, hive = str(folder / "data.parquet"), False
    elif config.layout == "glob":
        path, hive = str(folder / "part-*.parquet"), False
    by = list(config.by)
    if config.task == "multiclass":
        scores = [f"p{k}" for k in range(CLASSES)]
        kwargs: dict[str, Any] = {"label": "label", "scores": scores, "prediction": "pred"}
        kwargs["classes"] = list(range(CLASSES))
        columns = ["label", *scores, "pred"]
    elif config.task == "regression":
        kwargs = {"label": "y", "prediction": "f"}
        columns = ["y", "f"]
    elif config.task == "paired":
        kwargs = {"label": "label", "scores": ["score", CHALLENGER]}
        columns = ["label", "score", CHALLENGER]
    elif config.task == "ranking":
        kwargs = {"label": "label", "score": "score", "query": "query"}
        columns = ["label", "score", "query"]
    elif config.task == "multilabel":
        labels = ["label", *(f"y{j}" for j in range(1, LABELS))]
        scores = ["score", *(f"s{j}" for j in range(1, LABELS))]
        kwargs = {"label": labels, "scores": scores}
        columns = [*labels, *scores]
    else:
        kwargs = {"label": "label", "score": "score"}
        columns = ["label", "score"]
    if "weight" in config.options:
        columns.append(config.options["weight"])
    kwargs |= {"task": config.task, "by": by, **config.options}
    return Source(path, hive, config.form, by, columns, kwargs)


def _map_files(base: Path, out: Path, change: Callable[[pl.DataFrame, int], pl.DataFrame]) -> None:
    """Rewrite each file of a hive data set at the same relative path, one at a time."""
    import polars as pl

    for index, path in enumerate(sorted(base.rglob("*.parquet"))):
        target = out / path.relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        change(pl.read_parquet(path), index).write_parquet(target, compression="zstd")


def _segment_as(generator: str, key: str) -> Callable[[pl.DataFrame, int], pl.DataFrame]:
    """A file rewriter giving ``segment`` the key type ``key``."""
    import polars as pl

    def change(df: pl.DataFrame, _: int) -> pl.DataFrame:
        seg = pl.col("segment")
        index = (
            seg.str.strip_prefix("seg_").cast(pl.Int32) if BASE_KEY[generator] == "string" else seg
        )
        text = pl.format("seg_{}", index.cast(pl.String).str.zfill(3))
        new = {
            "string": text,
            "int32": index.cast(pl.Int32),
            "int64": index.cast(pl.Int64),
            "categorical": text.cast(pl.Categorical),
            "date": pl.date(2000, 1, 1) + pl.duration(days=index),
        }[key]
        return df.with_columns(new.alias("segment"))

    return change


def _logit(df: pl.DataFrame, _: int) -> pl.DataFrame:
    import polars as pl

    s = pl.col("score")
    return df.with_columns((s.log() - (1 - s).log()).clip(-30.0, 30.0).alias("score"))


def _with_weight(df: pl.DataFrame, index: int) -> pl.DataFrame:
    import numpy as np

    rng = np.random.default_rng([SEED, 101, index])
    return df.with_columns(weight=rng.gamma(2.0, 0.5, df.height))


def _with_group(df: pl.DataFrame, index: int) -> pl.DataFrame:
    import numpy as np

    rng = np.random.default_rng([SEED, 102, index])
    return df.with_columns(group=rng.integers(0, GROUP_VALUES, df.height).astype(np.int32))


def _with_id(df: pl.DataFrame, index: int) -> pl.DataFrame:
    import polars as pl

    return df.with_columns(id=pl.int_range(pl.len(), dtype=pl.Int64) + (index << 32))


def _with_query(df: pl.DataFrame, index: int) -> pl.DataFrame:
    """A query id per 20 consecutive rows of a file (its rows are a query's items)."""
    import polars as pl

    return df.with_columns(query=pl.int_range(pl.len(), dtype=pl.Int64) // 20 + (index << 32))


def _with_labels(df: pl.DataFrame, index: int) -> pl.DataFrame:
    """Four more labels (0/1 Int8) and their scores beside ``label`` and ``score``.

    Label j has prevalence 0.4 / j; its score is rounded to 3 decimals (ties) and shifted up
    by 0.3 on its positives, so each label's AUC is well above ½.
    """
    import numpy as np
    import polars as pl

    rng = np.random.default_rng([SEED, 107, index])
    columns = {}
    for j in range(1, LABELS):
        truth = rng.random(df.height) < 0.4 / j
        columns[f"y{j}"] = truth.astype(np.int8)
        columns[f"s{j}"] = np.round(0.7 * rng.random(df.height) + 0.3 * truth, 3)
    return df.with_columns(**{name: pl.Series(values) for name, values in columns.items()})


def _with_challenger(df: pl.DataFrame, index: int) -> pl.DataFrame:
    """A second model's score: the first's times a log-normal factor (same sign, reordered)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng([SEED, 103, index])
    factor = np.exp(0.5 * rng.standard_normal(df.height))
    return df.with_columns((pl.col("score") * pl.Series(factor)).alias(CHALLENGER))


def _flatten(base: Path, out: Path) -> None:
    """Write each hive file as ``out/part-K.parquet`` with its ``day`` as a Date column."""
    import polars as pl

    for index, path in enumerate(sorted(base.rglob("*.parquet"))):
        day = path.parent.name.split("=", 1)[1]
        df = pl.read_parquet(path).with_columns(day=pl.lit(day).str.to_date())
        df.write_parquet(out / f"part-{index:04d}.parquet", compression="zstd")


def _tasks_multiclass(out: Path, rows: int) -> None:
    """``tasks.py``'s multiclass data plus a hard prediction ``pred`` (arg max, Int8)."""
    import polars as pl
    from tasks import generate as tasks_generate

    tasks_generate("multiclass", out, rows, 10, SEED)
    scores = [f"p{k}" for k in range(CLASSES)]
    pred = pl.concat_list(scores).list.arg_max().cast(pl.Int8).alias("pred")
    for path in sorted(out.rglob("*.parquet")):
        pl.read_parquet(path).with_columns(pred).write_parquet(path)


def build(generator: str, rows: int, layout: str, root: Path) -> Path:
    """Write a data set unless it is already there, and return its folder.

    Derived layouts (``key-*``, ``single``, ``glob``, ``logit``, ``weighted``,
    ``groups``, ``ids``) are rewrites of the generator's ``hive`` data set, built first if
    needed; ``TASK-ids`` adds a row id to the task's data set. A data set is written to
    ``NAME.tmp`` and renamed when complete; a ``NAME.done`` file marks it.

    Parameters
    ----------
    generator : str
        ``generate`` or ``spread``.
    rows : int
        Row count of the data set.
    layout : str
        Layout name.
    root : Path
        ``--data-root``.

    Returns
    -------
    Path
        The data set's folder.
    """
    import generate as generate_module
    import polars as pl
    import spread

    if layout == f"key-{BASE_KEY[generator]}":
        layout = "hive"
    folder = layout_folder(root, generator, rows, layout)
    if _done(folder).exists():
        return folder
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.mkdir(parents=True)
    write = {"generate": generate_module.generate, "spread": spread.generate}[generator]
    derived = {
        "logit": _logit,
        "weighted": _with_weight,
        "groups": _with_group,
        "ids": _with_id,
        "paired": _with_challenger,
        "ranking": _with_query,
        "multilabel": _with_labels,
    }
    if layout == "hive":
        write(tmp, rows, SEGMENTS, DAYS, SEED)
    elif layout == "seg100k":
        write(tmp, rows, 100_000, 10, SEED)
    elif layout == "multiclass" and generator == "generate":
        _tasks_multiclass(tmp, rows)
    elif layout == "multiclass":
        spread.generate_multiclass(tmp, rows, SEGMENTS, 10, SEED)
    elif layout == "regression" and generator == "generate":
        from tasks import generate as tasks_generate

        tasks_generate("regression", tmp, rows, DAYS, SEED)
    elif layout == "regression":
        spread.generate_regression(tmp, rows, SEGMENTS, DAYS, SEED)
    elif layout.endswith("-ids"):  # a task's data set with a row id
        _map_files(build(generator, rows, layout.removesuffix("-ids"), root), tmp, _with_id)
    else:
        base = build(generator, rows, "hive", root)
        if layout == "single":
            scan = pl.scan_parquet(base, hive_partitioning=True)
            scan.sink_parquet(tmp / "data.parquet", compression="zstd")
        elif layout == "glob":
            _flatten(base, tmp)
        elif layout.startswith("key-"):
            _map_files(base, tmp, _segment_as(generator, layout.removeprefix("key-")))
        else:
            _map_files(base, tmp, derived[layout])
    tmp.rename(folder)
    _done(folder).touch()
    return folder


# --------------------------------------------------------------------------
# Work done in the child processes
# --------------------------------------------------------------------------


def load(src: Source) -> Any:
    """What the timed work receives: the path, a LazyFrame or the data in memory."""
    import polars as pl

    if src.form == "lazyframe":
        return pl.scan_parquet(src.path)
    if src.form == "dataframe":
        return pl.read_parquet(src.path)
    if src.form == "arrow":
        import pyarrow.parquet as pq

        return pq.read_table(src.path)
    return src.path


def grouped(src: Source, data: Any, aggs: list[pl.Expr]) -> pl.DataFrame:
    """``group_by(keys).agg(aggs)`` over a source as :func:`load` returned it.

    Scans are collected with the streaming engine; a DataFrame is grouped eagerly;
    a pyarrow Table goes through ``pl.from_arrow`` (inside the timing).
    """
    import polars as pl

    if src.form == "path":
        frame: Any = pl.scan_parquet(src.path, hive_partitioning=src.hive)
    elif src.form == "arrow":
        frame = pl.from_arrow(data)
    else:
        frame = data
    query = frame.group_by(src.by).agg(aggs)
    return query.collect(engine="streaming") if isinstance(query, pl.LazyFrame) else query


def tidy(df: pl.DataFrame, src: Source, task: str) -> pl.DataFrame:
    """One row per group: keys as String, the checked metrics (and error bounds) as Float64.

    A paired table keeps its first model's row per group (the ``score`` column's).
    """
    import polars as pl

    wanted = [m for m in CHECKED[task] if m in df.columns]
    wanted += [ERROR_COLUMN[m] for m in wanted if ERROR_COLUMN.get(m) in df.columns]
    out = df.select(
        *[pl.col(k).cast(pl.String) for k in src.by], *[pl.col(c).cast(pl.Float64) for c in wanted]
    )
    return out.unique(subset=src.by, keep="first", maintain_order=True)


# A prepared contender: the timed call, returning per-group results (or None) and facts.
Work = Callable[[], "tuple[pl.DataFrame | None, dict[str, Any]]"]


def prepare_floor(src: Source, config: Config) -> Work:
    """Load the source; return the floor: group-by with ``len`` and sums."""
    import polars as pl

    data = load(src)

    def work() -> tuple[pl.DataFrame | None, dict[str, Any]]:
        aggs = [pl.len(), *[pl.col(c).sum() for c in src.columns]]
        out = grouped(src, data, aggs)
        return None, {"rows": int(out["len"].sum()), "groups": out.height}

    return work


def prepare_streameval(src: Source, config: Config) -> Work:
    """Import streameval, load its compiled loops and the source; return ``se.evaluate``.

    For ``bootstrap-200`` the work first times one plain ``se.evaluate`` of the same
    data (``plain_s``), then the bootstrap.
    """
    import streameval as se

    info: dict[str, Any] = {
        "streameval": getattr(se, "__version__", "?"),
        "streameval_path": str(Path(se.__file__).parent),
    }
    try:
        from streameval.kernels.compiled import loops
        from streameval.local import warm

        info["warm_up_s"] = round(warm(), 2)
        info["compiled"] = loops() is not None
    except ImportError:
        info["compiled"] = None
    data = load(src)

    def work() -> tuple[pl.DataFrame | None, dict[str, Any]]:
        kwargs = dict(src.evaluate)
        if kwargs.get("ci") == "bootstrap":
            plain = {k: v for k, v in kwargs.items() if k not in ("ci", "bootstrap", "row_id")}
            t0 = time.perf_counter()
            se.evaluate(data, **plain)
            info["plain_s"] = time.perf_counter() - t0
        out = se.evaluate(data, **kwargs)
        return tidy(out, src, config.task), info

    return work


def prepare_polars_ds(src: Source, config: Config) -> Work:
    """Import polars-ds and load the source; return ``query_roc_auc`` in a group-by."""
    import polars_ds as pds

    data = load(src)

    def work() -> tuple[pl.DataFrame | None, dict[str, Any]]:
        auc = pds.query_roc_auc(src.evaluate["label"], src.evaluate["score"]).alias("roc_auc")
        out = grouped(src, data, [auc])
        return tidy(out, src, config.task), {"polars_ds": pds.__version__}

    return work


def _sklearn_metrics(task: str, part: pl.DataFrame, src: Source) -> list[float]:
    """scikit-learn's metrics of one group, in :data:`CHECKED` order (NaN where undefined)."""
    import numpy as np
    from sklearn import metrics as skm

    def guarded(fn: Callable[[], float]) -> float:
        try:
            return float(fn())
        except ValueError:  # a single class in the group
            return float("nan")

    if task == "regression":
        y, f = part["y"].to_numpy(), part["f"].to_numpy()
        return [
            skm.mean_squared_error(y, f),
            skm.mean_absolute_error(y, f),
            skm.median_absolute_error(y, f),
            skm.r2_score(y, f),
        ]
    if task == "multilabel":
        truth = part.select(src.evaluate["label"]).to_numpy()
        p = part.select(src.evaluate["scores"]).to_numpy()
        predicted = (p >= 0.5).astype(np.int8)
        return [
            skm.f1_score(truth, predicted, average="samples", zero_division=0),
            skm.hamming_loss(truth, predicted),
            guarded(lambda: skm.roc_auc_score(truth, p, average="macro")),
        ]
    y = part[src.evaluate["label"]].to_numpy()
    if task == "multiclass":
        pred = part["pred"].to_numpy()
        p = part.select(src.evaluate["scores"]).to_numpy()
        labels = list(range(CLASSES))
        return [
            skm.accuracy_score(y, pred),
            skm.f1_score(y, pred, average="macro", zero_division=0),
            guarded(lambda: skm.roc_auc_score(y, p, multi_class="ovr", labels=labels)),
        ]
    s = part[src.evaluate["score"]].to_numpy()
    weight = src.evaluate.get("weight")
    w = None if weight is None else part[weight].to_numpy()
    if np.all(y == y[0]):
        return [float("nan")]
    return [guarded(lambda: skm.roc_auc_score(y, s, sample_weight=w))]


def prepare_sklearn(src: Source, config: Config) -> Work:
    """Read the data into memory; return ``partition_by`` and the per-group loop."""
    import polars as pl
    import sklearn.metrics  # noqa: F401  (imported before timing)

    df = pl.scan_parquet(src.path, hive_partitioning=src.hive).select(*src.by, *src.columns)
    frame = df.collect()

    def work() -> tuple[pl.DataFrame | None, dict[str, Any]]:
        names = CHECKED[config.task]
        rows: dict[str, list[Any]] = {c: [] for c in [*src.by, *names]}
        for key, part in frame.partition_by(src.by, as_dict=True).items():
            values = _sklearn_metrics(config.task, part, src)
            for column, value in zip([*src.by, *names], [*key, *values], strict=True):
                rows[column].append(value)
        return tidy(pl.DataFrame(rows), src, config.task), {}

    return work


PREPARE: dict[str, Callable[[Source, Config], Work]] = {
    "floor": prepare_floor,
    "streameval": prepare_streameval,
    "polars_ds": prepare_polars_ds,
    "sklearn": prepare_sklearn,
}


def worker(args: argparse.Namespace) -> int:
    """Run one contender once in this process and write ``scratch/TAG.json``.

    The per-group results, if any, go to ``scratch/TAG.parquet``. An import error
    (a contender that is not installed) is reported as ``na``, any other failure as
    ``error``.

    Returns
    -------
    int
        Exit code: 0 on success, 1 on failure.
    """
    config = CONFIG_BY_NAME[args.config]
    src = resolve(config, args.generator, args.rows[0], args.data_root)
    summary: dict[str, Any] = {}
    code = 0
    try:
        t0 = time.perf_counter()
        work = PREPARE[args.worker](src, config)
        summary["setup_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        result, info = work()
        summary["wall_s"] = time.perf_counter() - t0
        summary["info"] = info
        if result is not None:
            result.write_parquet(args.scratch / f"{args.tag}.parquet")
            summary["info"].setdefault("groups", result.height)
    except Exception as exc:
        # Any failure is reported in the table rather than raised; a contender that
        # cannot be imported is not applicable rather than failed.
        traceback.print_exc()
        missing = isinstance(exc, ImportError) and args.worker in ("polars_ds", "sklearn")
        summary["na" if missing else "error"] = f"{type(exc).__name__}: {exc}"
        code = 1
    (args.scratch / f"{args.tag}.json").write_text(json.dumps(summary))
    return code


def prime() -> int:
    """Evaluate small frames of every kind once, untimed.

    numba's on-disk cache is rebuilt after a change of the compiled loops' source; this
    keeps that compilation out of the first timed run.
    """
    import numpy as np
    import polars as pl

    import streameval as se

    rng = np.random.default_rng(0)
    n = 5000
    index = rng.integers(0, 5, n)
    df = pl.DataFrame(
        {
            "segment": index.astype(np.int32),
            "label": rng.integers(0, 2, n).astype(np.int8),
            "score": rng.random(n),
            "weight": rng.random(n),
        }
    )
    keys = {
        "string": pl.col("segment").cast(pl.String),
        "int64": pl.col("segment").cast(pl.Int64),
        "categorical": pl.col("segment").cast(pl.String).cast(pl.Categorical),
        "date": pl.date(2000, 1, 1) + pl.duration(days=pl.col("segment")),
    }
    binary = {"label": "label", "score": "score", "by": ["segment"]}
    for key in keys.values():
        se.evaluate(df.with_columns(key.alias("segment")), **binary)
    for options in (
        {},
        {"precision": "exact"},
        {"weight": "weight"},
        {"threshold": THRESHOLDS},
        {"ci": "bootstrap", "bootstrap": 3},
    ):
        se.evaluate(df, **binary, **options)
    se.evaluate(df.with_columns(score=pl.col("score") * 60 - 30), **binary)
    p = rng.dirichlet(np.ones(CLASSES), n)
    scores = {f"p{k}": p[:, k] for k in range(CLASSES)}
    multi = df.with_columns(label=pl.Series(index.astype(np.int8)), pred=pl.Series(index), **scores)
    se.evaluate(
        multi,
        task="multiclass",
        label="label",
        scores=list(scores),
        prediction="pred",
        classes=list(range(CLASSES)),
        by=["segment"],
    )
    se.evaluate(df, task="regression", label="score", prediction="weight", by=["segment"])
    return 0


def exact_check(args: argparse.Namespace) -> int:
    """Compare exact AUCs of a few groups with scikit-learn's; write ``scratch/TAG.json``.

    For the ``hive``, ``logit`` and ``weighted`` data sets present, the first four
    groups (by key) that hold both classes are evaluated with ``precision="exact"``
    and with ``sklearn.metrics.roc_auc_score`` (with ``sample_weight`` when weighted).
    """
    import polars as pl
    from sklearn.metrics import roc_auc_score

    import streameval as se

    keys = ["segment", "day"]
    checks = []
    for layout, weight in (("hive", None), ("logit", None), ("weighted", "weight")):
        folder = layout_folder(args.data_root, args.generator, args.rows[0], layout)
        if not _done(folder).exists():
            continue
        scan = pl.scan_parquet(folder, hive_partitioning=True)
        both = (
            scan.group_by(keys)
            .agg(pos=pl.col("label").sum(), n=pl.len())
            .filter(pl.col("pos") > 0, pl.col("pos") < pl.col("n"))
            .sort(keys)
            .head(4)
        )
        data = scan.join(both.select(keys), on=keys, how="semi").collect()
        ours = se.evaluate(
            data, label="label", score="score", by=keys, weight=weight, precision="exact"
        )
        ours = ours.unique(subset=keys).sort(keys)
        diffs = []
        for row, part in zip(
            ours.iter_rows(named=True), data.sort(keys).partition_by(keys), strict=True
        ):
            w = None if weight is None else part[weight].to_numpy()
            theirs = roc_auc_score(
                part["label"].to_numpy(), part["score"].to_numpy(), sample_weight=w
            )
            diffs.append(abs(row["roc_auc"] - theirs))
        checks.append({"layout": layout, "groups": len(diffs), "max_diff": max(diffs, default=0.0)})
    (args.scratch / f"{args.tag}.json").write_text(json.dumps(checks))
    return 0


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------


@dataclass
class Run:
    """One child process: its timed work (or whole wall time) and peak RSS."""

    wall_s: float | None = None
    process_s: float | None = None
    peak_rss_bytes: int | None = None
    error: str | None = None
    na: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Cell:
    """A contender's runs in one configuration (or why it did not run)."""

    runs: list[Run] = field(default_factory=list)
    na: str | None = None
    error: str | None = None

    @property
    def wall_s(self) -> float | None:
        """Median wall time over the runs."""
        walls = [r.wall_s for r in self.runs if r.wall_s is not None]
        return statistics.median(walls) if walls else None

    @property
    def peak_rss_bytes(self) -> int | None:
        """Largest peak RSS over the runs."""
        peaks = [r.peak_rss_bytes for r in self.runs if r.peak_rss_bytes]
        return max(peaks) if peaks else None

    def median_info(self, key: str) -> float | None:
        """Median of a numeric fact reported by the runs."""
        values = [r.info[key] for r in self.runs if isinstance(r.info.get(key), int | float)]
        return statistics.median(values) if values else None


@dataclass
class Row:
    """One line of the table."""

    generator: str
    config: str
    rows_arg: int | None = None
    rows: int | None = None
    groups: int | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def spawn(cmd: list[str], timeout: float, log: Path) -> Run:
    """Run a command to its end or to ``timeout``; reap it with :func:`os.wait4`.

    Returns
    -------
    Run
        ``process_s`` (wall time seen from here), ``peak_rss_bytes`` and, on a
        timeout or a non-zero exit, ``error``.
    """
    run = Run()
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_child_env())
        expired = threading.Event()

        def kill() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        # wait4's resource usage is this child's alone (unlike RUSAGE_CHILDREN).
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    run.process_s = time.perf_counter() - t0
    run.peak_rss_bytes = _maxrss_bytes(usage.ru_maxrss)
    if expired.is_set():
        run.error = f"timeout after {timeout:g} s"
    elif proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:]
        run.error = f"exit code {proc.returncode}" + (f": {tail[0]}" if tail else "")
    return run


def _script(*extra: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *extra]


def run_worker(
    contender: str, config: Config, generator: str, rows: int, args: argparse.Namespace, tag: str
) -> Run:
    """Run one contender once in a fresh child and read its summary."""
    cmd = _script("--worker", contender, "--config", config.name, "--generator", generator)
    cmd += ["--rows", str(rows), "--data-root", str(args.data_root), "--scratch", str(args.scratch)]
    run = spawn([*cmd, "--tag", tag], args.timeout, args.scratch / f"{tag}.log")
    summary_path = args.scratch / f"{tag}.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    if "na" in summary:
        run.na, run.error = summary["na"], None
    elif "error" in summary:
        run.error = summary["error"]
    elif run.error is None and "wall_s" not in summary:
        run.error = "no result"
    run.wall_s = summary.get("wall_s")
    run.info = summary.get("info", {})
    return run


def measure(
    contender: str, config: Config, generator: str, rows: int, args: argparse.Namespace
) -> Cell:
    """Run a contender ``--repeat`` times; keep the first run's per-group results."""
    cell = Cell()
    for i in range(args.repeat):
        tag = f"{generator}-{rows}-{config.name}-{contender}"
        run = run_worker(contender, config, generator, rows, args, tag if i == 0 else f"{tag}-{i}")
        if run.na is not None or run.error is not None:
            cell.na, cell.error = run.na, run.error
            break
        cell.runs.append(run)
    status = cell.na or cell.error or f"{cell.wall_s:.2f} s"
    print(f"  {config.name} / {contender}: {status}", flush=True)
    return cell


def _warm(src: Source) -> None:
    """Read the source's files once so every run starts with a warm page cache."""
    path = Path(src.path)
    files = (
        sorted(path.rglob("*.parquet")) if path.is_dir() else sorted(path.parent.glob(path.name))
    )
    for file in files:
        with open(file, "rb") as fh:
            while fh.read(1 << 24):
                pass


def prepare_data(config: Config, generator: str, rows: int, args: argparse.Namespace) -> str | None:
    """Build a configuration's data set in a child process; return an error or None."""
    n = data_rows(config, rows)
    folder = layout_folder(args.data_root, generator, n, config.layout)
    if _done(folder).exists():
        return None
    print(f"  writing {folder} ...", flush=True)
    cmd = _script("--prepare", config.layout, "--generator", generator, "--rows", str(n))
    cmd += ["--data-root", str(args.data_root)]
    log = args.scratch / f"prepare-{generator}-{n}-{config.layout}.log"
    run = spawn(cmd, args.timeout, log)
    return None if run.error is None else f"data: {run.error}"


def run_config(config: Config, generator: str, rows: int, args: argparse.Namespace) -> Row:
    """Measure one configuration: floor, streameval and the contenders that apply."""
    row = Row(generator=generator, config=config.name, rows_arg=rows)
    error = prepare_data(config, generator, rows, args)
    if error is not None:
        row.cells["streameval"] = Cell(error=error)
        return row
    src = resolve(config, generator, rows, args.data_root)
    if not args.no_warm:
        _warm(src)
    for contender in CONTENDERS:
        reason = NOT_APPLICABLE.get((config.name, contender))
        if contender in ("polars_ds", "sklearn") and contender not in args.contenders:
            reason = "not selected"
        if reason is not None:
            row.cells[contender] = Cell(na=reason)
            continue
        groups = row.cells["floor"].median_info("groups") if "floor" in row.cells else None
        if contender == "sklearn" and groups and groups > args.sklearn_max_groups:
            reason = f"{groups:,.0f} groups > --sklearn-max-groups"
            row.cells[contender] = Cell(na=reason)
            continue
        row.cells[contender] = measure(contender, config, generator, rows, args)
    floor = row.cells["floor"]
    row.rows = int(floor.median_info("rows") or 0) or None
    row.groups = int(floor.median_info("groups") or 0) or None
    return row


def run_fresh(args: argparse.Namespace) -> Row:
    """Time whole interpreters (``python -c ...``) from the parent, startup included."""
    row = Row(generator="—", config="fresh-process", rows=1000, groups=10)
    for name, code in FRESH.items():
        if name in ("polars_ds", "sklearn") and name not in args.contenders:
            row.cells[name] = Cell(na="not selected")
            continue
        cell = Cell()
        for i in range(args.repeat):
            run = spawn(
                [sys.executable, "-c", code], args.timeout, args.scratch / f"fresh-{name}-{i}.log"
            )
            if run.error is not None:
                if "ModuleNotFoundError" in run.error:
                    cell.na = run.error.split(": ", 1)[-1]
                else:
                    cell.error = run.error
                break
            run.wall_s = run.process_s
            cell.runs.append(run)
        row.cells[name] = cell
        print(f"  fresh-process / {name}: {cell.na or cell.error or f'{cell.wall_s:.2f} s'}")
    imported = row.cells.pop("import")
    if imported.wall_s is not None:
        row.notes.append(f"`import streameval` alone {imported.wall_s:.2f} s")
    row.notes.append("whole `python -c` processes on a 1,000-row frame, startup included")
    return row


def run_exact_check(generator: str, rows: int, args: argparse.Namespace) -> list[str]:
    """Run :func:`exact_check` in a child; return its report lines (warnings first)."""
    tag = f"check-{generator}-{rows}"
    cmd = _script("--check", "--generator", generator, "--rows", str(rows))
    cmd += ["--data-root", str(args.data_root), "--scratch", str(args.scratch), "--tag", tag]
    run = spawn(cmd, args.timeout, args.scratch / f"{tag}.log")
    path = args.scratch / f"{tag}.json"
    if run.error is not None or not path.exists():
        return [f"warning: exact check ({generator}, {rows:,} rows) failed: {run.error}"]
    lines = []
    for check in json.loads(path.read_text()):
        text = (
            f"exact AUC vs roc_auc_score ({generator}, {rows:,} rows, {check['layout']}, "
            f"{check['groups']} groups): max |Δ| {check['max_diff']:.1e}"
        )
        if check["max_diff"] > EXACT_TOLERANCE:
            lines.insert(0, f"warning: {text} > {EXACT_TOLERANCE:g}")
        else:
            lines.append(text)
    return lines


def tolerance(
    metric: str, config: Config, joined: pl.DataFrame, contender: str
) -> pl.Series | float:
    """Largest accepted ``|ours - scikit-learn's|`` per group.

    1e-9 for polars-ds (exact), in exact mode and for metrics computed exactly in
    every mode; otherwise streameval's reported error bound plus 1e-9; no limit for
    the approximate ``median_ae``.
    """
    if contender == "polars_ds" or config.options.get("precision") == "exact":
        return EXACT_TOLERANCE
    error = ERROR_COLUMN.get(metric)
    if error is not None:
        return joined[error] + EXACT_TOLERANCE if error in joined.columns else float("inf")
    if metric == "median_ae":
        return float("inf")
    return EXACT_TOLERANCE * joined[f"{metric}_ref"].abs().clip(lower_bound=1.0)


def compare(row: Row, args: argparse.Namespace) -> list[str]:
    """Compare a row's per-group metrics: streameval and polars-ds against scikit-learn.

    A difference larger than streameval's reported error bound (or than 1e-9 for
    ``exact``) is a warning, added to the row's notes and returned.
    """
    import polars as pl

    config = CONFIG_BY_NAME[row.config]
    keys = list(config.by)
    prefix = f"{row.generator}-{row.rows_arg}-{row.config}"

    def load_result(contender: str) -> pl.DataFrame | None:
        path = args.scratch / f"{prefix}-{contender}.parquet"
        return pl.read_parquet(path) if path.exists() else None

    reference = load_result("sklearn")
    if reference is None:
        return []
    warnings = []
    for contender in ("streameval", "polars_ds"):
        ours = load_result(contender)
        if ours is None:
            continue
        joined = ours.join(reference, on=keys, how="inner", suffix="_ref")
        parts = []
        for metric in CHECKED[config.task]:
            if metric not in ours.columns:
                continue
            ok_a = pl.col(metric).is_not_null() & pl.col(metric).is_not_nan()
            ok_b = pl.col(f"{metric}_ref").is_not_null() & pl.col(f"{metric}_ref").is_not_nan()
            # Groups scikit-learn leaves undefined (a class missing) are noted, not errors.
            undefined = joined.filter(ok_a & ~ok_b).height
            missing = joined.filter(~ok_a & ok_b).height
            finite = joined.filter(ok_a & ok_b)
            diff = (finite[metric] - finite[f"{metric}_ref"]).abs()
            worst = float(diff.max()) if finite.height else 0.0  # type: ignore[arg-type]
            part = f"{metric} {worst:.0e}"
            error = ERROR_COLUMN.get(metric)
            if error in finite.columns and finite.height:
                part += f" (largest {error} {float(finite[error].max()):.0e})"  # type: ignore[arg-type]
            if undefined:
                part += f" ({undefined} groups undefined in scikit-learn)"
            parts.append(part)
            over = int((diff > tolerance(metric, config, finite, contender)).sum())
            if over or missing:
                warnings.append(
                    f"warning: {row.generator}/{row.config}: {contender} {metric} differs "
                    f"from scikit-learn beyond its bound in {over} groups; NaN where "
                    f"scikit-learn has a value in {missing}"
                )
        if ours.height != reference.height:
            parts.append(f"{ours.height} vs {reference.height} groups")
        who = "se" if contender == "streameval" else "polars-ds"
        row.notes.append(f"max |Δ| {who} vs sklearn: " + ", ".join(parts))
    row.notes += warnings
    return warnings


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _clip(text: str, size: int = 100) -> str:
    """``text`` on one line, cut to ``size`` characters, then its pipes escaped.

    Escaping after the cut means a cut never splits an escape (a cell ending in a lone ``\\``).
    """
    text = text.replace("\n", " ")
    text = text if len(text) <= size else text[: size - 3] + "..."
    return text.replace("|", "\\|")


def contender_cell(cell: Cell | None, floor: float | None) -> str:
    """``ratio× (seconds s, MB)``, ``n/a (why)`` or ``error: ...``."""
    if cell is None:
        return "—"
    if cell.na is not None:
        return f"n/a ({_clip(cell.na, 60)})"
    if cell.error is not None:
        return f"error: {_clip(cell.error)}"
    wall, peak = cell.wall_s, cell.peak_rss_bytes
    ratio = f"{wall / floor:.1f}×" if wall is not None and floor else "—"
    mb = f", {peak / 2**20:,.0f} MB" if peak else ""
    return f"{ratio} ({_seconds(wall)} s{mb})"


def streameval_notes(row: Row) -> list[str]:
    """Notes from streameval's runs: bootstrap passes, compiled loops."""
    cell = row.cells.get("streameval")
    if cell is None or not cell.runs:
        return []
    notes = []
    plain = cell.median_info("plain_s")
    if plain and cell.wall_s:
        notes.append(f"{cell.wall_s / plain:.1f} plain passes (plain evaluate {plain:.2f} s)")
    if cell.runs[0].info.get("compiled") is False:
        notes.append("NumPy kernel (numba not loaded)")
    return notes


def markdown_table(rows: list[Row]) -> str:
    """Render the rows as a Markdown table (no trailing newline)."""
    header = [
        "data",
        "configuration",
        "rows",
        "groups",
        "streameval s",
        "floor s",
        "× floor",
        "peak RSS MB",
        "polars-ds × floor (s, MB)",
        "scikit-learn × floor (s, MB)",
        "notes",
    ]
    lines = [header, ["---", "---", *["---:"] * 6, "---", "---", "---"]]
    for row in rows:
        se_cell = row.cells.get("streameval", Cell())
        floor = row.cells.get("floor", Cell())
        about = CONFIG_BY_NAME[row.config].about
        notes = ([about] if about else []) + streameval_notes(row) + row.notes
        if se_cell.error is not None or floor.error is not None:
            failed = se_cell.error or floor.error or ""
            which = "streameval" if se_cell.error else "floor"
            notes.insert(0, f"error ({which}): {_clip(failed, 200)}")
        ratio = (
            f"{se_cell.wall_s / floor.wall_s:.1f}"
            if se_cell.wall_s is not None and floor.wall_s
            else "—"
        )
        peak = se_cell.peak_rss_bytes
        lines.append(
            [
                row.generator,
                f"`{row.config}`",
                "—" if row.rows is None else f"{row.rows:,}",
                "—" if row.groups is None else f"{row.groups:,}",
                _seconds(se_cell.wall_s),
                _seconds(floor.wall_s),
                ratio,
                "—" if not peak else f"{peak / 2**20:,.0f}",
                contender_cell(row.cells.get("polars_ds"), floor.wall_s),
                contender_cell(row.cells.get("sklearn"), floor.wall_s),
                "; ".join(_clip(n, 200) for n in notes),
            ]
        )
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def describe_setup(rows: list[Row], repeat: int) -> str:
    """One line on the machine, the versions and the method."""
    ram = _ram_gib()
    machine = f"{_cpu_model()}, {os.cpu_count()} cores" + (f", {ram:.0f} GiB RAM" if ram else "")
    se_version = next(
        (
            r.info["streameval"]
            for row in rows
            for cell in row.cells.values()
            for r in cell.runs
            if "streameval" in r.info
        ),
        _version("streameval"),
    )
    versions = (
        f"Python {platform.python_version()}, polars {_version('polars')}, "
        f"streameval {se_version}, numba {_version('numba')}, "
        f"scikit-learn {_version('scikit-learn')}, polars-ds {_version('polars_ds')}"
    )
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{machine}; {platform.system()} {platform.release()}; {versions}; median of {repeat} "
        f"run(s), each in a fresh process (peak RSS: the largest); {when}."
    )


def _int_list(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v.strip()]


def _names(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = sorted(set(names) - set(allowed))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown)}; choose from {', '.join(allowed)}"
        )
    return [a for a in allowed if a in names]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    config_names = tuple(c.name for c in CONFIGS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", type=_int_list, default=[20_000_000], help="comma-separated row counts"
    )
    parser.add_argument("--generator", choices=[*GENERATORS, "both"], default="both")
    parser.add_argument(
        "--only",
        type=lambda v: _names(v, config_names, "configuration(s)"),
        default=list(config_names),
        help=f"comma-separated subset of {','.join(config_names)}",
    )
    parser.add_argument(
        "--contenders",
        type=lambda v: _names(v, ("polars_ds", "sklearn"), "contender(s)"),
        default=["polars_ds", "sklearn"],
        help="comma-separated subset of polars_ds,sklearn (empty for none)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (median kept)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--data-root", type=Path, default=Path("/tmp/se_matrix"))
    parser.add_argument(
        "--sklearn-max-groups",
        type=int,
        default=100_000,
        help="skip scikit-learn's per-group loop (about 1 ms a group) above this many groups",
    )
    parser.add_argument("--readme", type=Path, help="file whose matrix markers get the table")
    parser.add_argument("--json", type=Path, help="also write the raw results as JSON")
    parser.add_argument("--no-warm", action="store_true", help="do not pre-read the files")
    parser.add_argument("--worker", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prime", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_matrix(args: argparse.Namespace) -> tuple[list[Row], list[str]]:
    """Run every selected configuration for every generator and row count.

    Returns
    -------
    tuple of (list of Row, list of str)
        The rows, and the exact check's report lines.
    """
    generators = GENERATORS if args.generator == "both" else (args.generator,)
    rows_out: list[Row] = []
    checks: list[str] = []
    primed = spawn(_script("--prime"), args.timeout, args.scratch / "prime.log")
    print(f"primed streameval's compiled loops in {primed.process_s:.1f} s", flush=True)
    if primed.error is not None:
        checks.append(f"warning: priming failed: {primed.error}")
    selected = [CONFIG_BY_NAME[name] for name in args.only]
    for generator in generators:
        for rows in args.rows:
            print(f"{generator}, {rows:,} rows", flush=True)
            for config in selected:
                # fresh-process runs once at the end; a fixed-size data set once per generator.
                if config.name == "fresh-process" or (config.rows and rows != args.rows[0]):
                    continue
                rows_out.append(run_config(config, generator, rows, args))
            checks += run_exact_check(generator, rows, args)
    if "fresh-process" in args.only:
        print("fresh processes", flush=True)
        rows_out.append(run_fresh(args))
    return rows_out, checks


def main(argv: list[str] | None = None) -> int:
    """Run the command-line interface.

    Parameters
    ----------
    argv : list of str, optional
        Arguments; ``sys.argv[1:]`` when omitted.

    Returns
    -------
    int
        Exit code (0 even when configurations failed: they are reported).
    """
    args = _parse_args(argv)
    if args.worker is not None:
        return worker(args)
    if args.prepare is not None:
        build(args.generator, args.rows[0], args.prepare, args.data_root)
        return 0
    if args.check:
        return exact_check(args)
    if args.prime:
        return prime()

    # This process imports nothing heavy until every child has run: on Linux a
    # child's ru_maxrss starts from its parent's high-water mark.
    t0 = time.perf_counter()
    args.data_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="se_matrix_") as tmp:
        args.scratch = Path(tmp)
        rows, checks = run_matrix(args)
        warnings = [line for line in checks if line.startswith("warning")]
        for row in rows:
            if row.config != "fresh-process":
                warnings += compare(row, args)
    table = markdown_table(rows)
    setup = describe_setup(rows, args.repeat)
    print()
    print(table)
    print()
    print(setup)
    for line in checks:
        print(line)
    for line in warnings:
        if line not in checks:
            print(line)
    print(f"matrix took {time.perf_counter() - t0:,.0f} s")
    if args.readme is not None and update_readme(args.readme, f"{table}\n\n{setup}", MARKER):
        print(f"updated {args.readme}")
    if args.json is not None:
        payload = {
            "setup": setup,
            "rows": [asdict(r) for r in rows],
            "exact_checks": checks,
        }
        args.json.write_text(json.dumps(payload, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
