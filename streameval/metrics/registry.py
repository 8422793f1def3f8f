"""The registry of metric declarations: every metric table's columns and their facts.

Each task's metric module declares its table's columns (:class:`~.declare.Metric`); this
module collects them by table, for the consumers that treat metrics differently: intervals,
cross-validation, the .632+ estimate, the command line and the report.

>>> [m.name for m in TABLES["regression"]][:3]
['n', 'mean_error', 'mse']
>>> is_bound("roc_auc_error"), is_bound("roc_auc")
(True, False)
>>> direction("binary", "log_loss")
'lower'
"""

from __future__ import annotations

from ..tasks.binary.metrics import DECLARED as BINARY
from ..tasks.binary.operating import AREAS
from ..tasks.multiclass.classes import DECLARED as PER_CLASS
from ..tasks.multiclass.metrics import DECLARED as MULTICLASS
from ..tasks.multilabel.labels import DECLARED as PER_LABEL
from ..tasks.multilabel.metrics import DECLARED as MULTILABEL
from ..tasks.paired.metrics import PAIRED
from ..tasks.ranking.metrics import DECLARED as RANKING
from ..tasks.regression.metrics import DECLARED as REGRESSION
from .declare import Direction, Metric, summary

#: The declared columns of each metric table: the tasks' tables, the multiclass per-class
#: table and the binary areas table.
TABLES: dict[str, tuple[Metric, ...]] = {
    "binary": BINARY,
    "multiclass": MULTICLASS,
    "regression": REGRESSION,
    "paired": PAIRED,
    "ranking": RANKING,
    "multilabel": MULTILABEL,
    "per_class": PER_CLASS,
    "per_label": PER_LABEL,
    "areas": AREAS,
}
#: Every declared bound column, of any table.
BOUNDS = frozenset(m.name for metrics in TABLES.values() for m in metrics if m.role == "bound")


def declared(table: str, name: str) -> Metric | None:
    """The declaration of the column ``name`` of ``table`` (None: not declared there).

    >>> declared("binary", "accuracy").interval
    'proportion'
    """
    return next((m for m in TABLES.get(table, ()) if m.name == name), None)


def is_bound(name: str) -> bool:
    """Whether the column ``name`` is the error bound of another, in any table."""
    return name in BOUNDS


def direction(table: str, name: str) -> Direction:
    """Which values of the column ``name`` of ``table`` are better (``none``: undeclared)."""
    metric = declared(table, name)
    return "none" if metric is None else metric.direction


def summary_columns(table: str) -> list[str]:
    """The columns a summary of ``table`` shows first, in order.

    >>> summary_columns("paired")
    ['model', 'n', 'positives', 'roc_auc', 'roc_auc_error', 'average_precision']
    """
    return summary(TABLES[table])


def names(table: str, *, need: str | None = None) -> list[str]:
    """The column names of ``table`` (with ``need``: those needing it, as ``probabilities``).

    >>> names("binary", need="probabilities")
    ['log_loss', 'brier']
    """
    return [m.name for m in TABLES[table] if need is None or need in m.needs]
