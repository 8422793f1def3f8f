"""The State: a tidy Polars table of sums plus the spec that says how it was computed."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import polars as pl

from .bucketing import key_bucket
from .errors import InputError, SpecMismatchError
from .io import read_state_file, write_state
from .metrics.binary import COLUMNS, as_thresholds, metric_table
from .metrics.calibration import calibration_curve, calibration_error
from .metrics.classes import confusion_matrix
from .metrics.costs import cost_curve, gains
from .metrics.curves import det_curve, pr_curve, roc_curve
from .metrics.operating import areas, cost_sensitive_error, operating_points
from .metrics.regression import metric_table as regression_table
from .metrics.select import select_metrics
from .resample import bootstrap_intervals, jackknife_intervals
from .spec import merged_spec
from .states import kind_module
from .states.data import StateData
from .stats.compare import model_table, paired_test, unpaired_test
from .stats.proportions import check_level
from .stats.summary import binary_summary, multiclass_summary
from .stats.tables import binary_table, check_ci, multiclass_metrics, per_class


@dataclass(frozen=True)
class State(StateData):
    """Mergeable evaluation state.

    The table has one row per group and score bucket; every value column is a sum, so
    states of disjoint parts of the data merge by concatenating and re-aggregating.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
    >>> a = se.accumulate(df[:2], label="y", score="p", precision="exact")
    >>> b = se.accumulate(df[2:], label="y", score="p", precision="exact")
    >>> a.merge(b).metrics()["roc_auc"].item()
    0.75

    """

    def merge(self, *others: State) -> State:
        """Merge with other states of the same spec (sums re-aggregated)."""
        return merge([self, *others])

    def metrics(
        self,
        threshold: float | Sequence[float] | None = None,
        *,
        alpha: float = 0.5,
        metrics: Sequence[str] | None = None,
        ci: str | None = None,
        level: float = 0.95,
        auc_method: str = "delong",
        jackknife: str | None = None,
    ) -> pl.DataFrame:
        """Metric table, one row per group (binary: and per threshold when a list is given).

        Parameters
        ----------
        threshold : float or list of float, optional
            Binary: predicted positive means ``score >= threshold`` (default 0.5).
        alpha : float
            Regression: the quantile of ``mean_pinball_loss``.
        metrics : list of str, optional
            Only these metric columns (after the keys and ``n``). A metric asked for by name
            whose domain the data violates raises instead of being null with a warning.
        ci : {None, "wilson", "clopper-pearson"}
            Add ``<metric>_lo`` / ``<metric>_hi`` for every proportion metric (binary:
            prevalence, accuracy, error_rate, precision, recall, specificity, npv, fpr, fnr;
            multiclass: accuracy, error_rate), the AUC's interval with ``roc_auc_se``, and
            caret's statistics: ``no_information_rate``, ``accuracy_pvalue``,
            ``mcnemar_pvalue``, ``cohen_kappa_se`` (:mod:`streameval.stats`).
        level : float
            Confidence level of the intervals.
        auc_method : {"delong", "hanley-mcneil"}
            Variance of the AUC (binary). Bucketed intervals are widened by ``roc_auc_error``.
            ``ci="bootstrap"`` (a state accumulated with ``bootstrap=R``) gives percentile
            intervals of every metric over the replicates, ``ci="jackknife"`` leave-one-out
            intervals over the values of the key ``jackknife`` (a partition, a day), for
            every task (:mod:`streameval.resample`).
        jackknife : str, optional
            With ``ci="jackknife"``: the group key whose values are left out one at a time.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 1], "p": [0.1, 0.6, 0.4, 0.8, 0.9]})
        >>> t = se.accumulate(df, label="y", score="p").metrics(ci="wilson")
        >>> [round(v, 3) for v in t.select("recall", "recall_lo", "recall_hi").row(0)]
        [0.667, 0.208, 0.939]

        """
        check_ci(ci, level, auc_method)
        if ci in ("bootstrap", "jackknife"):
            return _resampled_metrics(self, ci, level, jackknife, threshold, alpha, metrics)
        kind = self.spec.kind
        if kind != "binary" and threshold is not None:
            raise InputError(
                f"expected no threshold for a {kind} state, got {threshold!r}; "
                "hint: thresholds apply to binary scores"
            )
        if kind == "regression":
            if ci is not None:
                raise InputError(
                    f"expected no ci= for a regression state, got {ci!r}; hint: "
                    "regression metrics get intervals by bootstrap or jackknife"
                )
            return regression_table(self, alpha=alpha, metrics=metrics)
        if kind == "paired":
            return model_table(self, level)
        if kind == "multiclass":
            return multiclass_metrics(self, metrics, ci, level)

        fixed = ["n", "threshold"]
        names = select_metrics(metrics, [c for c in COLUMNS if c not in fixed])
        t = 0.5 if threshold is None else threshold
        if metrics is None or not {"log_loss", "brier"} & set(names):
            table = metric_table(self, t)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error", UserWarning)
                try:
                    table = metric_table(self, t)
                except UserWarning as exc:
                    raise InputError(f"expected probabilities, but {exc}") from None
        if ci is None:
            return table.select(*self.keys, "n", *names, "threshold")

        return binary_table(self, table, names, ci, level, auc_method)

    def summary(self, threshold: float = 0.5, *, level: float = 0.95) -> str:
        """caret-like printout per group of the confusion matrix and its statistics.

        Accuracy with its exact interval, the no-information rate and its test, kappa,
        McNemar's test, and the statistics by class, formatted as caret prints them.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 1], "p": [0.1, 0.6, 0.4, 0.8, 0.9]})
        >>> print(se.accumulate(df, label="y", score="p").summary().splitlines()[7].rstrip())
                       Accuracy : 0.6

        """
        check_level(level)
        if self.spec.kind == "multiclass":
            overall = self.metrics(
                ci="clopper-pearson", level=level, metrics=["accuracy", "cohen_kappa"]
            )
            return multiclass_summary(
                self, (overall, self.per_class(), self.confusion_matrix()), level
            )
        self._require("binary", "summary")
        table = self.metrics(threshold, ci="clopper-pearson", level=level)
        return binary_summary(self, table, level)

    def roc_test(
        self,
        column: str | None = None,
        baseline: Any = None,
        *,
        level: float = 0.95,
        alternative: str = "two-sided",
    ) -> pl.DataFrame:
        """DeLong's test of a difference in AUC (pROC's ``roc.test(method="delong")``).

        A paired state (``task="paired"``): every pair of models on the same rows, per
        group — the AUCs, their difference with its interval at ``level``, ``z`` and
        ``p_value``. A binary state: each value of the group key ``column`` against its
        value ``baseline`` (two days, two segments), per other keys — independent AUCs, the
        statistic, its degrees of freedom and ``p_value`` (Student's t, as pROC);
        ``baseline="previous"`` tests each value against the one before it (each day against
        the day before).
        ``alternative`` is ``"two-sided"``, ``"greater"`` (first AUC larger) or ``"less"``.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "a": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7],
        ...                    "b": [0.3, 0.2, 0.6, 0.5, 0.1, 0.9]})
        >>> st = se.accumulate(df, task="paired", label="y", scores=["a", "b"])
        >>> st.roc_test().select("roc_auc_a", "roc_auc_b", "difference").row(0)
        (0.8888888888888888, 1.0, -0.11111111111111116)

        """
        check_level(level)
        if self.spec.kind == "paired":
            if column is not None:
                raise InputError(
                    f"expected no column for a paired state, got {column!r}; hint: a paired "
                    "state compares its models on the same rows"
                )
            return paired_test(self, level, alternative)
        self._require("binary", "roc_test")
        if column is None:
            raise InputError(
                "expected column= and baseline= (a group key and its reference value) to "
                "compare groups of a binary state; hint: roc_test('day', '2026-10-01'), or "
                "accumulate with task='paired' to compare models"
            )
        return unpaired_test(self, column, baseline, alternative)

    def per_class(
        self, *, ci: str | None = None, level: float = 0.95, auc_method: str = "delong"
    ) -> pl.DataFrame:
        """Multiclass: per group and class, support and one-vs-rest metrics (and AUC, AP).

        ``ci`` adds ``<metric>_lo`` / ``<metric>_hi`` for the one-vs-rest proportions and,
        with scores, each class's AUC interval (as :meth:`metrics`).
        """
        self._require("multiclass", "per_class")
        check_ci(ci, level, auc_method)
        return per_class(self, ci=ci, level=level, auc_method=auc_method)

    def confusion_matrix(
        self, normalize: Literal["true", "pred", "all"] | None = None, *, wide: bool = False
    ) -> pl.DataFrame:
        """Multiclass: confusion matrix per group, long (keys, actual, predicted, count) or wide.

        ``normalize`` divides by the actual class's total (``"true"``), the predicted
        class's (``"pred"``) or the group's (``"all"``).
        """
        self._require("multiclass", "confusion_matrix")
        return confusion_matrix(self, normalize, wide=wide)

    def _require(self, kind: str, method: str) -> None:
        if self.spec.kind != kind:
            raise InputError(
                f"expected a {kind} state for {method}(), got a {self.spec.kind} state; "
                f"hint: accumulate with task='{kind}'"
            )

    def coarsen(self, precision: int) -> State:
        """The same binary state at fewer mantissa bits: its buckets merged.

        Equal to accumulating the rows at ``precision`` (the thresholds' splits kept), for a
        smaller table and a larger AUC error bound.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 1, 0, 1], "p": [0.30, 0.31, 0.6, 0.9]})
        >>> st = se.accumulate(df, label="y", score="p")
        >>> st.table.height, st.coarsen(2).table.height
        (4, 3)

        """
        self._require("binary", "coarsen")
        spec = self.spec
        if spec.exact or not 0 <= precision <= spec.precision:
            held = "exact" if spec.exact else f"{spec.precision} bits"
            raise InputError(
                f"expected a bucketed state and fewer bits than it holds, got precision "
                f"{precision!r} for a state at {held}; hint: accumulate at the precision wanted"
            )
        if precision == spec.precision:
            return self
        kind = kind_module(spec)
        coarse = replace(spec, precision=precision)
        table = (
            self.table.lazy()
            .with_columns(key_bucket(pl.col("bucket"), precision, spec.splits))
            .group_by([*spec.keys, "bucket"], maintain_order=True)
            .agg(getattr(pl.col(c), op)() for c, op in kind.merge_ops(spec).items())
            .collect()
            .select(self.table.columns)
        )
        return State(coarse, table)

    def roc_curve(self, *, drop_intermediate: bool = False) -> pl.DataFrame:
        """ROC points per group: keys, threshold, fpr, tpr (as sklearn's ``roc_curve``)."""
        self._require("binary", "roc_curve")
        return roc_curve(self, drop_intermediate=drop_intermediate)

    def operating_point(
        self,
        criterion: str = "youden",
        *,
        target: float | None = None,
        beta: float = 1.0,
        costs: tuple[float, float] = (1.0, 1.0),
        prevalence: float | None = None,
    ) -> pl.DataFrame:
        """Per group, the threshold a criterion picks (:mod:`streameval.metrics.operating`).

        ``criterion`` is ``"youden"``, ``"f1"``, ``"fbeta"`` (with ``beta``), ``"cost"``
        (``costs=(cost_fp, cost_fn)``, ``prevalence``), or ``"recall"``, ``"precision"``,
        ``"fpr"`` with a ``target``. Rows: keys, criterion, threshold, value, the confusion
        counts, precision, recall, fpr, f_beta and the cost-sensitive error at it.
        """
        self._require("binary", "operating_point")
        return operating_points(
            self, criterion, target=target, beta=beta, costs=costs, prevalence=prevalence
        )

    def areas(self, max_fpr: float | None = None) -> pl.DataFrame:
        """Per group: partial AUC, PR trapezoid area, break-even point and KS statistic.

        ``partial_auc`` is McClish-standardised (sklearn's ``roc_auc_score(max_fpr=)``; the
        AUC itself without ``max_fpr``), ``pr_auc`` the trapezoid (sklearn's
        ``auc(recall, precision)``), ``break_even`` where precision = recall, ``ks`` and
        ``ks_threshold`` the largest tpr − fpr and where.
        """
        self._require("binary", "areas")
        return areas(self, max_fpr)

    def gains(self, quantiles: int | Sequence[float] = 10) -> pl.DataFrame:
        """Cumulative gains and lift per group at population quantiles (deciles by default).

        Rows: keys, quantile, threshold, population (the fraction reached), gain, lift,
        response (:mod:`streameval.metrics.costs`).
        """
        self._require("binary", "gains")
        return gains(self, quantiles)

    def cost_curve(self) -> pl.DataFrame:
        """The cost curve per group: the lower envelope of the ROC points' cost lines.

        Rows: keys, probability_cost, normalized_cost, threshold (of the ROC point whose
        line the envelope follows from there); its area is ``areas()["expected_cost"]``.
        """
        self._require("binary", "cost_curve")
        return cost_curve(self)

    def calibration_curve(self, n_bins: int = 10, strategy: str = "uniform") -> pl.DataFrame:
        """Reliability curve per group: per bin, rows, weight, mean prediction, observed rate.

        Bins as sklearn's ``calibration_curve`` (``"uniform"`` or ``"quantile"``);
        :meth:`calibration_error` gives ``ece`` and ``mce``.
        """
        self._require("binary", "calibration_curve")
        return calibration_curve(self, n_bins, strategy)

    def calibration_error(self, n_bins: int = 10, strategy: str = "uniform") -> pl.DataFrame:
        """Per group: expected (``ece``) and maximum (``mce``) calibration error."""
        self._require("binary", "calibration_error")
        return calibration_error(self, n_bins, strategy)

    def cost_sensitive_error(
        self, costs: tuple[float, float], threshold: float | Sequence[float] = 0.5
    ) -> pl.DataFrame:
        """Per group and threshold: the cost-sensitive error rate of the reference texts.

        ``(cost_fp·FP + cost_fn·FN) / total`` with ``costs=(cost_fp, cost_fn)``.
        """
        self._require("binary", "cost_sensitive_error")
        return cost_sensitive_error(self, costs, as_thresholds(threshold))

    def det_curve(self, *, drop_intermediate: bool = False) -> pl.DataFrame:
        """DET points per group: keys, threshold, fpr, fnr (as sklearn's ``det_curve``)."""
        self._require("binary", "det_curve")
        return det_curve(self, drop_intermediate=drop_intermediate)

    def pr_curve(self) -> pl.DataFrame:
        """PR points per group: keys, threshold, precision, recall."""
        self._require("binary", "pr_curve")
        return pr_curve(self)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write to Parquet (atomically), spec and schema version in the file metadata."""
        write_state(self, path)


def merge(states: Iterable[State]) -> State:
    """Merge states computed with the same spec.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1], "p": [0.2, 0.7, 0.7]})
    >>> parts = [se.accumulate(df[i : i + 1], label="y", score="p") for i in range(3)]
    >>> se.merge(parts).table.height
    2
    """
    items = list(states)
    if not items:
        raise InputError("expected at least one state to merge, got none")
    spec = merged_spec([s.spec for s in items])
    schema = items[0].table.schema
    for other in items[1:]:
        if other.table.schema != schema:
            diffs = [
                f"{name}: {schema.get(name)} vs {dtype}"
                for name, dtype in other.table.schema.items()
                if schema.get(name) != dtype
            ]
            raise SpecMismatchError(
                "expected states with the same column types, but they differ ("
                + "; ".join(diffs)
                + "); hint: cast the group keys to one type before accumulating"
            )
    if len(items) == 1:
        return items[0]
    kind = kind_module(spec)
    if spec.found:
        kind.check_found(spec)
        items = [State(spec, kind.reindex(s.table, s.spec, spec)) for s in items]
    ops = kind.merge_ops(spec)
    table = pl.concat([s.table for s in items], how="vertical")
    group = [*spec.keys, *kind.group_columns(spec)]
    merged = (
        table.lazy()
        .group_by(group)
        .agg([getattr(pl.col(c), op)() for c, op in ops.items()])
        .collect()
    )
    return State(spec, merged.select(table.columns))


def read_state(path: str | os.PathLike[str]) -> State:
    """Read a state written by :meth:`State.write`, verified whole or refused.

    Raises
    ------
    StateFileError
        The file is missing, not a state file, of another schema version, written without
        a checksum, corrupted or altered (the checksum does not match), or its spec
        contradicts its table.

    Examples
    --------
    >>> import polars as pl, streameval as se, tempfile, os
    >>> st = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.9]}), label="y", score="p")
    >>> path = os.path.join(tempfile.mkdtemp(), "state.parquet")
    >>> st.write(path)
    >>> se.read_state(path).table.equals(st.table)
    True

    """
    spec, table = read_state_file(path)
    return State(spec, table)


def _resampled_metrics(
    state: State,
    ci: str,
    level: float,
    jackknife: str | None,
    threshold: float | Sequence[float] | None,
    alpha: float,
    metrics: Sequence[str] | None,
) -> pl.DataFrame:
    """The metric table with bootstrap or jackknife intervals of every metric column."""
    options: dict[str, Any] = {"metrics": metrics}
    if state.spec.kind == "binary":
        options["threshold"] = threshold
    elif threshold is not None:
        raise InputError(f"expected no threshold for a {state.spec.kind} state, got {threshold!r}")
    if state.spec.kind == "regression":
        options["alpha"] = alpha

    def table(s: State) -> pl.DataFrame:
        return s.metrics(**options)

    if ci == "bootstrap":
        if not getattr(state.spec, "replicates", 0):
            raise InputError(
                "expected a state accumulated with bootstrap=R for ci='bootstrap', got one "
                "without replicates; hint: se.accumulate(..., bootstrap=200, row_id='id')"
            )
        return bootstrap_intervals(state, table, level)
    if jackknife is None:
        raise InputError(
            "expected jackknife= naming a group key (a partition or day column) with "
            "ci='jackknife'; hint: metrics(ci='jackknife', jackknife='day')"
        )
    return jackknife_intervals(state, jackknife, table, level)
