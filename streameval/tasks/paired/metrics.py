"""The paired task's model table, declared: a row per group and model (its DeLong interval).

The AUC and average precision of each model come from :func:`streameval.metrics.ranking.ranking`
(or the kernel's sums); :func:`streameval.stats.compare.model_rows` assembles the table.
"""

from __future__ import annotations

from ...metrics.declare import Metric, bound, count

#: The paired task's model table (a row per group and model; its AUC's interval columns
#: ``roc_auc_lo``, ``roc_auc_hi``, ``roc_auc_se`` follow ``roc_auc``).
PAIRED = (
    Metric("model", role="identifier", summary=1),
    count("n", summary=2),
    count("positives", summary=3),
    count("negatives"),
    Metric("roc_auc", direction="higher", interval="auc", summary=4),
    bound("roc_auc_error", "roc_auc", summary=5),
    Metric("average_precision", direction="higher", summary=6),
)
