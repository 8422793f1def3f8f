r"""The ``[[checks]]`` and ``[checking]`` tables of a job file: what each day is judged by.

A check names a metric of the task's table, the window it judges, an optional slice filter,
absolute bounds (``min``, ``max``), a worsening against a baseline (``max_drop`` or
``max_relative_drop``) and the baseline: the ``previous`` window, the segment's accepted
``history``, a ``reference`` state file, or a ``champion`` model on the same rows (a paired
task). With ``significance``, a worsening fails only when it is significantly larger than
the tolerance, after the family's adjustment (``[checking] correction``).

>>> import tempfile, pathlib
>>> from streameval.jobs.config import load_job
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
... [checking]
... output = "checks"
... [[checks]]
... metric = "roc_auc"
... min = 0.7
... max_drop = 0.02
... baseline = "history"
... significance = 0.05
... ''')
>>> check = load_job(job).checks[0]
>>> check.name, check.window.name, check.baseline, check.days
('roc_auc 1d', '1d', 'history', 28)
>>> _ = job.write_text(job.read_text().replace('min = 0.7', 'min = 0.7\nmax_dorp = 1'))
>>> load_job(job)
Traceback (most recent call last):
...
streameval.jobs.tomlkeys.JobConfigError: ...: checks[0].max_dorp: unknown key; did you mean ...?
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..measure import table_of, testable
from ..metrics.registry import TABLES, declared
from ..stats.drift import MEASURES
from ..stats.multiple import METHODS
from ..tasks.registry import offers
from .task import TaskConfig
from .tomlkeys import Table, choice
from .windows import Window, parse_window

__all__ = ["CheckConfig", "CheckingConfig", "read_checking", "read_checks"]

BASELINES = ("previous", "history", "reference", "champion")
#: The score drift measures a check may judge against a baseline (:meth:`State.drift`).
DRIFT = MEASURES
SEVERITIES = ("error", "warn")
CHECK_KEYS = (
    "name", "metric", "window", "where", "threshold", "model", "min", "max", "max_drop",
    "max_relative_drop", "baseline", "days", "same_weekday", "reference", "champion",
    "significance", "severity", "min_n", "min_positives", "bins",
)  # fmt: skip
CHECKING_KEYS = (
    "output", "format", "correction", "on_failure", "on_failure_timeout", "report", "report_days"
)  # fmt: skip


@dataclass(frozen=True)
class CheckConfig:
    """One ``[[checks]]`` table: a metric, the window it judges, its bounds and baseline.

    Parameters
    ----------
    name : str
        The check's name in the checks table (default ``"<metric> <window>"``), unique.
    metric : str
        A column of the task's metric table.
    window : Window
        The window judged at each day (a trailing ``Nd`` window; ``all`` without a
        partition key).
    where : dict
        Slice filter: group key → the values kept (compared as text); empty: every slice.
    threshold : float, optional
        A binary task's threshold whose rows are judged (default: the task's first).
    model : str, optional
        A paired task's model (score column) judged; with ``baseline = "champion"``, the
        challenger.
    min, max : float, optional
        Absolute bounds on the value.
    max_drop, max_relative_drop : float, optional
        The worsening tolerated against the baseline: absolute, or as a share of the
        baseline's value (a drop for metrics where higher is better, a rise for the others).
    baseline : {"previous", "history", "reference", "champion"}, optional
        What the value is compared with (needed with a drop).
    days : int
        ``history``: the days before the window whose accepted rows form the baseline.
    same_weekday : bool
        ``history``: only the days of the window's end weekday.
    reference : str, optional
        ``reference``: the state file (resolved), and its SHA-256 in ``reference_digest``.
    champion : str, optional
        ``champion``: the paired task's model (score column) to compare against.
    significance : float, optional
        A worsening fails only when the family's adjusted p-value is at most this.
    severity : {"error", "warn"}
        A failed ``error`` check makes the run's exit status 3.
    min_n, min_positives : float
        Slices (or baselines) below these are reported ``too_small``, not judged.
    reference_digest : str
        SHA-256 of the reference file's bytes (empty without one).
    bins : int
        A score drift check's bins (of the PSI and JS distance): see
        :meth:`streameval.State.drift`.

    """

    name: str
    metric: str
    window: Window
    where: dict[str, list[str]] = field(default_factory=dict)
    threshold: float | None = None
    model: str | None = None
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    max_relative_drop: float | None = None
    baseline: str | None = None
    days: int = 28
    same_weekday: bool = False
    reference: str | None = None
    champion: str | None = None
    significance: float | None = None
    severity: str = "error"
    min_n: float = 0
    min_positives: float = 0
    reference_digest: str = ""
    bins: int = 10

    @property
    def drift(self) -> bool:
        """Whether the check judges score drift (:data:`DRIFT`), not a metric."""
        return self.metric in DRIFT

    @property
    def lookback(self) -> int:
        """Calendar days before the window's first day that its baseline may read."""
        if self.baseline == "previous":
            return self.window.days
        if self.baseline == "history":
            return self.days
        return 0

    def settings(self) -> dict[str, Any]:
        """Everything the check's rows depend on, as JSON-ready values (for digests)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("window", "reference")}
        if not self.drift:  # (the checks of earlier stores were digested without bins)
            del out["bins"]
        return {**out, "window": self.window.name}


@dataclass(frozen=True)
class CheckingConfig:
    """The ``[checking]`` table: the checks table's path, the family's correction, on_failure.

    Parameters
    ----------
    output : str, optional
        Where the checks table is written: a folder (Parquet, partitioned by day) or a
        ``.parquet``, ``.csv`` or ``.json`` file. None: kept in the store only.
    format : str
        ``parquet``, ``csv`` or ``json``.
    correction : {"bh", "by", "holm", "none"}
        How one day's p-values are adjusted together.
    on_failure : list of str, optional
        A command (argument list; a string is run by ``/bin/sh -c``) given the failed rows
        as JSON on its standard input.
    on_failure_timeout : float
        Seconds the command may take before it is stopped (with a warning).
    report : str, optional
        An HTML report of the last ``report_days`` days, opening with their checks.
    report_days : int
        The days the report covers (each day a group, drawn over time).

    """

    output: str | None = None
    format: str = "parquet"
    correction: str = "bh"
    on_failure: tuple[str, ...] = ()
    on_failure_timeout: float = 600.0
    report: str | None = None
    report_days: int = 14


def read_checking(file: str, data: Any, base: str) -> CheckingConfig:
    """Validate the ``[checking]`` table (an empty table when absent)."""
    t = Table(file, "checking", data, CHECKING_KEYS)
    output = t.take("output", "str", None)
    fmt = "parquet"
    if output is not None:
        suffix = Path(output).suffix.lower().lstrip(".")
        fmt = suffix if suffix in ("csv", "json") else "parquet"
        output = _resolve(base, output)
    fmt = choice(t, "format", t.take("format", "str", fmt), ("parquet", "csv", "json"))
    correction = choice(t, "correction", t.take("correction", "str", "bh"), METHODS)
    raw = t.data.get("on_failure")
    command = t.take("on_failure", "str" if isinstance(raw, str) else "strs", None)
    if isinstance(command, str):
        command = ["/bin/sh", "-c", command]
    if command is not None and not command:
        raise t.error(t.path("on_failure"), "expected a command, got an empty list")
    timeout = t.take("on_failure_timeout", "num", 600.0)
    if not timeout > 0:
        raise t.error(t.path("on_failure_timeout"), f"expected seconds above 0, got {timeout!r}")
    report = t.take("report", "str", None)
    if report is not None and not report.lower().endswith((".html", ".htm")):
        raise t.error(t.path("report"), f"expected an .html file, got {report!r}")
    days = t.take("report_days", "int", 14)
    if not 1 <= days <= 366:
        raise t.error(t.path("report_days"), f"expected 1 to 366 days, got {days!r}")
    t.done()
    return CheckingConfig(
        output, fmt, correction, tuple(command or ()), float(timeout),
        None if report is None else _resolve(base, report), days,
    )  # fmt: skip


def read_checks(
    file: str, items: list[Any], task: TaskConfig, key: str | None, base: str
) -> tuple[CheckConfig, ...]:
    """Validate the ``[[checks]]`` tables against the task and the source's partition key."""
    checks = []
    for i, item in enumerate(items):
        checks.append(_check(Table(file, f"checks[{i}]", item, CHECK_KEYS), task, key, base))
    names = [c.name for c in checks]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise Table(file, f"checks[{i}]", {}, ()).error(
                f"checks[{i}].name", f"the name {name!r} is used twice; hint: set name = '…'"
            )
    return tuple(checks)


def _check(t: Table, task: TaskConfig, key: str | None, base: str) -> CheckConfig:
    kind = task.kind
    table = table_of(kind)
    metric = t.take("metric", "str")
    declaration = declared(table, metric)
    drift = offers(kind, "histogram") and metric in DRIFT
    if not drift and (declaration is None or not declaration.is_estimate):
        known = [m.name for m in TABLES[table] if m.is_estimate]
        choice(t, "metric", metric, (*known, *(DRIFT if offers(kind, "histogram") else ())))
    window = _window(t, key)
    where = _where(t, task)
    threshold = t.take("threshold", "num", None)
    thresholds = list(task.options.get("threshold") or [0.5])
    if threshold is not None:
        if not offers(kind, "thresholds") or float(threshold) not in map(float, thresholds):
            raise t.error(
                t.path("threshold"),
                f"expected one of the task's thresholds {thresholds}, got {threshold!r}",
            )
    elif offers(kind, "thresholds") and not drift:
        threshold = thresholds[0]  # (the task's first)
    models = list(task.options.get("scores") or [])
    model = t.take("model", "str", None)
    champion = t.take("champion", "str", None)
    for name, value in (("model", model), ("champion", champion)):
        if value is not None and (not offers(kind, "models") or value not in models):
            raise t.error(
                t.path(name), f"expected a model of a paired task {models}, got {value!r}"
            )
    bounds = {name: t.take(name, "num", None) for name in ("min", "max")}
    drop = t.take("max_drop", "num", None)
    relative = t.take("max_relative_drop", "num", None)
    if drop is not None and relative is not None:
        raise t.error(
            t.path("max_relative_drop"), "expected max_drop or max_relative_drop, not both"
        )
    for name, value in (("max_drop", drop), ("max_relative_drop", relative)):
        if value is not None and not value >= 0:
            raise t.error(t.path(name), f"expected 0 or more, got {value!r}")
    baseline = t.take("baseline", "str", None)
    if baseline is not None:
        baseline = choice(t, "baseline", baseline, BASELINES)
    changes = drop is not None or relative is not None
    if drift:
        _drift(t, metric, baseline, changes, threshold, bounds)
    if changes and baseline is None:
        raise t.error(t.path("baseline"), "missing; a drop is measured against a baseline")
    if baseline is not None and not changes and not drift:
        raise t.error(t.path("baseline"), "expected with max_drop or max_relative_drop only")
    if not changes and all(v is None for v in bounds.values()):
        raise t.error(
            t.path("min"), "missing; a check needs min, max, max_drop or max_relative_drop"
        )
    if changes and declaration is not None and declaration.direction == "none":
        raise t.error(t.path("max_drop"), f"{metric!r} has no better direction to drop from")
    if baseline in ("previous", "history") and window.running:
        raise t.error(
            t.path("baseline"),
            f"expected a trailing window (1d, 7d, …) with baseline = {baseline!r}, got "
            f"{window.name!r}",
        )
    if baseline == "champion" and (champion is None or model is None or model == champion):
        raise t.error(
            t.path("champion"),
            "expected model = challenger and champion = another model of the paired task",
        )
    if baseline != "champion" and champion is not None:
        raise t.error(t.path("champion"), "applies to baseline = 'champion' only")
    if offers(kind, "models") and model is None:
        raise t.error(t.path("model"), f"missing; a paired task's check names one of {models}")
    days = t.take("days", "int", 28)
    same_weekday = t.take("same_weekday", "bool", False)
    if baseline != "history" and (days != 28 or same_weekday):
        raise t.error(t.path("days"), "applies to baseline = 'history' only")
    if not 1 <= days <= 100_000:
        raise t.error(t.path("days"), f"expected 1 to 100000 days, got {days!r}")
    reference = t.take("reference", "str", None)
    digest = ""
    if (reference is None) != (baseline != "reference"):
        raise t.error(
            t.path("reference"), "expected a state file with baseline = 'reference' (only)"
        )
    if reference is not None:
        reference = _resolve(base, reference)
        try:
            digest = hashlib.sha256(Path(reference).read_bytes()).hexdigest()
        except OSError as exc:
            raise t.error(
                t.path("reference"),
                f"cannot read the reference state file {reference!r} ({exc.strerror}); hint: "
                "write one with se.accumulate(...).write(path)",
            ) from None
    significance = t.take("significance", "num", None)
    if significance is not None:
        if not 0 < significance < 1:
            raise t.error(
                t.path("significance"), f"expected a level between 0 and 1, got {significance!r}"
            )
        if not changes:
            hint = "; judge score drift by its size (max)" if drift else ""
            raise t.error(
                t.path("significance"), f"applies to a drop against a baseline only{hint}"
            )
        _testable(t, table, metric)
    severity = choice(t, "severity", t.take("severity", "str", "error"), SEVERITIES)
    min_n = t.take("min_n", "num", 0)
    min_positives = t.take("min_positives", "num", 0)
    if min_positives and not offers(kind, "curves") and not offers(kind, "models"):
        raise t.error(t.path("min_positives"), f"applies to binary and paired tasks, not {kind}")
    if min_positives and drift:
        raise t.error(
            t.path("min_positives"), "applies to metrics, not score drift; hint: use min_n"
        )
    bins = t.take("bins", "int", 10)
    if bins != 10 and not drift:
        raise t.error(t.path("bins"), f"applies to score drift ({', '.join(DRIFT)}) only")
    if not 2 <= bins <= 10_000:
        raise t.error(t.path("bins"), f"expected 2 to 10000 bins, got {bins!r}")
    name = t.take("name", "str", f"{metric} {window.name}")
    t.done()
    return CheckConfig(
        name, metric, window, where, None if threshold is None else float(threshold), model,
        bounds["min"], bounds["max"], drop, relative, baseline, days, same_weekday, reference,
        champion, significance, severity, min_n, min_positives, digest, bins,
    )  # fmt: skip


def _drift(
    t: Table,
    metric: str,
    baseline: str | None,
    changes: bool,
    threshold: Any,
    bounds: dict[str, Any],
) -> None:
    """Refuse what a score drift check cannot take: it is judged by its size alone."""
    if changes:
        raise t.error(
            t.path("max_drop"),
            f"{metric!r} measures a change from the baseline already; hint: bound its size "
            "with max (a PSI above 0.2 is a common alarm)",
        )
    if baseline is None or baseline == "champion":
        raise t.error(
            t.path("baseline"),
            f"expected 'previous', 'history' or 'reference' for {metric!r}, got {baseline!r}; "
            "score drift compares the window's scores with a baseline's",
        )
    if threshold is not None:
        raise t.error(t.path("threshold"), "applies to metrics, not score drift")
    if all(v is None for v in bounds.values()):
        raise t.error(t.path("max"), f"missing; a check of {metric!r} needs max (or min)")


def _window(t: Table, key: str | None) -> Window:
    name = t.take("window", "str", "1d" if key else "all")
    try:
        window = parse_window(name)
    except ValueError as exc:
        raise t.error(t.path("window"), str(exc)) from None
    if key is None and window.kind != "all":
        raise t.error(
            t.path("window"),
            f"window {name!r} needs dated partitions; hint: set source.partition_key, or use 'all'",
        )
    if key is not None and window.running:
        raise t.error(
            t.path("window"),
            f"expected a trailing window (1d, 7d, 28d, …) to judge each day, got {name!r}",
        )
    return window


def _where(t: Table, task: TaskConfig) -> dict[str, list[str]]:
    raw = t.take("where", "table", {})
    out = {}
    for name, value in raw.items():
        path = f"{t.path('where')}.{name}"
        if name not in task.by:
            raise t.error(path, f"expected one of the task's group keys {task.by}, got {name!r}")
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str | int | float | bool) for v in values):
            raise t.error(path, f"expected a value or a list of values, got {value!r}")
        out[name] = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
    return out


def _testable(t: Table, table: str, metric: str) -> None:
    """Refuse ``significance`` for a metric without an analytic variance."""
    if not testable(table, metric):
        usable = [d.name for d in TABLES[table] if testable(table, d.name)]
        raise t.error(
            t.path("significance"),
            f"{metric!r} has no analytic variance to test a drop with; hint: significance "
            f"applies to {', '.join(usable) or 'no metric of this task'}; judge {metric!r} "
            "by its tolerance alone (drop significance)",
        )


def _resolve(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(base, os.path.expanduser(path)))
