"""Every declared metric through one harness, driven by the registry of declarations.

Each metric table a task computes (:data:`streameval.metrics.registry.TABLES`) is built from
random chunked, weighted, tied, imbalanced data (hypothesis): accumulated per chunk, merged
and finalized. Every declared column is then held to the same laws, with no test of its own:

- the table has exactly the declared columns, in order (those the data allows);
- the merged chunks, the rows shuffled and the whole give the same value (1e-9);
- weights of 1 give the unweighted value;
- reference parity in exact mode: scikit-learn's value (``tests/reference*.py``) to 1e-9; a
  declared metric without a reference value fails here, so a new metric is its declaration
  plus its reference line;
- a bound is 0 in exact mode, and in bucketed mode holds the exact values of the columns it
  bounds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
import pytest
import reference_multilabel as ref_multilabel
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
import reference_multiclass as ref_multiclass
import reference_ranking as ref_ranking
import reference_regression as ref_regression
import streameval as se
from streameval.metrics.declare import Metric
from streameval.metrics.registry import TABLES

pytestmark = [
    pytest.mark.filterwarnings("ignore::streameval.DomainWarning"),
    pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*do not sum to 1:UserWarning"),
]

PRECISIONS = st.one_of(st.just("exact"), st.integers(0, 12))
ROWS = ("g", "threshold", "class", "model", "k")
BETA = 0.7  # (F-beta away from F1, where a mistake in β would show)


@dataclass(frozen=True)
class Case:
    """A table a task computes: its data, its accumulate arguments and its finalize."""

    frames: st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]
    table: Callable[[se.State], pl.DataFrame]
    reference: Callable[[pl.DataFrame, dict[str, Any]], list[dict[str, Any]]] | None = None


def _binary() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]:
    def kw(drawn: tuple[pl.DataFrame, list[int], bool]) -> Any:
        df, cuts, weighted = drawn
        return df, {"label": "y", "score": "p", "weight": "w" if weighted else None}, cuts

    return ref.binary_frames().map(kw)


def _multiclass() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]:
    def kw(drawn: tuple[pl.DataFrame, list[Any], list[int], bool]) -> Any:
        df, classes, cuts, weighted = drawn
        scores = [c for c in df.columns if c.startswith("p") and c != "pred"]
        args = {"task": "multiclass", "label": "y", "classes": classes, "scores": scores}
        args["prediction"] = "pred" if "pred" in df.columns else None
        return df, args | {"weight": "w" if weighted else None}, cuts

    return ref_multiclass.multiclass_frames().map(kw)


def _regression() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]:
    def kw(drawn: tuple[pl.DataFrame, list[int], bool]) -> Any:
        df, cuts, weighted = drawn
        args = {"task": "regression", "label": "y", "prediction": "f"}
        args |= {"power": ref_regression.POWER, "weight": "w" if weighted else None}
        return df, args, cuts

    return ref_regression.regression_frames().map(kw)


def _ranking() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]:
    def kw(drawn: tuple[pl.DataFrame, list[int], bool]) -> Any:
        df, cuts, weighted = drawn
        args = {"task": "ranking", "label": "y", "score": "s", "query": "q"}
        return df, args | {"k": list(ref_ranking.KS), "weight": "w" if weighted else None}, cuts

    return ref_ranking.ranking_frames().map(kw)


def _multilabel() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]:
    def kw(drawn: tuple[pl.DataFrame, list[int], bool, int]) -> Any:
        df, cuts, weighted, _ = drawn
        labels, scores = ref_multilabel.label_columns(df)
        args = {"task": "multilabel", "label": labels, "scores": scores}
        return df, args | {"weight": "w" if weighted else None}, cuts

    return ref_multilabel.multilabel_frames().map(kw)


def _paired() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any], list[int]]]:
    def kw(drawn: tuple[pl.DataFrame, list[int], bool]) -> Any:
        df, cuts, weighted = drawn
        df = df.with_columns(q=(pl.col("p") * 0.5 + 0.25).round(2))
        args = {"task": "paired", "label": "y", "scores": ["p", "q"]}
        return df, args | {"weight": "w" if weighted else None}, cuts

    return ref.binary_frames().map(kw)


CASES = {
    "binary": Case(
        _binary(),
        lambda s: s.metrics(beta=BETA),
        lambda df, kw: ref.reference_table(df, [0.5], beta=BETA),
    ),
    "multiclass": Case(
        _multiclass(),
        lambda s: s.metrics(beta=BETA),
        lambda df, kw: ref_multiclass.multiclass_reference(df, kw["classes"], beta=BETA),
    ),
    "regression": Case(
        _regression(),
        lambda s: s.metrics(alpha=ref_regression.ALPHA),
        lambda df, kw: ref_regression.regression_reference(df),
    ),
    "paired": Case(_paired(), lambda s: s.metrics()),
    "ranking": Case(
        _ranking(),
        lambda s: s.metrics(),
        lambda df, kw: ref_ranking.ranking_reference(df),
    ),
    "multilabel": Case(
        _multilabel(),
        lambda s: s.metrics(),
        lambda df, kw: ref_multilabel.multilabel_reference(df),
    ),
    "per_class": Case(_multiclass(), lambda s: s.per_class()),
    "per_label": Case(
        _multilabel(),
        lambda s: s.per_class(),
        lambda df, kw: ref_multilabel.per_label_reference(df),
    ),
    "areas": Case(_binary(), lambda s: s.areas()),
}


def test_every_declared_table_is_tested() -> None:
    assert sorted(CASES) == sorted(TABLES)


def _same(name: str, a: pl.DataFrame, b: pl.DataFrame, declared: list[Metric]) -> None:
    assert a.height == b.height, (name, a.height, b.height)
    for m in declared:
        for i, (x, y) in enumerate(zip(a[m.name].to_list(), b[m.name].to_list(), strict=True)):
            assert ref.close(x, y), (name, m.name, i, x, y)


def _laws(case_name: str, frame: Any, precision: Any, data: st.DataObject) -> None:
    case = CASES[case_name]
    df, kw, cuts = frame
    declared_all = TABLES[case_name]
    accumulate = dict(kw, by="g", precision=precision)
    whole = se.accumulate(df, **accumulate)
    table = case.table(whole)
    # the table's columns are the declared ones, in order (the data's keys and intervals aside)
    names = {m.name for m in declared_all}
    parts_of = ("_lo", "_hi", "_se")
    shown = [
        c
        for c in table.columns
        if c not in ROWS and not (c.endswith(parts_of) and c.rsplit("_", 1)[0] in names)
    ]
    declared = [m.name for m in declared_all if m.name in shown]
    assert shown == declared, (case_name, shown, [m.name for m in declared_all])
    values = [m for m in declared_all if m.role != "identifier" and m.name in table.columns]
    # chunks merged
    parts = [df[a:b] for a, b in itertools.pairwise(cuts)]
    merged = se.merge([se.accumulate(p, **accumulate) for p in parts])
    _same("merged", table, case.table(merged), values)
    # rows in another order
    seed = data.draw(st.integers(0, 2**31 - 1), label="shuffle seed")
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed)
    _same("shuffled", table, case.table(se.accumulate(shuffled, **accumulate)), values)
    # weights of 1 equal no weights
    if kw.get("weight") is None:
        ones = df.with_columns(_one=pl.lit(1.0))
        weighted = case.table(se.accumulate(ones, **(accumulate | {"weight": "_one"})))
        _same("weights of 1", table, weighted, values)


def _parity(case_name: str, frame: Any) -> None:
    case = CASES[case_name]
    assert case.reference is not None
    df, kw, _ = frame
    table = case.table(se.accumulate(df, **kw, by="g", precision="exact"))
    expected = case.reference(df, kw)
    assert table.height == len(expected)
    for row, want in zip(table.to_dicts(), expected, strict=True):
        for m in TABLES[case_name]:
            if m.name not in row or m.role == "identifier":
                continue
            if m.role == "bound":  # (exact mode: nothing to bound)
                assert row[m.name] in (0.0, None), (m.name, row[m.name])
                continue
            if m.name not in want:  # (a degenerate group: the reference has few values)
                continue
            assert ref.close(row[m.name], want[m.name]), (m.name, row[m.name], want[m.name])


def _bounds(case_name: str, frame: Any, precision: int) -> None:
    case = CASES[case_name]
    df, kw, _ = frame
    exact = case.table(se.accumulate(df, **kw, by="g", precision="exact"))
    bucketed = case.table(se.accumulate(df, **kw, by="g", precision=precision))
    assert exact.height == bucketed.height
    for m in TABLES[case_name]:
        if m.role != "bound" or m.name not in bucketed.columns:
            continue
        for column in m.bounds:
            for x, y, e in zip(exact[column], bucketed[column], bucketed[m.name], strict=True):
                if x is None or y is None or e is None:
                    continue
                allowed = e * abs(x) if m.relative else e
                assert abs(x - y) <= allowed + 1e-9, (m.name, column, x, y, e)


TASK_TABLES = ["binary", "multiclass", "regression", "ranking", "multilabel", "per_label"]


@pytest.mark.parametrize("case_name", sorted(CASES))
@settings(max_examples=30, deadline=None)
@given(data=st.data(), precision=PRECISIONS)
def test_declared_columns_obey_the_laws(case_name: str, data: st.DataObject, precision: Any):
    _laws(case_name, data.draw(CASES[case_name].frames, label="frame"), precision, data)


@pytest.mark.parametrize("case_name", TASK_TABLES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_declared_metrics_match_their_reference(case_name: str, data: st.DataObject):
    _parity(case_name, data.draw(CASES[case_name].frames, label="frame"))


@pytest.mark.parametrize("case_name", sorted(CASES))
@settings(max_examples=30, deadline=None)
@given(data=st.data(), precision=st.integers(0, 8))
def test_bounds_hold_the_exact_values(case_name: str, data: st.DataObject, precision: int):
    _bounds(case_name, data.draw(CASES[case_name].frames, label="frame"), precision)


#: Data every task's metrics are defined on: two groups, both labels or several classes,
#: class scores, positive weights.
RICH = {
    "binary": pl.DataFrame(
        {"g": [0, 0, 0, 0, 1, 1, 1], "y": [0, 1, 1, 0, 1, 0, 1],
         "p": [0.1, 0.8, 0.4, 0.5, 0.9, 0.3, 0.6]}
    ),
    "multiclass": pl.DataFrame(
        {"g": [0, 0, 0, 0, 0, 0], "y": ["a", "b", "c", "a", "b", "c"],
         "pred": ["a", "b", "b", "a", "c", "c"], "p0": [0.6, 0.2, 0.1, 0.5, 0.3, 0.2],
         "p1": [0.3, 0.5, 0.5, 0.3, 0.3, 0.2], "p2": [0.1, 0.3, 0.4, 0.2, 0.4, 0.6]}
    ),
    "regression": pl.DataFrame(
        {"g": [0, 0, 0, 0], "y": [1.0, 2.0, 3.5, 0.5], "f": [1.5, 2.0, 3.0, 1.0]}
    ),
    "ranking": pl.DataFrame(
        {"g": [0, 0, 0, 0, 0], "q": [1, 1, 1, 2, 2], "y": [2.0, 0.0, 1.0, 0.0, 1.0],
         "s": [0.9, 0.8, 0.8, 0.3, 0.2]}
    ),
    "multilabel": pl.DataFrame(
        {"g": [0, 0, 0, 0], "y0": [1, 0, 1, 0], "y1": [0, 0, 1, 1],
         "p0": [0.9, 0.2, 0.6, 0.4], "p1": [0.3, 0.1, 0.8, 0.6]}
    ),
}  # fmt: skip
RICH["per_label"] = RICH["multilabel"]
KW: dict[str, dict[str, Any]] = {
    "binary": {"label": "y", "score": "p"},
    "multiclass": {
        "task": "multiclass", "label": "y", "prediction": "pred", "classes": ["a", "b", "c"],
        "scores": ["p0", "p1", "p2"],
    },
    "regression": {"task": "regression", "label": "y", "prediction": "f", "power": 1.5},
    "ranking": {"task": "ranking", "label": "y", "score": "s", "query": "q", "k": [None, 1, 3]},
    "multilabel": {"task": "multilabel", "label": ["y0", "y1"], "scores": ["p0", "p1"]},
}  # fmt: skip
KW["per_label"] = KW["multilabel"]


def _missing_references(case_name: str) -> list[str]:
    """The declared columns of a task's table without a reference value, on :data:`RICH`."""
    want = CASES[case_name].reference
    assert want is not None
    row = want(RICH[case_name], KW[case_name])[0]
    return [
        m.name for m in TABLES[case_name] if m.role in ("metric", "count") and m.name not in row
    ]


@pytest.mark.parametrize("case_name", TASK_TABLES)
def test_every_declared_metric_has_a_reference(case_name: str) -> None:
    assert _missing_references(case_name) == []
    _parity(case_name, (RICH[case_name], KW[case_name], []))


def test_a_metric_without_a_reference_is_found(monkeypatch) -> None:
    from streameval.metrics import registry

    extra = Metric("made_up", direction="higher")
    monkeypatch.setitem(registry.TABLES, "binary", (*registry.TABLES["binary"], extra))
    assert _missing_references("binary") == ["made_up"]
