"""The ``[task]`` table of a job file: the evaluation, with :func:`streameval.evaluate`'s names.

Keys that do not apply to the task's kind are refused (``power`` for a binary task), and a
multiclass job must declare its classes, since each partition is accumulated on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..spec import parse_precision
from ..tasks.ranking.plan import cutoffs
from ..tasks.registry import TASKS, offers, taking
from .tomlkeys import Table, choice, type_name

KINDS = tuple(TASKS)
# Which [task] keys apply to which task kind (the names of se.evaluate's keywords).
_COMMON = ("kind", "label", "weight", "precision", "by", "drop_nulls")
_INTERVALS = ("ci", "level", "auc_method")
#: Each task's keys: those of every task, and the task's own options.
TASK_KEYS = {name: (*_COMMON, *sorted(task.OPTIONS)) for name, task in TASKS.items()}
ALL_TASK_KEYS = sorted({k for keys in TASK_KEYS.values() for k in keys})


@dataclass(frozen=True)
class TaskConfig:
    """The evaluation, with the keyword names of :func:`streameval.evaluate`."""

    kind: str
    label: str | list[str]
    options: dict[str, Any]

    def accumulate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`streameval.accumulate` for one source partition."""
        o = self.options
        kwargs: dict[str, Any] = {"task": self.kind, "label": self.label, "by": list(o["by"])}
        for name in ("score", "prediction", "weight", "positive", "precision", "top_k", "power"):
            if o.get(name) is not None:
                kwargs[name] = o[name]
        for name in ("query", "k"):
            if o.get(name) is not None:
                kwargs[name] = o[name]
        if o.get("scores") is not None:
            kwargs["scores"] = o["scores"]
        if o.get("classes") is not None:
            kwargs["classes"] = list(o["classes"])
        if self.kind in taking("threshold") and o.get("threshold") is not None:
            kwargs["thresholds"] = list(o["threshold"])
        kwargs["drop_nulls"] = bool(o.get("drop_nulls", False))
        if o.get("labels", "required") != "required":
            kwargs["labels"] = o["labels"]
        return kwargs

    def metric_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`streameval.State.metrics`."""
        o = self.options
        kwargs: dict[str, Any] = {}
        if offers(self.kind, "thresholds"):
            thresholds = list(o.get("threshold") or [0.5])
            kwargs["threshold"] = thresholds if len(thresholds) > 1 else thresholds[0]
        if offers(self.kind, "alpha") and o.get("alpha") is not None:
            kwargs["alpha"] = o["alpha"]
        if self.kind in taking("beta") and o.get("beta") is not None:
            kwargs["beta"] = o["beta"]
        if offers(self.kind, "metrics") and o.get("metrics") is not None:
            kwargs["metrics"] = list(o["metrics"])
        # (a model table always has each model's DeLong interval: only its level applies)
        for name in _INTERVALS if offers(self.kind, "metrics") else ("level",):
            if o.get(name) is not None:
                kwargs[name] = o[name]
        return kwargs

    @property
    def by(self) -> list[str]:
        """Group keys (besides the window and its end day)."""
        return list(self.options["by"])


def read_task(file: str, data: Any) -> TaskConfig:
    """Validate the ``[task]`` table of the job file ``file``."""
    probe = data.get("kind", "binary") if isinstance(data, dict) else "binary"
    kinds = TASK_KEYS.get(probe, ALL_TASK_KEYS) if isinstance(probe, str) else ALL_TASK_KEYS
    t = Table(file, "task", data, ALL_TASK_KEYS)
    kind = choice(t, "kind", t.take("kind", "str", "binary"), KINDS)
    for key in list(t.data):
        if key in ALL_TASK_KEYS and key not in kinds:
            users = [k for k, keys in TASK_KEYS.items() if key in keys]
            raise t.error(
                t.path(key),
                f"does not apply to kind {kind!r} (it applies to {', '.join(users)}); "
                "hint: remove it, or set kind",
            )
    o: dict[str, Any] = {}
    # (one label column, or a multilabel task's list of them)
    listed = isinstance(t.data.get("label"), list)
    label: str | list[str] = t.take("label", "strs" if listed else "str")
    for name in ("score", "prediction", "weight"):
        o[name] = t.take(name, "str", None)
    o["scores"] = None
    if t.has("scores"):
        raw = t.data["scores"]
        o["scores"] = t.take("scores", "table" if isinstance(raw, dict) else "strs")
        if isinstance(o["scores"], dict):
            for cls, column in o["scores"].items():
                if not isinstance(column, str):
                    raise t.error(
                        f"task.scores.{cls}", f"expected a column name, got {type_name(column)}"
                    )
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
    o["query"] = t.take("query", "str|strs", None)
    o["k"] = _cutoffs(t)
    o["power"] = t.take("power", "num", None)
    o["alpha"] = t.take("alpha", "num", None)
    o["beta"] = t.take("beta", "num", None)
    if o["beta"] is not None and not o["beta"] >= 0:
        raise t.error(t.path("beta"), f"expected a beta of 0 or more, got {o['beta']!r}")
    ci = t.take("ci", "str", None)
    o["ci"] = None if ci is None else choice(t, "ci", ci, ("wilson", "clopper-pearson"))
    o["level"] = t.take("level", "num", None)
    if o["level"] is not None and not 0 < o["level"] < 1:
        raise t.error(t.path("level"), f"expected a level between 0 and 1, got {o['level']!r}")
    method = t.take("auc_method", "str", None)
    o["auc_method"] = None if method is None else choice(
        t, "auc_method", method, ("delong", "hanley-mcneil")
    )  # fmt: skip
    o["drop_nulls"] = t.take("drop_nulls", "bool", False)
    labels = t.take("labels", "str", "required")
    o["labels"] = choice(t, "labels", labels, ("required", "optional"))
    t.done()
    needs = TASKS[kind].REQUIRED
    if all(o[name] is None for name in needs):
        raise t.error(f"task.{needs[0]}", f"missing; a {kind} task needs {' or '.join(needs)}")
    if offers(kind, "queries") and o["query"] is None:
        raise t.error("task.query", f"missing; a {kind} task needs query (its query columns)")
    if offers(kind, "classes") and o["classes"] is None and not isinstance(o["scores"], dict):
        raise t.error(
            "task.classes",
            "missing; a job accumulates each partition on its own, so it must declare every "
            "class (classes = [...], or scores as a table class = column) for states to merge",
        )
    if len(set(o["by"])) < len(o["by"]):
        raise t.error("task.by", f"expected distinct group keys, got {o['by']!r}")
    return TaskConfig(kind, label, o)


def _cutoffs(t: Table) -> list[int | None] | None:
    """A ranking job's ``k``: a cutoff, ``"all"`` (the whole list) or a list of those."""
    if not t.has("k"):
        return None
    raw = t.data["k"]
    items = t.take("k", "scalars" if isinstance(raw, list) else "scalar")
    values = [None if v == "all" else v for v in (items if isinstance(raw, list) else [items])]
    try:
        cutoffs(values)
    except InputError:
        raise t.error(
            t.path("k"), f"expected positive integers or 'all', got {raw!r}; hint: k = [5, 10]"
        ) from None
    return values
