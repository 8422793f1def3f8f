r"""The job file: a TOML description of a scheduled evaluation, read and validated.

Every key is checked: an unknown key gets a close-match hint, a wrong type or value names
the key's path (``outputs[1].windows[0]``) and what is allowed.

>>> import tempfile, pathlib
>>> job = pathlib.Path(tempfile.mkdtemp()) / "job.toml"
>>> _ = job.write_text('''
... [source]
... paths = ["preds/"]
... partition_key = "day"
... [task]
... label = "label"
... score = "score"
... by = ["segment"]
... [store]
... path = "state"
... [[outputs]]
... path = "metrics"
... windows = ["1d", "7d", "all"]
... ''')
>>> config = load_job(job)
>>> config.task.kind, [w.name for w in config.outputs[0].windows]
('binary', ['1d', '7d', 'all'])
>>> _ = job.write_text('[source]\npaths = ["p"]\n[task]\nlable = "y"\n[store]\npath = "s"\n')
>>> load_job(job)
Traceback (most recent call last):
...
streameval.jobs.tomlkeys.JobConfigError: ...job.toml: task.lable: unknown key; did you mean ...
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..spec import parse_precision
from ..tasks.registry import offering, offers
from .checkconfig import CheckConfig, CheckingConfig, read_checking, read_checks
from .task import TaskConfig, read_task
from .tomlkeys import MISSING, JobConfigError, Table, choice, type_name
from .windows import Window, parse_window

__all__ = ["JobConfig", "JobConfigError", "OutputConfig", "SourceConfig", "load_job"]

FORMATS = ("parquet", "delta", "iceberg")
ENGINES = ("polars", "spark")
OUTPUT_FORMATS = ("parquet", "csv", "json")
RESERVED = ("window", "days")


@dataclass(frozen=True)
class SourceConfig:
    """Where the predictions are and what identifies a source partition."""

    paths: tuple[str, ...]
    partition_key: str | None = None
    format: str = "parquet"
    table: str | None = None
    catalog: dict[str, str] = field(default_factory=dict)
    engine: str = "polars"
    spark: dict[str, str] = field(default_factory=dict)
    fingerprint: str = "metadata"


@dataclass(frozen=True)
class OutputConfig:
    """One published metric table."""

    path: str
    format: str
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class JobConfig:
    """A validated job file. Relative paths are resolved against the job file's folder.

    Made by :func:`load_job`, which checks every key.

    Parameters
    ----------
    file : str
        The job file's absolute path.
    source : SourceConfig
        The ``[source]`` table: where the predictions are (paths, or a catalog table), their
        format and engine, and the ``partition_key`` that identifies a source partition.
    task : TaskConfig
        The ``[task]`` table: the evaluation, with the keyword names of
        :func:`streameval.evaluate`.
    store : str
        The state store's folder (``[store] path``), resolved.
    outputs : tuple of OutputConfig
        The ``[[outputs]]`` tables: each metric table's path, format and windows.
    checks : tuple of CheckConfig
        The ``[[checks]]`` tables: what each day is judged by (:mod:`.checkconfig`).
    checking : CheckingConfig
        The ``[checking]`` table: the checks table's path, the correction, ``on_failure``.

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.demo import example_job
    >>> root = tempfile.mkdtemp()
    >>> job_file = example_job(root)  # a day of predictions, and job.toml
    >>> job = load_job(f"{root}/job.toml")
    >>> job.task.kind, job.task.label, job.source.partition_key
    ('binary', 'y', 'day')
    >>> os.path.relpath(job.store, root), [w.name for w in job.windows]
    ('store', ['1d', 'all'])

    """

    file: str
    source: SourceConfig
    task: TaskConfig
    store: str
    outputs: tuple[OutputConfig, ...]
    checks: tuple[CheckConfig, ...] = ()
    checking: CheckingConfig = field(default_factory=CheckingConfig)

    @property
    def base(self) -> str:
        """The folder relative paths are resolved against (and fingerprints are relative to).

        Returns
        -------
        str
            The job file's folder.

        Examples
        --------
        >>> JobConfig("/jobs/daily.toml", SourceConfig(("/data",)), None, "/s", ()).base
        '/jobs'

        """
        return os.path.dirname(self.file)

    def identity(self) -> dict[str, Any]:
        """What the stored states depend on: a change here needs ``--full-refresh``.

        Returns
        -------
        dict
            The source's ``partition_key`` and ``format``, and the keywords each partition is
            accumulated with (precision and thresholds spelled out); the store records it and
            refuses a run whose identity differs.

        Examples
        --------
        >>> import os, tempfile
        >>> from streameval.demo import example_job
        >>> root = tempfile.mkdtemp()
        >>> job_file = example_job(root)  # a day of predictions, and job.toml
        >>> identity = load_job(f"{root}/job.toml").identity()
        >>> identity["partition_key"], identity["accumulate"]["precision"]
        ('day', 11)

        """
        accumulate = self.task.accumulate_kwargs()
        accumulate["precision"] = parse_precision(self.task.options.get("precision"))
        accumulate.setdefault("thresholds", [0.5])
        if isinstance(accumulate.get("scores"), dict):
            accumulate["scores"] = sorted(accumulate["scores"].items(), key=lambda kv: str(kv[0]))
        identity = {
            "partition_key": self.source.partition_key,
            "format": self.source.format,
            "accumulate": accumulate,
        }
        # as the store's manifest holds it (JSON: tuples as lists), so the two compare equal
        normal: dict[str, Any] = json.loads(json.dumps(identity, sort_keys=True, default=str))
        return normal

    @property
    def windows(self) -> list[Window]:
        """Every window any output asks for, each once, in the order first asked.

        Returns
        -------
        list of Window
            The windows (``1d``, ``7d``, ``mtd``, ``all`` …) the rollups compute.

        Examples
        --------
        >>> from streameval.jobs.windows import parse_window
        >>> outputs = (OutputConfig("a.csv", "csv", (parse_window("1d"), parse_window("7d"))),
        ...            OutputConfig("b.csv", "csv", (parse_window("7d"), parse_window("all"))))
        >>> job = JobConfig("/jobs/daily.toml", SourceConfig(("/data",), "day"), None, "/s",
        ...                 outputs)
        >>> [w.name for w in job.windows]
        ['1d', '7d', 'all']

        """
        seen: dict[str, Window] = {}
        for output in self.outputs:
            for w in output.windows:
                seen.setdefault(w.name, w)
        return list(seen.values())


def load_job(path: str | os.PathLike[str]) -> JobConfig:
    """Read and validate a job file; raise :class:`JobConfigError` naming the offending key.

    Every key is checked: an unknown key gets a close-match hint, a wrong type or value names
    the key's path (``outputs[1].windows[0]``) and what is allowed.

    Parameters
    ----------
    path : str or path-like
        The TOML job file.

    Returns
    -------
    JobConfig
        The job, relative paths resolved against the job file's folder.

    Raises
    ------
    JobConfigError
        The file is missing or not TOML, or a key is unknown, missing, or of a wrong type or
        value.

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.demo import example_job
    >>> root = tempfile.mkdtemp()
    >>> job_file = example_job(root)  # a day of predictions, and job.toml
    >>> job = load_job(f"{root}/job.toml")
    >>> job.task.kind, [w.name for w in job.outputs[0].windows]
    ('binary', ['1d', 'all'])

    """
    file = os.path.abspath(os.fspath(path))
    try:
        data = tomllib.loads(Path(file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JobConfigError(
            f"expected a job file at {file!r}, found none; hint: check the path"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, IsADirectoryError) as exc:
        raise JobConfigError(f"{file}: not a valid TOML job file ({exc})") from None
    top = Table(file, "", data, ["source", "task", "store", "outputs", "checks", "checking"])
    base = os.path.dirname(file)
    source = _source(Table(file, "source", top.take("source", "table"), _SOURCE_KEYS), base)
    task = read_task(file, top.take("task", "table"))
    store_table = Table(file, "store", top.take("store", "table"), ["path"])
    store = _resolve(base, store_table.take("path", "str"))
    store_table.done()
    raw_outputs = top.take("outputs", "tables", [])
    checks = read_checks(file, top.take("checks", "tables", []), task, source.partition_key, base)
    checking = read_checking(file, top.take("checking", "table", {}), base)
    top.done()
    outputs = tuple(
        _output(Table(file, f"outputs[{i}]", item, ["path", "format", "windows"]), base, source)
        for i, item in enumerate(raw_outputs)
    )
    job = JobConfig(file, source, task, store, outputs, checks, checking)
    _cross_checks(top, job)
    return job


_SOURCE_KEYS = [
    "paths", "partition_key", "format", "table", "catalog", "engine", "spark", "fingerprint"
]  # fmt: skip
FINGERPRINTS = ("metadata", "content")


def _resolve(base: str, path: str) -> str:
    expanded = os.path.expanduser(path)
    if "://" in expanded:
        return expanded
    return os.path.normpath(os.path.join(base, expanded))


def _source(t: Table, base: str) -> SourceConfig:
    engine = choice(t, "engine", t.take("engine", "str", "polars"), ENGINES)
    on_spark = engine == "spark"
    fmt = t.take("format", "str", "parquet")
    if not on_spark:  # Spark reads any of its data sources (orc, delta, iceberg, ...)
        fmt = choice(t, "format", fmt, FORMATS)
    key = t.take("partition_key", "str", None)
    if fmt != "iceberg" and not on_spark and t.has("table"):
        raise t.error(t.path("table"), "applies to format = 'iceberg' or engine = 'spark' only")
    if (fmt != "iceberg" or on_spark) and t.has("catalog"):
        raise t.error(t.path("catalog"), "applies to format = 'iceberg' with engine = 'polars'")
    if not on_spark and t.has("spark"):
        raise t.error(t.path("spark"), "applies to engine = 'spark' only")
    if (fmt != "parquet" or on_spark) and t.has("fingerprint"):
        raise t.error(
            t.path("fingerprint"),
            "applies to format = 'parquet' with engine = 'polars' (the data files of Delta, "
            "Iceberg and Spark tables are fingerprinted by their table's log)",
        )
    fingerprint = choice(t, "fingerprint", t.take("fingerprint", "str", "metadata"), FINGERPRINTS)
    table = t.take("table", "str", None)
    catalog = t.take("catalog", "table", {})
    spark = t.take("spark", "table", {})
    paths = t.take("paths", "str|strs", [] if table else MISSING)
    if not paths and not table:
        raise t.error(t.path("paths"), "expected at least one path, got an empty list")
    if table and paths:
        raise t.error(t.path("table"), "expected either paths or a catalog table, got both")
    for section, values in (("catalog", catalog), ("spark", spark)):
        for name, value in values.items():
            if not isinstance(value, str):
                raise t.error(
                    f"{t.path(section)}.{name}", f"expected a string, got {type_name(value)}"
                )
    t.done()
    resolved = tuple(_resolve(base, p) for p in paths)
    return SourceConfig(resolved, key, fmt, table, dict(catalog), engine, dict(spark), fingerprint)


def _output(t: Table, base: str, source: SourceConfig) -> OutputConfig:
    path = t.take("path", "str")
    suffix = Path(path).suffix.lower().lstrip(".")
    default = suffix if suffix in ("csv", "json") else "parquet"
    fmt = choice(t, "format", t.take("format", "str", default), OUTPUT_FORMATS)
    names = t.take("windows", "strs", ["1d"] if source.partition_key else ["all"])
    if not names:
        raise t.error(t.path("windows"), "expected at least one window, got an empty list")
    windows: list[Window] = []
    for i, name in enumerate(names):
        where = f"{t.path('windows')}[{i}]"
        try:
            window = parse_window(name)
        except ValueError as exc:
            raise t.error(where, str(exc)) from None
        if window.name in [w.name for w in windows]:
            raise t.error(where, f"window {window.name!r} is listed twice")
        if window.kind != "all" and source.partition_key is None:
            raise t.error(
                where,
                f"window {name!r} needs dated partitions; hint: set source.partition_key (the "
                "hive key holding the date, e.g. 'day'), or use only 'all'",
            )
        windows.append(window)
    t.done()
    return OutputConfig(_resolve(base, path), fmt, tuple(windows))


def _cross_checks(top: Table, job: JobConfig) -> None:
    key = job.source.partition_key
    c = job.checking
    if not job.checks and (c.output or c.report or c.on_failure):
        raise top.error(
            "checking", "expected [[checks]] tables to judge by; hint: add one, or drop [checking]"
        )
    if c.report is not None and not offers(job.task.kind, "metrics"):
        raise top.error(
            "checking.report",
            f"expected a {', '.join(offering('metrics'))} task for a report, got "
            f"{job.task.kind!r}; hint: drop report (the checks table has every verdict)",
        )
    for name in job.task.by:
        if name == key or name in RESERVED:
            raise top.error(
                "task.by",
                f"expected group keys other than {name!r}: the output adds the partition key "
                "(the window's end day), 'window' and 'days' itself",
            )
    tables = job.source.format != "parquet" or job.source.engine == "spark"
    if tables and key is None and job.outputs:
        for output in job.outputs:
            if any(w.kind != "all" for w in output.windows):
                raise top.error("source.partition_key", "missing; windows need dated partitions")
    _no_overlaps(top, job)


def _no_overlaps(top: Table, job: JobConfig) -> None:
    """Refuse a store or output that is, holds or lies in a source path or another output.

    Paths are compared resolved (symlinks followed); a glob counts as the folder before its
    first wildcard. A job writing into its own source would overwrite predictions with metric
    rows, or read its own outputs back as predictions on the next run.
    """
    sources = [
        (f"source.paths[{i}]", _real(_static_part(p))) for i, p in enumerate(job.source.paths)
    ]
    targets = [("store.path", _real(job.store))]
    targets += [(f"outputs[{i}].path", _real(o.path)) for i, o in enumerate(job.outputs)]
    if job.checking.output is not None:
        targets.append(("checking.output", _real(job.checking.output)))
    if job.checking.report is not None:
        targets.append(("checking.report", _real(job.checking.report)))
    for n, (where, target) in enumerate(targets):
        for what, source in sources:
            if _inside(target, source) or _inside(source, target):
                raise top.error(
                    where,
                    f"expected a path apart from the source, but {target!r} "
                    f"{_relation(target, source)} the source path {what} ({source!r}); hint: "
                    "write the job's store and metric tables to folders of their own",
                )
        for other_where, other in targets[:n]:
            if _inside(target, other) or _inside(other, target):
                raise top.error(
                    where,
                    f"expected a path apart from {other_where}, but {target!r} "
                    f"{_relation(target, other)} it ({other!r}); hint: give each output and "
                    "the store a path of its own",
                )


def _static_part(path: str) -> str:
    """A path up to the folder holding its first wildcard (the path itself if it has none)."""
    wild = [path.index(c) for c in "*?[" if c in path]
    return os.path.dirname(path[: min(wild)]) if wild else path


def _real(path: str) -> str:
    return path if "://" in path else os.path.realpath(path)


def _relation(path: str, other: str) -> str:
    if path == other:
        return "is"
    return "lies inside" if _inside(path, other) else "holds"


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it."""
    if "://" in path or "://" in folder:
        return path.rstrip("/") == folder.rstrip("/") or path.startswith(folder.rstrip("/") + "/")
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:
        return False
