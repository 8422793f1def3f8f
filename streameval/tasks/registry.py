"""The tasks, by name: each one's planning module, typed as a :class:`Task`.

>>> sorted(TASKS)
['binary', 'multiclass', 'multilabel', 'paired', 'ranking', 'regression']
>>> task_of("binary").roles(Inputs(label="y", score="p"))
[('y', 'label'), ('p', 'score')]
"""

from __future__ import annotations

from collections.abc import Set
from typing import Protocol

import polars as pl

from ..errors import InputError, close_matches
from ..states.data import StateData
from .binary import plan as binary
from .common import Inputs, MetricOptions, Opened, TaskPlan
from .multiclass import plan as multiclass
from .multilabel import plan as multilabel
from .paired import plan as paired
from .ranking import plan as ranking
from .regression import plan as regression


class Task(Protocol):
    """What the pipeline asks of a task: the columns it reads and how its pass is planned.

    Each task module (``binary``, ``multiclass``, ``regression``, ``paired``) is one.
    """

    @property
    def RESERVED(self) -> Set[str]:
        """Names a group key may not take: the task's state and metric table columns."""
        ...

    def roles(self, inputs: Inputs) -> list[tuple[str, str]]:
        """The columns read and their roles (``label``, ``score``, …), in order."""
        ...

    def numeric(self, inputs: Inputs) -> list[tuple[str, str]]:
        """The columns read that must be numeric, and their roles."""
        ...

    @property
    def OPTIONS(self) -> Set[str]:
        """Its own options, by their names in :func:`streameval.evaluate`."""
        ...

    @property
    def REQUIRED(self) -> tuple[str, ...]:
        """The options of which it needs one (``score``, ``prediction``, ``scores``)."""
        ...

    @property
    def CAPABILITIES(self) -> Set[str]:
        """What the task offers, among :data:`CAPABILITIES`."""
        ...

    def plan(self, opened: Opened, inputs: Inputs) -> TaskPlan:
        """The task's spec, its state query and its kernel's reader over the source."""
        ...

    def metric_table(self, state: StateData, options: MetricOptions) -> pl.DataFrame:
        """A state's metric table (:meth:`streameval.State.metrics` without resampling)."""
        ...


#: What a task may offer, and what each means; code that differs by task asks
#: :func:`offers` for one of these rather than comparing the task's name.
CAPABILITIES: dict[str, str] = {
    "metrics": "a metric table of declared metrics: metrics= picks among them, ci= adds "
    "intervals, and resampling, the .632 estimators and the report apply",
    "positive": "a two-class label with a positive class (and a negative one)",
    "thresholds": "metrics per threshold over one score",
    "curves": "curves, operating points and areas from one score's histogram",
    "summary": "caret's summary (State.summary, the CLI's --summary)",
    "classification": "predicted classes against actual ones: scikit-learn's classification "
    "report (State.report_text, the CLI's --table report)",
    "classes": "per-class tables and a confusion matrix over the classes",
    "alpha": "a metric table taking the pinball loss's quantile alpha=",
    "histogram": "a score histogram per group (and model): score drift between two states "
    "(State.drift)",
    "unlabeled": "labels may be missing (labels='optional'): such rows are kept in the score "
    "histogram and counted as n_unlabeled, outside every labelled metric",
    "models": "a model table per score column, and DeLong's paired tests of the models",
    "one_column": "a column may serve two roles (a label compared with itself)",
    "replicates": "its kernel draws bootstrap replicates from the rows' keys",
    "labels": "several labels per row, each scored: per-label tables (State.per_class) of "
    "each label's confusion counts, metrics and AUC",
    "spark_sql": "Spark builds its state with SQL aggregations, no Python worker reading the "
    "rows (streameval.spark)",
    "queries": "rows are the items of queries, each scored as a whole list: a query's rows "
    "are read together (one pass, not Spark's blocks), and merged states must not share one",
}

#: Every task, by the name ``task=`` takes.
TASKS: dict[str, Task] = {
    "binary": binary,
    "multiclass": multiclass,
    "regression": regression,
    "paired": paired,
    "ranking": ranking,
    "multilabel": multilabel,
}


def task_of(name: str) -> Task:
    """The task ``task=`` names, or an InputError naming the tasks there are.

    >>> task_of("binray")
    Traceback (most recent call last):
    ...
    streameval.errors.InputError: expected task to be one of binary, ..., got 'binray'; hint: ...
    """
    if name not in TASKS:
        raise InputError(
            f"expected task to be one of {', '.join(TASKS)}, got {name!r}; hint: "
            + close_matches(str(name), tuple(TASKS))
        )
    return TASKS[name]


def offering(capability: str) -> list[str]:
    """The tasks whose states offer ``capability``, in order.

    >>> offering("curves"), offering("classes")
    (['binary'], ['multiclass'])
    """
    return [name for name, task in TASKS.items() if _known(capability) in task.CAPABILITIES]


def taking(option: str) -> list[str]:
    """The tasks that take the option ``option`` (a name in :func:`streameval.evaluate`).

    >>> taking("positive"), taking("alpha")
    (['binary', 'paired'], ['regression'])
    """
    return [name for name, task in TASKS.items() if option in task.OPTIONS]


def offers(task: str, capability: str) -> bool:
    """Whether the task ``task`` (a name) offers ``capability``.

    >>> offers("binary", "thresholds"), offers("regression", "thresholds")
    (True, False)
    """
    return _known(capability) in task_of(task).CAPABILITIES


def _known(capability: str) -> str:
    """``capability``, one of :data:`CAPABILITIES` (a misspelt one would answer no)."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}: one of {list(CAPABILITIES)}")
    return capability
