"""The job file: a TOML description of a scheduled evaluation, read and validated.

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
>>> _ = job.write_text('[source]\\npaths = ["p"]\\n[task]\\nlable = "y"\\n[store]\\npath = "s"\\n')
>>> load_job(job)
Traceback (most recent call last):
...
streameval.jobs.config.JobConfigError: ...job.toml: task.lable: unknown key; did you mean 'label'?
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, close_matches
from ..spec import parse_precision
from .windows import Window, parse_window

FORMATS = ("parquet", "delta", "iceberg")
OUTPUT_FORMATS = ("parquet", "csv", "json")
KINDS = ("binary", "multiclass", "regression", "paired")
RESERVED = ("window",)
_MISSING = object()

# Which [task] keys apply to which task kind (the names of se.evaluate's keywords).
_COMMON = ("kind", "label", "weight", "precision", "metrics", "by", "drop_nulls")
_INTERVALS = ("ci", "level", "auc_method")
TASK_KEYS = {
    "binary": (*_COMMON, "score", "positive", "threshold", *_INTERVALS),
    "multiclass": (*_COMMON, "prediction", "scores", "classes", "top_k", *_INTERVALS),
    "regression": (*_COMMON, "prediction", "power", "alpha"),
    "paired": (*_COMMON, "scores", "positive", "level"),
}
ALL_TASK_KEYS = sorted({k for keys in TASK_KEYS.values() for k in keys})


class JobConfigError(InputError):
    """The job file is unreadable, or one of its keys has a wrong name, type or value."""


@dataclass(frozen=True)
class SourceConfig:
    """Where the predictions are and what identifies a source partition."""

    paths: tuple[str, ...]
    partition_key: str | None = None
    format: str = "parquet"
    table: str | None = None
    catalog: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskConfig:
    """The evaluation, with the keyword names of :func:`streameval.evaluate`."""

    kind: str
    label: str
    options: dict[str, Any]

    def accumulate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`streameval.accumulate` for one source partition."""
        o = self.options
        kwargs: dict[str, Any] = {"task": self.kind, "label": self.label, "by": list(o["by"])}
        for name in ("score", "prediction", "weight", "positive", "precision", "top_k", "power"):
            if o.get(name) is not None:
                kwargs[name] = o[name]
        if o.get("scores") is not None:
            kwargs["scores"] = o["scores"]
        if o.get("classes") is not None:
            kwargs["classes"] = list(o["classes"])
        if self.kind in ("binary", "paired") and o.get("threshold") is not None:
            kwargs["thresholds"] = list(o["threshold"])
        kwargs["drop_nulls"] = bool(o.get("drop_nulls", False))
        return kwargs

    def metric_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`streameval.State.metrics`."""
        o = self.options
        kwargs: dict[str, Any] = {}
        if self.kind == "binary":
            thresholds = list(o.get("threshold") or [0.5])
            kwargs["threshold"] = thresholds if len(thresholds) > 1 else thresholds[0]
        if self.kind == "regression" and o.get("alpha") is not None:
            kwargs["alpha"] = o["alpha"]
        if self.kind != "paired" and o.get("metrics") is not None:
            kwargs["metrics"] = list(o["metrics"])
        for name in _INTERVALS:
            if self.kind != "paired" and o.get(name) is not None:
                kwargs[name] = o[name]
        return kwargs

    @property
    def by(self) -> list[str]:
        """Group keys (besides the window and its end day)."""
        return list(self.options["by"])


@dataclass(frozen=True)
class OutputConfig:
    """One published metric table."""

    path: str
    format: str
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class JobConfig:
    """A validated job file. Relative paths are resolved against the job file's folder."""

    file: str
    source: SourceConfig
    task: TaskConfig
    store: str
    outputs: tuple[OutputConfig, ...]

    @property
    def base(self) -> str:
        """The folder relative paths are resolved against (and fingerprints are relative to)."""
        return os.path.dirname(self.file)

    def identity(self) -> dict[str, Any]:
        """What the stored states depend on: a change here needs ``--full-refresh``."""
        accumulate = self.task.accumulate_kwargs()
        accumulate["precision"] = parse_precision(self.task.options.get("precision"))
        accumulate.setdefault("thresholds", [0.5])
        if isinstance(accumulate.get("scores"), dict):
            accumulate["scores"] = sorted(accumulate["scores"].items(), key=lambda kv: str(kv[0]))
        return {
            "partition_key": self.source.partition_key,
            "format": self.source.format,
            "accumulate": accumulate,
        }

    @property
    def windows(self) -> list[Window]:
        """Every window any output asks for, each once, in the order first asked."""
        seen: dict[str, Window] = {}
        for output in self.outputs:
            for w in output.windows:
                seen.setdefault(w.name, w)
        return list(seen.values())


class _Table:
    """A TOML table being read: takes keys with type checks, then rejects leftover keys."""

    def __init__(self, file: str, where: str, data: Any, allowed: tuple[str, ...] | list[str]):
        self.file, self.where, self.allowed = file, where, list(allowed)
        if not isinstance(data, dict):
            raise self.error(where, f"expected a table, got {_type(data)}")
        self.data = dict(data)
        self.done(final=False)

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, path: str, message: str) -> JobConfigError:
        return JobConfigError(f"{self.file}: {path}: {message}")

    def has(self, key: str) -> bool:
        return key in self.data

    def take(self, key: str, kind: str, default: Any = _MISSING) -> Any:
        """The value of ``key`` checked against ``kind`` (see :func:`_check`)."""
        if key not in self.data:
            if default is _MISSING:
                raise self.error(self.path(key), f"missing; expected {_KINDS[kind]}")
            return default
        return _check(self, self.path(key), self.data.pop(key), kind)

    def done(self, final: bool = True) -> None:
        """Reject keys that are not allowed (with a close-match hint), or left unused."""
        for key in self.data:
            if key in self.allowed:
                if final:
                    raise self.error(
                        self.path(key), "not used with the other settings of this table"
                    )
                continue
            hint = close_matches(key, self.allowed)
            if not hint.startswith("did you mean"):
                hint = "allowed keys are: " + ", ".join(repr(k) for k in self.allowed)
            raise self.error(self.path(key), f"unknown key; {hint}")


_KINDS = {
    "str": "a string",
    "strs": "a list of strings",
    "str|strs": "a string or a list of strings",
    "int": "an integer",
    "num": "a number",
    "nums": "a number or a list of numbers",
    "bool": "true or false",
    "scalar": "a string, number or boolean",
    "scalars": "a list of strings, numbers or booleans",
    "table": "a table",
    "tables": "an array of tables ([[outputs]])",
}


def _type(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    names.update({list: "an array", dict: "a table"})
    return names.get(type(value), type(value).__name__)


def _check(table: _Table, path: str, value: Any, kind: str) -> Any:
    def ok_scalar(v: Any) -> bool:
        return isinstance(v, str | int | float | bool)

    def ok_num(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    checks = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "num": ok_num,
        "bool": lambda v: isinstance(v, bool),
        "scalar": ok_scalar,
        "table": lambda v: isinstance(v, dict),
    }
    if kind in checks:
        if not checks[kind](value):
            raise table.error(path, f"expected {_KINDS[kind]}, got {_type(value)} {value!r}")
        return value
    single, items = {
        "strs": (None, "str"),
        "str|strs": ("str", "str"),
        "nums": ("num", "num"),
        "tables": (None, "table"),
    }.get(kind, (None, "scalar"))
    if single is not None and not isinstance(value, list):
        if not checks[single](value):
            raise table.error(path, f"expected {_KINDS[kind]}, got {_type(value)} {value!r}")
        return [value]
    if not isinstance(value, list):
        raise table.error(path, f"expected {_KINDS[kind]}, got {_type(value)} {value!r}")
    return [_check(table, f"{path}[{i}]", v, items) for i, v in enumerate(value)]


def _choice(table: _Table, key: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        hint = close_matches(value, allowed)
        hint = hint if hint.startswith("did you mean") else "allowed: " + ", ".join(allowed)
        raise table.error(table.path(key), f"expected one of {', '.join(allowed)}, got {value!r}; {hint}")
    return value


def load_job(path: str | os.PathLike[str]) -> JobConfig:
    """Read and validate a job file; raise :class:`JobConfigError` naming the offending key."""
    file = os.path.abspath(os.fspath(path))
    try:
        data = tomllib.loads(Path(file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JobConfigError(f"expected a job file at {file!r}, found none; hint: check the path") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, IsADirectoryError) as exc:
        raise JobConfigError(f"{file}: not a valid TOML job file ({exc})") from None
    top = _Table(file, "", data, ["source", "task", "store", "outputs"])
    base = os.path.dirname(file)
    source = _source(_Table(file, "source", top.take("source", "table"), _SOURCE_KEYS), base)
    task = _task(file, top.take("task", "table"))
    store_table = _Table(file, "store", top.take("store", "table"), ["path"])
    store = _resolve(base, store_table.take("path", "str"))
    store_table.done()
    raw_outputs = top.take("outputs", "tables", [])
    top.done()
    outputs = tuple(
        _output(_Table(file, f"outputs[{i}]", item, ["path", "format", "windows"]), base, source)
        for i, item in enumerate(raw_outputs)
    )
    job = JobConfig(file, source, task, store, outputs)
    _cross_checks(top, job)
    return job


_SOURCE_KEYS = ["paths", "partition_key", "format", "table", "catalog"]


def _resolve(base: str, path: str) -> str:
    expanded = os.path.expanduser(path)
    if "://" in expanded:
        return expanded
    return os.path.normpath(os.path.join(base, expanded))


def _source(t: _Table, base: str) -> SourceConfig:
    fmt = _choice(t, "format", t.take("format", "str", "parquet"), FORMATS)
    key = t.take("partition_key", "str", None)
    if fmt != "iceberg":
        for name in ("table", "catalog"):
            if t.has(name):
                raise t.error(t.path(name), "applies to format = 'iceberg' only")
    table = t.take("table", "str", None)
    catalog = t.take("catalog", "table", {})
    paths = t.take("paths", "str|strs", [] if table else _MISSING)
    if not paths and not table:
        raise t.error(t.path("paths"), "expected at least one path, got an empty list")
    if table and paths:
        raise t.error(t.path("table"), "expected either paths or a catalog table, got both")
    for name, value in catalog.items():
        if not isinstance(value, str):
            raise t.error(f"{t.path('catalog')}.{name}", f"expected a string, got {_type(value)}")
    t.done()
    resolved = tuple(_resolve(base, p) for p in paths)
    return SourceConfig(resolved, key, fmt, table, dict(catalog))


def _task(file: str, data: Any) -> TaskConfig:
    probe = data.get("kind", "binary") if isinstance(data, dict) else "binary"
    kinds = TASK_KEYS.get(probe, ALL_TASK_KEYS) if isinstance(probe, str) else ALL_TASK_KEYS
    t = _Table(file, "task", data, ALL_TASK_KEYS)
    kind = _choice(t, "kind", t.take("kind", "str", "binary"), KINDS)
    for key in list(t.data):
        if key in ALL_TASK_KEYS and key not in kinds:
            users = [k for k, keys in TASK_KEYS.items() if key in keys]
            raise t.error(
                t.path(key),
                f"does not apply to kind {kind!r} (it applies to {', '.join(users)}); "
                "hint: remove it, or set kind",
            )
    o: dict[str, Any] = {}
    label = t.take("label", "str")
    for name in ("score", "prediction", "weight"):
        o[name] = t.take(name, "str", None)
    o["scores"] = None
    if t.has("scores"):
        raw = t.data["scores"]
        o["scores"] = t.take("scores", "table" if isinstance(raw, dict) else "strs")
        if isinstance(o["scores"], dict):
            for cls, column in o["scores"].items():
                if not isinstance(column, str):
                    raise t.error(f"task.scores.{cls}", f"expected a column name, got {_type(column)}")
    o["classes"] = t.take("classes", "scalars", None)
    o["positive"] = t.take("positive", "scalar", None)
    precision = t.take("precision", "scalar", None)
    if precision is not None:
        try:
            parse_precision(precision)
        except InputError as exc:
            raise t.error(t.path("precision"), str(exc)) from None
    o["precision"] = precision
    o["threshold"] = t.take("threshold", "nums", None)
    o["metrics"] = t.take("metrics", "strs", None)
    o["by"] = t.take("by", "str|strs", [])
    o["top_k"] = t.take("top_k", "int", None)
    o["power"] = t.take("power", "num", None)
    o["alpha"] = t.take("alpha", "num", None)
    ci = t.take("ci", "str", None)
    o["ci"] = None if ci is None else _choice(t, "ci", ci, ("wilson", "clopper-pearson"))
    o["level"] = t.take("level", "num", None)
    if o["level"] is not None and not 0 < o["level"] < 1:
        raise t.error(t.path("level"), f"expected a level between 0 and 1, got {o['level']!r}")
    method = t.take("auc_method", "str", None)
    o["auc_method"] = None if method is None else _choice(
        t, "auc_method", method, ("delong", "hanley-mcneil")
    )  # fmt: skip
    o["drop_nulls"] = t.take("drop_nulls", "bool", False)
    t.done()
    needs = {"binary": "score", "regression": "prediction", "paired": "scores"}
    if kind in needs and o[needs[kind]] is None:
        raise t.error(f"task.{needs[kind]}", f"missing; a {kind} task needs it")
    if kind == "multiclass":
        if o["prediction"] is None and o["scores"] is None:
            raise t.error("task.prediction", "missing; a multiclass task needs prediction or scores")
        if o["classes"] is None and not isinstance(o["scores"], dict):
            raise t.error(
                "task.classes",
                "missing; a job accumulates each partition on its own, so it must declare every "
                "class (classes = [...], or scores as a table class = column) for states to merge",
            )
    if len(set(o["by"])) < len(o["by"]):
        raise t.error("task.by", f"expected distinct group keys, got {o['by']!r}")
    return TaskConfig(kind, label, o)


def _output(t: _Table, base: str, source: SourceConfig) -> OutputConfig:
    path = t.take("path", "str")
    suffix = Path(path).suffix.lower().lstrip(".")
    default = suffix if suffix in ("csv", "json") else "parquet"
    fmt = _choice(t, "format", t.take("format", "str", default), OUTPUT_FORMATS)
    names = t.take("windows", "strs", ["1d"] if source.partition_key else ["all"])
    if not names:
        raise t.error(t.path("windows"), "expected at least one window, got an empty list")
    windows = []
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


def _cross_checks(top: _Table, job: JobConfig) -> None:
    key = job.source.partition_key
    for name in job.task.by:
        if name == key or name in RESERVED:
            raise top.error(
                "task.by",
                f"expected group keys other than {name!r}: the output adds the partition key "
                "(the window's end day) and 'window' itself",
            )
    if job.source.format != "parquet" and key is None and job.outputs:
        for output in job.outputs:
            if any(w.kind != "all" for w in output.windows):
                raise top.error("source.partition_key", "missing; windows need dated partitions")
    seen: dict[str, int] = {}
    for i, output in enumerate(job.outputs):
        if output.path in seen:
            raise top.error(f"outputs[{i}].path", f"same path as outputs[{seen[output.path]}]")
        if _inside(output.path, job.store) or _inside(job.store, output.path):
            raise top.error(f"outputs[{i}].path", "expected a path outside the state store")
        seen[output.path] = i


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it."""
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == (
            os.path.abspath(folder)
        )
    except ValueError:
        return False
