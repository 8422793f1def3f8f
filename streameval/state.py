"""The State: a tidy Polars table of sums plus the spec that says how it was computed."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import polars as pl

from . import kernels
from .bucketing import key_bucket
from .errors import InputError, SpecMismatchError
from .io import read_state_file, write_state
from .kernels.collect import state_runs
from .kernels.runs import Runs
from .options import check_beta
from .ordered import reaggregated
from .resample import bootstrap_intervals, jackknife_intervals
from .spec import Spec, merged_spec
from .states import HISTOGRAMS, kind_module
from .states.data import StateData
from .stats.classification import binary_reports, class_reports, label_reports
from .stats.compare import paired_test, unpaired_test
from .stats.disparity import disparity, fairness
from .stats.drift import (
    MEASURES,
    Counted,
    Sorted,
    check_comparable,
    drift,
    sample,
    sample_keys,
)
from .stats.proportions import check_level
from .stats.summary import binary_summary, multiclass_summary
from .stats.tables import check_ci, per_class
from .tasks.binary.calibration import calibration_curve, calibration_error
from .tasks.binary.costs import cost_curve, gains
from .tasks.binary.curves import det_curve, pr_curve, roc_curve, threshold_curve
from .tasks.binary.metrics import as_thresholds
from .tasks.binary.operating import areas, cost_sensitive_error, operating_points
from .tasks.common import MetricOptions
from .tasks.multiclass.classes import confusion_matrix
from .tasks.multilabel.plan import label_table
from .tasks.registry import offering, offers, task_of


@dataclass(frozen=True)
class State(StateData):
    """Mergeable evaluation state.

    The table has one row per group and score bucket; every value column is a sum, so
    states of disjoint parts of the data merge by concatenating and re-aggregating.

    Parameters
    ----------
    spec : Spec
        How the state was computed (task, group keys, precision, columns read …): states
        merge only with states of the same spec.
    table : DataFrame
        The sums: the group keys, the state kind's row columns (binary: ``bucket``) and its
        value columns. States are made by :func:`streameval.accumulate`,
        :func:`streameval.merge` and :func:`streameval.read_state` rather than by hand.

    Raises
    ------
    InputError
        A weighted state whose sums of weights overflow to inf.

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
        """Merge with other states of the same spec (sums re-aggregated).

        Parameters
        ----------
        *others : State
            States of other parts of the data, computed with the same spec.

        Returns
        -------
        State
            The state of all the parts' rows: one table row per group and state cell, its
            sums over the parts. With no ``others``, this state itself.

        Raises
        ------
        InputError
            Label values found over all the parts that cannot be evaluated (a binary
            label with more than two values, too many classes).
        SpecMismatchError
            The specs differ (columns, keys, precision, thresholds, bootstrap settings), or
            the tables' column types do.

        See Also
        --------
        streameval.merge : The same, for a list of states.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"g": ["a", "a", "b", "b", "a", "b"], "y": [0, 1, 1, 0, 1, 1],
        ...                    "p": [0.1, 0.8, 0.4, 0.5, 0.3, 0.9]})
        >>> monday = se.accumulate(df[:3], label="y", score="p", by="g")
        >>> tuesday = se.accumulate(df[3:], label="y", score="p", by="g")
        >>> monday.merge(tuesday).metrics().select("g", "n", "accuracy")
        shape: (2, 3)
        ┌─────┬─────┬──────────┐
        │ g   ┆ n   ┆ accuracy │
        │ --- ┆ --- ┆ ---      │
        │ str ┆ i64 ┆ f64      │
        ╞═════╪═════╪══════════╡
        │ a   ┆ 3   ┆ 0.666667 │
        │ b   ┆ 3   ┆ 0.333333 │
        └─────┴─────┴──────────┘

        """
        return merge([self, *others])

    def metrics(
        self,
        threshold: float | Sequence[float] | None = None,
        *,
        alpha: float = 0.5,
        beta: float = 1.0,
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
            Regression: the quantile of ``mean_pinball_loss`` and ``d2_pinball``.
        beta : float
            Binary and multiclass: the ``beta`` of the ``fbeta`` columns (recall weighs
            ``beta`` times as much as precision; 0 gives precision, ``inf`` recall).
        metrics : list of str, optional
            Only these metric columns (after the keys and ``n``). A metric asked for by name
            whose domain the data violates raises instead of being null with a warning.
        ci : {None, "wilson", "clopper-pearson", "bootstrap", "jackknife"}
            Add ``<metric>_lo`` / ``<metric>_hi`` for every proportion metric (binary:
            prevalence, accuracy, error_rate, precision, recall, specificity, npv, fpr, fnr;
            multiclass: accuracy, error_rate), the AUC's interval with ``roc_auc_se``, and
            caret's statistics: ``no_information_rate``, ``accuracy_pvalue``,
            ``mcnemar_pvalue``, ``cohen_kappa_se`` (:mod:`streameval.stats`).
            ``ci="bootstrap"`` (a state accumulated with ``bootstrap=R``) gives percentile
            intervals of every metric over the replicates, ``ci="jackknife"`` leave-one-out
            intervals over the values of the key ``jackknife`` (a partition, a day), for
            every task (:mod:`streameval.resample`).
        level : float
            Confidence level of the intervals.
        auc_method : {"delong", "hanley-mcneil"}
            Variance of the AUC (binary). Bucketed intervals are widened by ``roc_auc_error``.
        jackknife : str, optional
            With ``ci="jackknife"``: the group key whose values are left out one at a time.

        Returns
        -------
        DataFrame
            The group keys, ``n``, then the metric columns, one row per group (binary: per
            group and threshold, ``threshold`` last; paired: per group and ``model``). With
            ``ci``, each interval's ``_lo`` and ``_hi`` columns after its metric.

        Raises
        ------
        InputError
            A threshold for a state that is not binary, ``ci`` for a regression state
            (other than bootstrap or jackknife), an unknown ``ci``, ``level`` or
            ``auc_method``, a threshold inside a score bucket (accumulate with it in
            ``thresholds=``, or exact), or a metric asked for whose domain the data violates.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 1], "p": [0.1, 0.6, 0.4, 0.8, 0.9]})
        >>> t = se.accumulate(df, label="y", score="p").metrics(ci="wilson")
        >>> [round(v, 3) for v in t.select("recall", "recall_lo", "recall_hi").row(0)]
        [0.667, 0.208, 0.939]
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.metrics([0.3, 0.5], metrics=["precision", "recall"])
        shape: (2, 4)
        ┌─────┬───────────┬──────────┬───────────┐
        │ n   ┆ precision ┆ recall   ┆ threshold │
        │ --- ┆ ---       ┆ ---      ┆ ---       │
        │ i64 ┆ f64       ┆ f64      ┆ f64       │
        ╞═════╪═══════════╪══════════╪═══════════╡
        │ 5   ┆ 0.75      ┆ 1.0      ┆ 0.3       │
        │ 5   ┆ 0.666667  ┆ 0.666667 ┆ 0.5       │
        └─────┴───────────┴──────────┴───────────┘

        """
        if ci in ("bootstrap", "jackknife"):
            check_ci(ci, level, auc_method)
            check_beta(beta)
            parameters = {"alpha": alpha, "beta": beta}
            return _resampled_metrics(self, ci, level, jackknife, threshold, parameters, metrics)
        options = MetricOptions(threshold, alpha, beta, metrics, ci, level, auc_method)
        return metric_table_of(self, options)

    def summary(self, threshold: float = 0.5, *, level: float = 0.95) -> str:
        """caret-like printout per group of the confusion matrix and its statistics.

        Accuracy with its exact interval, the no-information rate and its test, kappa,
        McNemar's test, and the statistics by class, formatted as caret prints them.

        Parameters
        ----------
        threshold : float
            Binary: predicted positive means ``score >= threshold``. A multiclass state
            ignores it (its predicted class is in the data).
        level : float
            Confidence level of the accuracy's exact (Clopper–Pearson) interval.

        Returns
        -------
        str
            caret's ``confusionMatrix`` printout; with group keys, one block per group
            headed by its key values (``day = 2026-10-01``).

        Raises
        ------
        InputError
            A state that is neither binary nor multiclass, a ``level`` outside (0, 1), or a
            threshold inside a score bucket.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 1], "p": [0.1, 0.6, 0.4, 0.8, 0.9]})
        >>> print(se.accumulate(df, label="y", score="p").summary().splitlines()[7].rstrip())
                       Accuracy : 0.6

        """
        check_level(level)
        if offers(self.spec.kind, "classes"):
            overall = self.metrics(
                ci="clopper-pearson", level=level, metrics=["accuracy", "cohen_kappa"]
            )
            return multiclass_summary(
                self, (overall, self.per_class(), self.confusion_matrix()), level
            )
        self._require("curves", "summary")
        table = self.metrics(threshold, ci="clopper-pearson", level=level)
        return binary_summary(self, table, level)

    def report_text(self, threshold: float | None = None, *, digits: int = 2) -> str:
        """scikit-learn's ``classification_report`` of each group, as text.

        Each group's block is what ``sklearn.metrics.classification_report(y_true, y_pred,
        labels=classes, sample_weight=w, digits=digits)`` prints for the group's rows: a row
        per class (precision, recall, F1, support), accuracy, the macro and the weighted
        averages. A binary state's classes are its negative and positive label values
        (sorted, as scikit-learn orders them), predicted at ``threshold``; a multiclass
        state's are its classes. A multilabel state's block is scikit-learn's multilabel
        one: a row per label, then the micro, macro, weighted and samples averages. Undefined
        precision, recall or F1 print as 0 (scikit-learn's ``zero_division`` default, without
        its warning).

        Parameters
        ----------
        threshold : float, optional
            A binary state's cut: scores at or above it predict the positive class (default
            0.5). A multilabel state's is the one it was accumulated with.
        digits : int
            Digits after the decimal point.

        Returns
        -------
        str
            A block per group, under a ``key = value`` heading where the state has keys.

        Raises
        ------
        InputError
            A state that is neither binary, multiclass nor multilabel, or a threshold inside a
            score bucket (or, multilabel, another than the state's).

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 0, 1, 1, 1], "p": [0.1, 0.6, 0.2, 0.8, 0.9, 0.7]})
        >>> print(se.accumulate(df, label="y", score="p").report_text(), end="")
                      precision    recall  f1-score   support
        <BLANKLINE>
                   0       1.00      0.67      0.80         3
                   1       0.75      1.00      0.86         3
        <BLANKLINE>
            accuracy                           0.83         6
           macro avg       0.88      0.83      0.83         6
        weighted avg       0.88      0.83      0.83         6

        """
        self._require("classification", "report_text")
        if not isinstance(digits, int) or isinstance(digits, bool) or digits < 0:
            raise InputError(f"expected digits to be an integer of 0 or more, got {digits!r}")
        if offers(self.spec.kind, "classes"):
            return class_reports(self, self.confusion_matrix(), digits)
        if offers(self.spec.kind, "labels"):
            return label_reports(self, self.per_class(), self.metrics(threshold), digits)
        return binary_reports(self, self.metrics(threshold), digits)

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

        Parameters
        ----------
        column : str, optional
            Binary state: the group key whose values are compared. None (and not allowed)
            for a paired state.
        baseline : optional
            Binary state: the value of ``column`` the others are tested against, or
            ``"previous"``.
        level : float
            Paired state: confidence level of the difference's interval.
        alternative : {"two-sided", "greater", "less"}
            ``"greater"``: the first AUC (``model_a``'s, or the value's) is larger;
            ``"less"``: it is smaller.

        Returns
        -------
        DataFrame
            Paired: the keys, ``model_a``, ``model_b``, ``roc_auc_a``, ``roc_auc_b``,
            ``difference``, ``difference_lo``, ``difference_hi``, ``z``, ``p_value``, one row
            per group and pair of models. Binary: the other keys, ``column``, ``baseline``,
            ``roc_auc``, ``roc_auc_baseline``, ``difference``, ``statistic``, ``df``,
            ``p_value``, one row per group and value tested.

        Raises
        ------
        InputError
            A state neither paired nor binary, ``column`` given for a paired state or
            missing (or not a group key) for a binary one, an unknown ``alternative``, or a
            ``level`` outside (0, 1).

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "a": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7],
        ...                    "b": [0.3, 0.2, 0.6, 0.5, 0.1, 0.9]})
        >>> st = se.accumulate(df, task="paired", label="y", scores=["a", "b"])
        >>> st.roc_test().select("roc_auc_a", "roc_auc_b", "difference").row(0)
        (0.8888888888888888, 1.0, -0.11111111111111112)

        Two days of one model, the second against the first:

        >>> days = pl.DataFrame({"day": ["d1"] * 4 + ["d2"] * 4, "y": [0, 1, 0, 1] * 2,
        ...                      "p": [0.1, 0.8, 0.3, 0.6, 0.5, 0.4, 0.2, 0.9]})
        >>> st = se.accumulate(days, label="y", score="p", by="day")
        >>> t = st.roc_test("day", "d1")
        >>> t.select("day", "baseline", "roc_auc", "roc_auc_baseline", "df").row(0)
        ('d2', 'd1', 0.75, 1.0, 3.0)
        >>> round(t["p_value"].item(), 4)
        0.5305

        """
        check_level(level)
        if offers(self.spec.kind, "models"):
            if column is not None:
                raise InputError(
                    f"expected no column for a paired state, got {column!r}; hint: a paired "
                    "state compares its models on the same rows"
                )
            return paired_test(self, level, alternative)
        self._require("curves", "roc_test")
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

        Multilabel: per group and label, its support, confusion counts (scikit-learn's
        ``multilabel_confusion_matrix``), precision, recall, F1, Jaccard, AUC and average
        precision with their bounds (:func:`streameval.tasks.multilabel.labels.label_table`).

        Parameters
        ----------
        ci : {None, "wilson", "clopper-pearson"}
            Adds ``<metric>_lo`` / ``<metric>_hi`` for the one-vs-rest proportions and, with
            scores, each class's AUC interval (as :meth:`metrics`).
        level : float
            Confidence level of the intervals.
        auc_method : {"delong", "hanley-mcneil"}
            Variance of each class's one-vs-rest AUC.

        Returns
        -------
        DataFrame
            One row per group and class: the keys, ``class``, ``support``, ``precision``,
            ``recall``, ``f1``, ``specificity``, ``npv``, ``fpr``, ``fnr``, and for a state
            with scores ``roc_auc``, ``roc_auc_error``, ``average_precision``,
            ``average_precision_error``.

        Raises
        ------
        InputError
            A state that is not multiclass, or an unknown ``ci``, ``level`` or
            ``auc_method``.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": ["a", "b", "c", "a", "b", "c"],
        ...                    "pred": ["a", "b", "b", "a", "c", "c"]})
        >>> st = se.accumulate(df, task="multiclass", label="y", prediction="pred")
        >>> st.per_class().select("class", "support", "precision", "recall", "f1")
        shape: (3, 5)
        ┌───────┬─────────┬───────────┬────────┬─────┐
        │ class ┆ support ┆ precision ┆ recall ┆ f1  │
        │ ---   ┆ ---     ┆ ---       ┆ ---    ┆ --- │
        │ str   ┆ i64     ┆ f64       ┆ f64    ┆ f64 │
        ╞═══════╪═════════╪═══════════╪════════╪═════╡
        │ a     ┆ 2       ┆ 1.0       ┆ 1.0    ┆ 1.0 │
        │ b     ┆ 2       ┆ 0.5       ┆ 0.5    ┆ 0.5 │
        │ c     ┆ 2       ┆ 0.5       ┆ 0.5    ┆ 0.5 │
        └───────┴─────────┴───────────┴────────┴─────┘

        """
        check_ci(ci, level, auc_method)
        if offers(self.spec.kind, "labels"):
            return label_table(self, ci=ci, level=level, auc_method=auc_method)
        self._require("classes", "per_class")
        return per_class(self, ci=ci, level=level, auc_method=auc_method)

    def disparity(
        self,
        sensitive: str,
        *,
        reference: Any = "best",
        threshold: float = 0.5,
        ci: str | None = None,
        level: float = 0.95,
    ) -> pl.DataFrame:
        """Binary: each slice's selection rate, TPR and FPR against a reference slice.

        The rates of demographic parity (selection rate), equal opportunity (TPR) and
        equalized odds (TPR and FPR) per value of the key ``sensitive``, within each value
        of the state's other keys (strata: a day, a segment), at ``threshold``, weighted as
        fairlearn's ``MetricFrame`` with ``sample_weight``.

        Parameters
        ----------
        sensitive : str
            The key whose values are the slices compared (one of the state's keys).
        reference : {"best", "overall"} or a value of ``sensitive``
            What each slice is compared with: the stratum's best slice (the highest
            selection rate and TPR, the lowest FPR), the stratum's overall rate, or the
            slice of this value.
        threshold : float
            Predicted positive means ``score >= threshold`` (a bucket edge, as
            :meth:`metrics`' thresholds).
        ci : {None, "wilson", "clopper-pearson"}
            Adds the intervals of the difference (Newcombe's) and of the ratio (Donner and
            Zou's), each from the two rates' intervals of this method; not with
            ``reference="overall"`` (the overall rate holds the slice's own rows).
        level : float
            Confidence level of the intervals.

        Returns
        -------
        DataFrame
            A row per stratum, rate and slice: the other keys, ``sensitive``, ``metric``
            (``selection_rate``, ``tpr``, ``fpr``), ``value``, ``support`` (the rate's
            denominator: rows, positives or negatives, weighted), ``reference_slice`` (null
            for ``"overall"``), ``reference_value``, ``difference`` (value − reference) and
            ``ratio`` (value / reference), and with ``ci`` ``difference_lo``,
            ``difference_hi``, ``ratio_lo``, ``ratio_hi`` (null for the reference slice
            itself). A rate without a denominator (TPR without positives) is null.

        Raises
        ------
        InputError
            A state that is not binary, ``sensitive`` not among its keys, a reference slice
            that is not among the values, or an unknown ``ci`` or ``level``.

        See Also
        --------
        fairness : fairlearn's summaries per stratum.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m", "m"], "y": [1, 0, 1, 1, 0, 0],
        ...                    "p": [0.9, 0.6, 0.2, 0.8, 0.3, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", by="sex")
        >>> st.disparity("sex", reference="f").select("sex", "metric", "value", "difference")
        shape: (6, 4)
        ┌─────┬────────────────┬──────────┬────────────┐
        │ sex ┆ metric         ┆ value    ┆ difference │
        │ --- ┆ ---            ┆ ---      ┆ ---        │
        │ str ┆ str            ┆ f64      ┆ f64        │
        ╞═════╪════════════════╪══════════╪════════════╡
        │ f   ┆ selection_rate ┆ 0.666667 ┆ 0.0        │
        │ m   ┆ selection_rate ┆ 0.666667 ┆ 0.0        │
        │ f   ┆ tpr            ┆ 0.5      ┆ 0.0        │
        │ m   ┆ tpr            ┆ 1.0      ┆ 0.5        │
        │ f   ┆ fpr            ┆ 1.0      ┆ 0.0        │
        │ m   ┆ fpr            ┆ 0.5      ┆ -0.5       │
        └─────┴────────────────┴──────────┴────────────┘

        """
        self._require("thresholds", "disparity")
        return disparity(
            self, sensitive, reference=reference, threshold=threshold, ci=ci, level=level
        )

    def fairness(
        self, sensitive: str, *, method: str = "between_groups", threshold: float = 0.5
    ) -> pl.DataFrame:
        """Binary: fairlearn's disparity summaries of the slices of ``sensitive``, per stratum.

        Parameters
        ----------
        sensitive : str
            The key whose values are the slices compared (one of the state's keys).
        method : {"between_groups", "to_overall"}
            fairlearn's aggregation: the largest difference between two slices and the
            smallest ratio of two (``between_groups``), or of a slice to the stratum's
            overall rate (``to_overall``: the largest |slice − overall|, the smallest of
            min(slice / overall, overall / slice)).
        threshold : float
            Predicted positive means ``score >= threshold``.

        Returns
        -------
        DataFrame
            A row per stratum (the state's other keys): ``demographic_parity_difference``
            and ``_ratio`` (of the selection rates), ``equal_opportunity_difference`` and
            ``_ratio`` (of the TPRs), ``equalized_odds_difference`` and ``_ratio`` (the worse
            of the TPRs' and the FPRs'), as fairlearn's functions of these names with
            ``sample_weight``. Slices whose rate is undefined are left out.

        Raises
        ------
        InputError
            A state that is not binary, ``sensitive`` not among its keys, or an unknown
            ``method``.

        See Also
        --------
        disparity : Each slice against a reference, with intervals.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"sex": ["f", "f", "f", "m", "m", "m"], "y": [1, 0, 1, 1, 0, 0],
        ...                    "p": [0.9, 0.6, 0.2, 0.8, 0.3, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", by="sex")
        >>> st.fairness("sex").select("demographic_parity_difference", "equalized_odds_ratio")
        shape: (1, 2)
        ┌───────────────────────────────┬──────────────────────┐
        │ demographic_parity_difference ┆ equalized_odds_ratio │
        │ ---                           ┆ ---                  │
        │ f64                           ┆ f64                  │
        ╞═══════════════════════════════╪══════════════════════╡
        │ 0.0                           ┆ 0.5                  │
        └───────────────────────────────┴──────────────────────┘

        """
        self._require("thresholds", "fairness")
        return fairness(self, sensitive, method=method, threshold=threshold)

    def drift(self, baseline: State, *, bins: int = 10) -> pl.DataFrame:
        """Score drift of each group from a baseline: PSI, Jensen–Shannon distance and KS.

        Compares each group's score histogram with that of the baseline group of the same
        values of the baseline's keys (a baseline without keys is every group's), from the
        states alone: no rows are read. See :mod:`streameval.stats.drift` for the bins and
        what bucketing does to each measure. Labels play no part; a paired state gives a row
        per model.

        Parameters
        ----------
        baseline : State
            A state of the same task, precision and thresholds (a reference period, the
            previous day), whose keys are among this state's.
        bins : int
            The number of bins of the PSI and JS distance, cut at the baseline's quantiles.

        Returns
        -------
        DataFrame
            A row per group (and model): the keys (``model``), ``n`` and ``baseline_n``
            (rows), ``psi`` (population stability index), ``js_distance`` (Jensen–Shannon,
            base 2, in [0, 1]), ``ks_statistic`` (Kolmogorov–Smirnov, at the bucket edges),
            ``ks_bound`` (the raw scores' KS lies within ``ks_statistic + ks_bound``; 0 in
            exact mode) and ``bins`` (those formed: fewer where one score holds more than a
            bin's share). Null for a group without a baseline or without weight.

        Raises
        ------
        InputError
            A state without a score histogram, a baseline of another kind, precision,
            thresholds or models, a baseline key that is not this state's, or ``bins``
            outside 2 … 10000.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> ref = pl.DataFrame({"y": [0, 1] * 50, "p": [i / 100 for i in range(100)]})
        >>> now = ref.with_columns(p=pl.col("p") ** 2, g=pl.lit("a"))
        >>> base = se.accumulate(ref, label="y", score="p", precision="exact")
        >>> state = se.accumulate(now, label="y", score="p", by="g", precision="exact")
        >>> state.drift(base).select("g", "psi", "js_distance", "ks_statistic", "bins")
        shape: (1, 5)
        ┌─────┬──────────┬─────────────┬──────────────┬──────┐
        │ g   ┆ psi      ┆ js_distance ┆ ks_statistic ┆ bins │
        │ --- ┆ ---      ┆ ---         ┆ ---          ┆ ---  │
        │ str ┆ f64      ┆ f64         ┆ f64          ┆ u32  │
        ╞═════╪══════════╪═════════════╪══════════════╪══════╡
        │ a   ┆ 0.396399 ┆ 0.262107    ┆ 0.25         ┆ 10   │
        └─────┴──────────┴─────────────┴──────────────┴──────┘

        """
        self._require("histogram", "drift")
        if not isinstance(baseline, State):
            raise InputError(
                f"expected a State as the baseline, got {type(baseline).__name__}; hint: "
                "se.accumulate(reference_data, ...) or se.read_state(path)"
            )
        return drift_table(self, baseline, bins)

    def confusion_matrix(
        self, normalize: Literal["true", "pred", "all"] | None = None, *, wide: bool = False
    ) -> pl.DataFrame:
        """Multiclass: confusion matrix per group, long (keys, actual, predicted, count) or wide.

        Parameters
        ----------
        normalize : {None, "true", "pred", "all"}
            Divide by the actual class's total (``"true"``), the predicted class's
            (``"pred"``) or the group's (``"all"``); 0 where that total is 0 (as sklearn).
            None: the counts.
        wide : bool
            One column per predicted class (named by the class) instead of ``predicted``
            and ``count`` columns.

        Returns
        -------
        DataFrame
            Long: the keys, ``actual``, ``predicted``, ``count`` (Σw, the row count when
            unweighted), one row per group and pair of classes. Wide: the keys, ``actual``,
            and a column per predicted class.

        Raises
        ------
        InputError
            A state that is not multiclass, or an unknown ``normalize``.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": ["a", "b", "c", "a", "b", "c"],
        ...                    "pred": ["a", "b", "b", "a", "c", "c"]})
        >>> st = se.accumulate(df, task="multiclass", label="y", prediction="pred")
        >>> st.confusion_matrix().filter(pl.col("actual") == "b")
        shape: (3, 3)
        ┌────────┬───────────┬───────┐
        │ actual ┆ predicted ┆ count │
        │ ---    ┆ ---       ┆ ---   │
        │ str    ┆ str       ┆ f64   │
        ╞════════╪═══════════╪═══════╡
        │ b      ┆ a         ┆ 0.0   │
        │ b      ┆ b         ┆ 1.0   │
        │ b      ┆ c         ┆ 1.0   │
        └────────┴───────────┴───────┘
        >>> st.confusion_matrix("true", wide=True)
        shape: (3, 4)
        ┌────────┬─────┬─────┬─────┐
        │ actual ┆ a   ┆ b   ┆ c   │
        │ ---    ┆ --- ┆ --- ┆ --- │
        │ str    ┆ f64 ┆ f64 ┆ f64 │
        ╞════════╪═════╪═════╪═════╡
        │ a      ┆ 1.0 ┆ 0.0 ┆ 0.0 │
        │ b      ┆ 0.0 ┆ 0.5 ┆ 0.5 │
        │ c      ┆ 0.0 ┆ 0.5 ┆ 0.5 │
        └────────┴─────┴─────┴─────┘

        """
        self._require("classes", "confusion_matrix")
        return confusion_matrix(self, normalize, wide=wide)

    def _require(self, capability: str, method: str) -> None:
        """Refuse ``method`` on a state whose task does not offer ``capability``."""
        if not offers(self.spec.kind, capability):
            tasks = offering(capability)
            raise InputError(
                f"expected a {' or '.join(tasks)} state for {method}(), got a "
                f"{self.spec.kind} state; hint: accumulate with task='{tasks[0]}'"
            )

    def coarsen(self, precision: int) -> State:
        """The same binary state at fewer mantissa bits: its buckets merged.

        Equal to accumulating the rows at ``precision`` (the thresholds' splits kept), for a
        smaller table and a larger AUC error bound.

        Parameters
        ----------
        precision : int
            Mantissa bits of the coarser buckets: from 0 to the state's own precision.

        Returns
        -------
        State
            The state at ``precision`` bits (this state itself at its own precision).

        Raises
        ------
        InputError
            A state that is not binary, an exact state, or a precision outside
            0 … the state's.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 1, 0, 1], "p": [0.30, 0.31, 0.6, 0.9]})
        >>> st = se.accumulate(df, label="y", score="p")
        >>> st.table.height, st.coarsen(2).table.height
        (4, 3)

        """
        self._require("curves", "coarsen")
        spec = self.spec
        if spec.exact or not 0 <= precision <= spec.precision:
            held = "exact" if spec.exact else f"{spec.precision} bits"
            raise InputError(
                f"expected a bucketed state and fewer bits than it holds, got precision "
                f"{precision!r} for a state at {held}; hint: accumulate at the precision wanted"
            )
        if precision == spec.precision:
            return self
        coarse = replace(spec, precision=precision)
        rekeyed = self.table.with_columns(key_bucket(pl.col("bucket"), precision, spec.splits))
        return State(coarse, summed(coarse, [rekeyed]))

    def roc_curve(self, *, drop_intermediate: bool = False) -> pl.DataFrame:
        """ROC points per group: keys, threshold, fpr, tpr (as sklearn's ``roc_curve``).

        In exact mode the points are sklearn's; in bucketed mode they are the exact points
        at each bucket's lowest score.

        Parameters
        ----------
        drop_intermediate : bool
            Drop collinear points as sklearn's ``roc_curve`` does (its default); the area is
            unchanged.

        Returns
        -------
        DataFrame
            The keys, ``threshold`` (descending, first ``inf``), ``fpr``, ``tpr``: one row
            per group and point.

        Raises
        ------
        InputError
            A state that is not binary.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.roc_curve(drop_intermediate=True)
        shape: (6, 3)
        ┌───────────┬──────────┬──────────┐
        │ threshold ┆ fpr      ┆ tpr      │
        │ ---       ┆ ---      ┆ ---      │
        │ f64       ┆ f64      ┆ f64      │
        ╞═══════════╪══════════╪══════════╡
        │ inf       ┆ 0.0      ┆ 0.0      │
        │ 0.8       ┆ 0.0      ┆ 0.333333 │
        │ 0.7       ┆ 0.0      ┆ 0.666667 │
        │ 0.4       ┆ 0.333333 ┆ 0.666667 │
        │ 0.35      ┆ 0.333333 ┆ 1.0      │
        │ 0.1       ┆ 1.0      ┆ 1.0      │
        └───────────┴──────────┴──────────┘

        """
        self._require("curves", "roc_curve")
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
        """Per group, the threshold a criterion picks (:mod:`streameval.tasks.binary.operating`).

        ``criterion`` is ``"youden"``, ``"f1"``, ``"fbeta"`` (with ``beta``), ``"cost"``
        (``costs=(cost_fp, cost_fn)``, ``prevalence``), or ``"recall"``, ``"precision"``,
        ``"fpr"`` with a ``target``. Rows: keys, criterion, threshold, value, the confusion
        counts, precision, recall, fpr, f_beta and the cost-sensitive error at it.

        Parameters
        ----------
        criterion : {"youden", "f1", "fbeta", "cost", "recall", "precision", "fpr"}
            What the threshold optimises: the largest Youden's J (tpr − fpr); the largest
            F1 or F-beta; the smallest expected cost; or the threshold that reaches
            ``target`` with the most of the rest (the highest with recall ≥ target, the
            lowest with precision ≥ target, the lowest with fpr ≤ target). Ties go to the
            highest threshold.
        target : float, optional
            With ``"recall"``, ``"precision"`` or ``"fpr"`` (and only with them): the
            rate to reach, in [0, 1].
        beta : float
            With ``"fbeta"``: the weight of recall (> 0); also the ``beta`` of the
            ``f_beta`` column.
        costs : tuple of float
            ``(cost_fp, cost_fn)``, non-negative: the costs of the ``"cost"`` criterion and
            of the ``cost_sensitive_error`` column.
        prevalence : float, optional
            With ``"cost"``: the prevalence π in [0, 1] of the expected cost
            ``cost_fn·π·fnr + cost_fp·(1 − π)·fpr``; default each group's own.

        Returns
        -------
        DataFrame
            One row per group: the keys, ``criterion``, ``threshold``, ``value`` (the
            criterion's), ``tp``, ``fp``, ``tn``, ``fn``, ``precision``, ``recall``,
            ``fpr``, ``f_beta``, ``cost_sensitive_error``. A group where no threshold is
            feasible has no row.

        Raises
        ------
        InputError
            A state that is not binary, an unknown criterion, a ``target`` missing, given
            where it does not apply or outside [0, 1], ``beta`` ≤ 0, negative costs, or a
            prevalence outside [0, 1].

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.operating_point("recall", target=1.0).select(
        ...     "criterion", "threshold", "value", "tp", "fp", "precision")
        shape: (1, 6)
        ┌───────────┬───────────┬───────┬─────┬─────┬───────────┐
        │ criterion ┆ threshold ┆ value ┆ tp  ┆ fp  ┆ precision │
        │ ---       ┆ ---       ┆ ---   ┆ --- ┆ --- ┆ ---       │
        │ str       ┆ f64       ┆ f64   ┆ i64 ┆ i64 ┆ f64       │
        ╞═══════════╪═══════════╪═══════╪═════╪═════╪═══════════╡
        │ recall    ┆ 0.35      ┆ 1.0   ┆ 3   ┆ 1   ┆ 0.75      │
        └───────────┴───────────┴───────┴─────┴─────┴───────────┘
        >>> st.operating_point("youden").select("threshold", "value", "recall", "fpr").row(0)
        (0.7, 0.6666666666666666, 0.6666666666666666, 0.0)

        """
        self._require("curves", "operating_point")
        return operating_points(
            self, criterion, target=target, beta=beta, costs=costs, prevalence=prevalence
        )

    def areas(self, max_fpr: float | None = None) -> pl.DataFrame:
        """Per group: partial AUC, PR trapezoid area, break-even point and KS statistic.

        ``partial_auc`` is McClish-standardised (sklearn's ``roc_auc_score(max_fpr=)``; the
        AUC itself without ``max_fpr``), ``pr_auc`` the trapezoid (sklearn's
        ``auc(recall, precision)``), ``break_even`` where precision = recall, ``ks`` and
        ``ks_threshold`` the largest tpr − fpr and where.

        Parameters
        ----------
        max_fpr : float, optional
            The partial AUC's range of false positive rates, (0, max_fpr], with max_fpr in
            (0, 1]. Default: the whole curve.

        Returns
        -------
        DataFrame
            One row per group: the keys, ``partial_auc``, ``partial_auc_error``,
            ``pr_auc``, ``pr_auc_error``, ``break_even``, ``expected_cost`` (the area under
            :meth:`cost_curve`), ``ks``, ``ks_error``, ``ks_threshold``. The ``_error``
            columns bound how far the exact value may lie (0 in exact mode).

        Raises
        ------
        InputError
            A state that is not binary, or ``max_fpr`` outside (0, 1].

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.areas().select("partial_auc", "pr_auc", "break_even", "ks", "ks_threshold")
        shape: (1, 5)
        ┌─────────────┬──────────┬────────────┬──────────┬──────────────┐
        │ partial_auc ┆ pr_auc   ┆ break_even ┆ ks       ┆ ks_threshold │
        │ ---         ┆ ---      ┆ ---        ┆ ---      ┆ ---          │
        │ f64         ┆ f64      ┆ f64        ┆ f64      ┆ f64          │
        ╞═════════════╪══════════╪════════════╪══════════╪══════════════╡
        │ 0.888889    ┆ 0.902778 ┆ 0.666667   ┆ 0.666667 ┆ 0.7          │
        └─────────────┴──────────┴────────────┴──────────┴──────────────┘
        >>> round(st.areas(max_fpr=0.5)["partial_auc"].item(), 4)
        0.8519

        """
        self._require("curves", "areas")
        return areas(self, max_fpr)

    def gains(self, quantiles: int | Sequence[float] = 10) -> pl.DataFrame:
        """Cumulative gains and lift per group at population quantiles (deciles by default).

        Rows: keys, quantile, threshold, population (the fraction reached), gain, lift,
        response (:mod:`streameval.tasks.binary.costs`).

        Parameters
        ----------
        quantiles : int or list of float
            A number q of equal quantiles (1/q, 2/q, …, 1), or the fractions of the
            population (by weight) themselves, each in (0, 1].

        Returns
        -------
        DataFrame
            One row per group and quantile: the keys, ``quantile``, ``threshold`` (the
            first whose population fraction reaches the quantile: scores are not split),
            ``population`` (that fraction), ``gain`` (the fraction of the positives
            captured), ``lift`` (gain / population), ``response`` (the positive rate
            among the rows at or above the threshold).

        Raises
        ------
        InputError
            A state that is not binary, or quantiles that are neither a count ≥ 1 nor
            fractions in (0, 1].

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.gains(3)
        shape: (3, 6)
        ┌──────────┬───────────┬────────────┬──────────┬──────┬──────────┐
        │ quantile ┆ threshold ┆ population ┆ gain     ┆ lift ┆ response │
        │ ---      ┆ ---       ┆ ---        ┆ ---      ┆ ---  ┆ ---      │
        │ f64      ┆ f64       ┆ f64        ┆ f64      ┆ f64  ┆ f64      │
        ╞══════════╪═══════════╪════════════╪══════════╪══════╪══════════╡
        │ 0.333333 ┆ 0.7       ┆ 0.333333   ┆ 0.666667 ┆ 2.0  ┆ 1.0      │
        │ 0.666667 ┆ 0.35      ┆ 0.666667   ┆ 1.0      ┆ 1.5  ┆ 0.75     │
        │ 1.0      ┆ 0.1       ┆ 1.0        ┆ 1.0      ┆ 1.0  ┆ 0.5      │
        └──────────┴───────────┴────────────┴──────────┴──────┴──────────┘

        """
        self._require("curves", "gains")
        return gains(self, quantiles)

    def cost_curve(self) -> pl.DataFrame:
        """The cost curve per group: the lower envelope of the ROC points' cost lines.

        Rows: keys, probability_cost, normalized_cost, threshold (of the ROC point whose
        line the envelope follows from there); its area is ``areas()["expected_cost"]``.

        Returns
        -------
        DataFrame
            The keys, ``probability_cost`` (from 0 to 1), ``normalized_cost``,
            ``threshold``: one row per group and vertex of the envelope.

        Raises
        ------
        InputError
            A state that is not binary.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.cost_curve()
        shape: (3, 3)
        ┌──────────────────┬─────────────────┬───────────┐
        │ probability_cost ┆ normalized_cost ┆ threshold │
        │ ---              ┆ ---             ┆ ---       │
        │ f64              ┆ f64             ┆ f64       │
        ╞══════════════════╪═════════════════╪═══════════╡
        │ 0.0              ┆ 0.0             ┆ 0.7       │
        │ 0.5              ┆ 0.166667        ┆ 0.35      │
        │ 1.0              ┆ 0.0             ┆ 0.1       │
        └──────────────────┴─────────────────┴───────────┘

        """
        self._require("curves", "cost_curve")
        return cost_curve(self)

    def calibration_curve(self, n_bins: int = 10, strategy: str = "uniform") -> pl.DataFrame:
        """Reliability curve per group: per bin, rows, weight, mean prediction, observed rate.

        Bins as sklearn's ``calibration_curve`` (``"uniform"`` or ``"quantile"``);
        :meth:`calibration_error` gives ``ece`` and ``mce``.

        Parameters
        ----------
        n_bins : int
            Number of bins (≥ 1).
        strategy : {"uniform", "quantile"}
            ``"uniform"``: equal-width bins on [0, 1]; ``"quantile"``: edges at the scores'
            percentiles. A score equal to an inner edge belongs to the lower bin.

        Returns
        -------
        DataFrame
            One row per group and non-empty bin: the keys, ``bin``, ``lo``, ``hi``, ``n``
            (rows), ``weight``, ``mean_predicted`` (Σw·p / Σw), ``observed_rate``
            (Σw·y / Σw).

        Raises
        ------
        InputError
            A state that is not binary, scores outside [0, 1], ``n_bins`` < 1 or an unknown
            ``strategy``.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.calibration_curve(n_bins=2)
        shape: (2, 7)
        ┌─────┬─────┬─────┬─────┬────────┬────────────────┬───────────────┐
        │ bin ┆ lo  ┆ hi  ┆ n   ┆ weight ┆ mean_predicted ┆ observed_rate │
        │ --- ┆ --- ┆ --- ┆ --- ┆ ---    ┆ ---            ┆ ---           │
        │ i32 ┆ f64 ┆ f64 ┆ i64 ┆ f64    ┆ f64            ┆ f64           │
        ╞═════╪═════╪═════╪═════╪════════╪════════════════╪═══════════════╡
        │ 0   ┆ 0.0 ┆ 0.5 ┆ 4   ┆ 4.0    ┆ 0.2625         ┆ 0.25          │
        │ 1   ┆ 0.5 ┆ 1.0 ┆ 2   ┆ 2.0    ┆ 0.75           ┆ 1.0           │
        └─────┴─────┴─────┴─────┴────────┴────────────────┴───────────────┘

        """
        self._require("curves", "calibration_curve")
        return calibration_curve(self, n_bins, strategy)

    def calibration_error(self, n_bins: int = 10, strategy: str = "uniform") -> pl.DataFrame:
        """Per group: expected (``ece``) and maximum (``mce``) calibration error.

        ``ece`` is the weight-averaged |observed − predicted| over the bins of
        :meth:`calibration_curve`, ``mce`` its largest value.

        Parameters
        ----------
        n_bins : int
            Number of bins (≥ 1).
        strategy : {"uniform", "quantile"}
            The bins, as :meth:`calibration_curve`.

        Returns
        -------
        DataFrame
            One row per group: the keys, ``ece``, ``mce``.

        Raises
        ------
        InputError
            A state that is not binary, scores outside [0, 1], ``n_bins`` < 1 or an unknown
            ``strategy``.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> [round(v, 4) for v in st.calibration_error(n_bins=2).row(0)]
        [0.0917, 0.25]

        """
        self._require("curves", "calibration_error")
        return calibration_error(self, n_bins, strategy)

    def cost_sensitive_error(
        self, costs: tuple[float, float], threshold: float | Sequence[float] = 0.5
    ) -> pl.DataFrame:
        """Per group and threshold: the cost-sensitive error rate of the reference texts.

        ``(cost_fp·FP + cost_fn·FN) / total`` with ``costs=(cost_fp, cost_fn)``.

        Parameters
        ----------
        costs : tuple of float
            ``(cost_fp, cost_fn)``: the non-negative costs of a false positive and of a
            false negative (correct predictions cost nothing).
        threshold : float or list of float
            Predicted positive means ``score >= threshold``; a list gives a row per
            threshold.

        Returns
        -------
        DataFrame
            The keys, ``threshold``, ``cost_sensitive_error``: one row per group and
            threshold; null for a group of total weight 0.

        Raises
        ------
        InputError
            A state that is not binary, negative costs, or a threshold inside a score
            bucket.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.cost_sensitive_error((1.0, 5.0), [0.3, 0.5])
        shape: (2, 2)
        ┌───────────┬──────────────────────┐
        │ threshold ┆ cost_sensitive_error │
        │ ---       ┆ ---                  │
        │ f64       ┆ f64                  │
        ╞═══════════╪══════════════════════╡
        │ 0.3       ┆ 0.166667             │
        │ 0.5       ┆ 0.833333             │
        └───────────┴──────────────────────┘

        """
        self._require("curves", "cost_sensitive_error")
        return cost_sensitive_error(self, costs, as_thresholds(threshold))

    def det_curve(self, *, drop_intermediate: bool = False) -> pl.DataFrame:
        """DET points per group: keys, threshold, fpr, fnr (as sklearn's ``det_curve``).

        From the highest threshold with no false positive to the first one with no false
        negative; groups with one class have no points.

        Parameters
        ----------
        drop_intermediate : bool
            Drop the points whose true positive count equals both neighbours' (a group's
            first and last points are kept).

        Returns
        -------
        DataFrame
            The keys, ``threshold`` (ascending), ``fpr``, ``fnr``: one row per group and
            point.

        Raises
        ------
        InputError
            A state that is not binary.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.det_curve()
        shape: (3, 3)
        ┌───────────┬──────────┬──────────┐
        │ threshold ┆ fpr      ┆ fnr      │
        │ ---       ┆ ---      ┆ ---      │
        │ f64       ┆ f64      ┆ f64      │
        ╞═══════════╪══════════╪══════════╡
        │ 0.35      ┆ 0.333333 ┆ 0.0      │
        │ 0.4       ┆ 0.333333 ┆ 0.333333 │
        │ 0.7       ┆ 0.0      ┆ 0.333333 │
        └───────────┴──────────┴──────────┘

        """
        self._require("curves", "det_curve")
        return det_curve(self, drop_intermediate=drop_intermediate)

    def pr_curve(self) -> pl.DataFrame:
        """PR points per group: keys, threshold, precision, recall.

        The points of sklearn's ``precision_recall_curve`` in exact mode; in bucketed mode
        the exact points at each bucket's lowest score.

        Returns
        -------
        DataFrame
            The keys, ``threshold`` (ascending, last ``inf``), ``precision``, ``recall``:
            one row per group and point. The last row of each group is sklearn's closing
            point (precision 1, recall 0); recall is null for a group without positives.

        Raises
        ------
        InputError
            A state that is not binary.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> st = se.accumulate(df, label="y", score="p", precision="exact")
        >>> st.pr_curve()
        shape: (7, 3)
        ┌───────────┬───────────┬──────────┐
        │ threshold ┆ precision ┆ recall   │
        │ ---       ┆ ---       ┆ ---      │
        │ f64       ┆ f64       ┆ f64      │
        ╞═══════════╪═══════════╪══════════╡
        │ 0.1       ┆ 0.5       ┆ 1.0      │
        │ 0.2       ┆ 0.6       ┆ 1.0      │
        │ 0.35      ┆ 0.75      ┆ 1.0      │
        │ 0.4       ┆ 0.666667  ┆ 0.666667 │
        │ 0.7       ┆ 1.0       ┆ 0.666667 │
        │ 0.8       ┆ 1.0       ┆ 0.333333 │
        │ inf       ┆ 1.0       ┆ 0.0      │
        └───────────┴───────────┴──────────┘

        """
        self._require("curves", "pr_curve")
        return pr_curve(self)

    def threshold_curve(self) -> pl.DataFrame:
        """Precision, recall and F1 against the threshold, per group.

        The thresholds of sklearn's ``precision_recall_curve``: each distinct score in exact
        mode, each bucket's lowest score in bucketed mode (the exact values there). A row
        predicts positive at ``score >= threshold``.

        Returns
        -------
        DataFrame
            The keys, ``threshold`` (ascending), ``precision``, ``recall`` and ``f1``: one
            row per group and threshold. F1 is 2·TP / (2·TP + FP + FN), 0 in a group without
            positives, where recall is null.

        Raises
        ------
        InputError
            A state that is not binary.

        Examples
        --------
        >>> import polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
        >>> se.accumulate(df, label="y", score="p", precision="exact").threshold_curve()
        shape: (6, 4)
        ┌───────────┬───────────┬──────────┬──────────┐
        │ threshold ┆ precision ┆ recall   ┆ f1       │
        │ ---       ┆ ---       ┆ ---      ┆ ---      │
        │ f64       ┆ f64       ┆ f64      ┆ f64      │
        ╞═══════════╪═══════════╪══════════╪══════════╡
        │ 0.1       ┆ 0.5       ┆ 1.0      ┆ 0.666667 │
        │ 0.2       ┆ 0.6       ┆ 1.0      ┆ 0.75     │
        │ 0.35      ┆ 0.75      ┆ 1.0      ┆ 0.857143 │
        │ 0.4       ┆ 0.666667  ┆ 0.666667 ┆ 0.666667 │
        │ 0.7       ┆ 1.0       ┆ 0.666667 ┆ 0.8      │
        │ 0.8       ┆ 1.0       ┆ 0.333333 ┆ 0.5      │
        └───────────┴───────────┴──────────┴──────────┘

        """
        self._require("curves", "threshold_curve")
        return threshold_curve(self)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write to Parquet (atomically), spec and schema version in the file metadata.

        The file is written to a temporary file in the same folder, then renamed into
        place; the metadata also holds a SHA-256 checksum of the content, which
        :func:`streameval.read_state` verifies. Missing folders are created.

        Parameters
        ----------
        path : str or path-like
            The file to write (replaced if it exists).

        Returns
        -------
        None

        Raises
        ------
        streameval.files.FileWriteError
            The file cannot be written (no permission, no space …); ``path`` is untouched.

        Examples
        --------
        >>> import os, tempfile, polars as pl, streameval as se
        >>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
        >>> st = se.accumulate(df, label="y", score="p")
        >>> path = os.path.join(tempfile.mkdtemp(), "day=2026-10-01", "state.parquet")
        >>> st.write(path)
        >>> se.read_state(path).metrics()["roc_auc"].item()
        0.75

        """
        write_state(self, path)


def drift_table(
    state: State,
    baseline: State | None,
    bins: int,
    *,
    every: bool = False,
    histogram: Callable[[State], Sorted | Counted] | None = None,
    measures: Collection[str] = MEASURES,
) -> pl.DataFrame:
    """:meth:`State.drift`, and with ``every`` a row for each baseline group ``state`` lacks.

    Those rows (when both states have the same keys) have a null ``n``: a group whose rows
    stopped coming. Without a baseline, every group's measures are null. ``histogram`` gives
    a state's sorted score histogram (by default :func:`score_histogram`; a caller judging
    day after day keeps the ones it will read again; a baseline's may be counts read in
    place). ``measures``: those wanted (:func:`~streameval.stats.drift.drift`'s).
    """
    on = check_comparable(state.spec, (state if baseline is None else baseline).spec, bins)
    sort = histogram or score_histogram
    keys = sample_keys(state.spec)
    model = ["model"] if offers(state.spec.kind, "models") else []
    current = sort(state)
    if not isinstance(current, Sorted):
        raise ValueError("expected the current state's histogram sorted, not counts in place")
    return drift(
        current,
        None if baseline is None else sort(baseline),
        [*keys, *model],
        [*on, *model],
        bins=bins,
        exact=state.spec.exact,
        every=every,
        measures=measures,
    )


def metric_table_of(state: State, options: MetricOptions) -> pl.DataFrame:
    """:meth:`State.metrics` of checked ``options`` (intervals from formulas, not resamples).

    (``options.statistics`` is not an argument of :meth:`State.metrics`: a job's checks
    leave caret's statistics out of the tables they judge.)
    """
    check_ci(options.ci, options.level, options.auc_method)
    check_beta(options.beta)
    return task_of(state.spec.kind).metric_table(state, options)


def score_histogram(state: State) -> Sorted:
    """A state's score histogram sorted by group and bucket (the keys of its own sample).

    From the state's runs: those it has (a pool of day states), or its binary table's read
    back as runs (a day's state: written sorted by group and bucket, so coding its rows
    costs less than grouping and sorting them). Runs hold each bucket's labelled rows, so
    the rows still without a label (optional labels) and weights come from the table.
    """
    coded, spec = state.coded(), state.spec
    one_score = offers(spec.kind, "curves")  # (a binary state: its rows read as runs)
    if one_score and not (spec.unlabeled or spec.weighted or spec.replicates):
        if not isinstance(coded, Runs) and kernels.enabled():
            coded = state_runs(state.table, spec)
        if isinstance(coded, Runs):
            return Sorted.of_runs(coded, list(spec.keys))
    spec, table = sample(spec, state.table)
    model = ["model"] if offers(spec.kind, "models") else []
    return Sorted.of_frame(HISTOGRAMS[spec.kind](spec, table), [*spec.keys, *model])


def merge(states: Iterable[State]) -> State:
    """Merge states computed with the same spec.

    The tables are concatenated and their value columns re-aggregated per group and state
    cell; classes found in the data (``Spec.found``) are merged into their sorted union.

    Parameters
    ----------
    states : iterable of State
        The states of the parts of the data (partitions, days, shards), at least one.

    Returns
    -------
    State
        The state of all the parts' rows; a single state is returned as it is.

    Raises
    ------
    InputError
        No states, or label values found over all the parts that cannot be evaluated
        (a binary label with more than two values, too many classes).
    SpecMismatchError
        The specs differ (columns, keys, precision, thresholds, bootstrap settings), or the
        tables' column types do.

    See Also
    --------
    State.merge : The same, as a method.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1], "p": [0.2, 0.7, 0.7]})
    >>> parts = [se.accumulate(df[i : i + 1], label="y", score="p") for i in range(3)]
    >>> se.merge(parts).table.height
    2
    >>> se.merge(parts).table.sort("bucket").select("pos", "neg")
    shape: (2, 2)
    ┌─────┬─────┐
    │ pos ┆ neg │
    │ --- ┆ --- │
    │ i64 ┆ i64 │
    ╞═════╪═════╡
    │ 0   ┆ 1   │
    │ 2   ┆ 0   │
    └─────┴─────┘

    """
    items = list(states)
    if not items:
        raise InputError("expected at least one state to merge, got none")
    spec = merged_spec([s.spec for s in items])
    items = [_at_version(s, spec.schema_version) for s in items]
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
    merged = summed(spec, [s.table for s in items])
    kind.check_merged(spec, merged)
    return State(spec, merged)


def summed(spec: Spec, tables: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """State tables of ``spec`` as one: each group's state cells summed, in the tables' order.

    The rows come out sorted by the keys and the state cells, and a cell's sums add its
    rows in the order of the tables (:func:`streameval.ordered.reaggregated`): the same
    tables give the same bits.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1], "p": [0.2, 0.7, 0.7]})
    >>> st = se.accumulate(df, label="y", score="p")
    >>> summed(st.spec, [st.table, st.table]).select("pos", "neg").rows()
    [(0, 2), (4, 0)]
    """
    kind = kind_module(spec)
    table = pl.concat(tables, how="vertical")
    return reaggregated(table, [*spec.keys, *kind.group_columns(spec)], kind.merge_ops(spec))


def metrics_by_version(
    spec: Spec, tables: Mapping[int, list[pl.DataFrame]], **options: Any
) -> pl.DataFrame:
    """The metric table of state tables of ``spec`` grouped by their schema version.

    Each version's tables are finalized at that version (a store's older states: no hinge
    sums, so a null hinge loss) and the tables concatenated in version order, each sorted by
    the keys, their union sorted by them too.
    """
    outs = [
        State(replace(spec, schema_version=v), pl.concat(parts)).metrics(**options)
        for v, parts in sorted(tables.items())
    ]
    if len(outs) == 1:
        return outs[0]
    return pl.concat(outs).sort(list(spec.keys), nulls_last=False, maintain_order=True)


def _at_version(state: State, version: int) -> State:
    """``state`` as a state of an older schema version: the columns that version lacks dropped."""
    if state.spec.schema_version == version:
        return state
    spec = replace(state.spec, schema_version=version)
    kind = kind_module(spec)
    keep = {*spec.keys, *kind.group_columns(spec), *kind.merge_ops(spec)}
    return State(spec, state.table.select([c for c in state.table.columns if c in keep]))


def read_state(path: str | os.PathLike[str]) -> State:
    """Read a state written by :meth:`State.write`, verified whole or refused.

    The file's checksum (of the schema version, the spec and the table's content) and its
    Parquet page checksums are verified before anything uses the data; then the spec's
    fields, and the columns, types and buckets the spec implies.

    Parameters
    ----------
    path : str or path-like
        The state file.

    Returns
    -------
    State
        The state as it was written: its spec and table.

    Raises
    ------
    StateFileError
        The file is missing, not a state file, of another schema version, written without
        a checksum, corrupted or altered (the checksum does not match), or its spec
        contradicts its table.

    Examples
    --------
    >>> import os, tempfile, polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "a", "b", "b"], "y": [0, 1, 1, 0],
    ...                    "p": [0.1, 0.8, 0.4, 0.5]})
    >>> path = os.path.join(tempfile.mkdtemp(), "state.parquet")
    >>> se.accumulate(df, label="y", score="p", by="g").write(path)
    >>> st = se.read_state(path)
    >>> st.keys, st.spec.kind
    (['g'], 'binary')
    >>> st.metrics().select("g", "roc_auc")
    shape: (2, 2)
    ┌─────┬─────────┐
    │ g   ┆ roc_auc │
    │ --- ┆ ---     │
    │ str ┆ f64     │
    ╞═════╪═════════╡
    │ a   ┆ 1.0     │
    │ b   ┆ 0.0     │
    └─────┴─────────┘

    """
    spec, table = read_state_file(path)
    return State(spec, table)


def _resampled_metrics(
    state: State,
    ci: str,
    level: float,
    jackknife: str | None,
    threshold: float | Sequence[float] | None,
    parameters: dict[str, float],
    metrics: Sequence[str] | None,
) -> pl.DataFrame:
    """The metric table with bootstrap or jackknife intervals of every metric column.

    ``parameters``: the metric table's ``alpha`` and ``beta``.
    """
    options: dict[str, Any] = {"metrics": metrics}
    if offers(state.spec.kind, "thresholds"):
        options["threshold"] = threshold
    elif threshold is not None:
        raise InputError(f"expected no threshold for a {state.spec.kind} state, got {threshold!r}")
    options |= parameters

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
