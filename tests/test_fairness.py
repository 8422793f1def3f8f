"""Fairness disparity against fairlearn and statsmodels, on chunked, weighted, tied data.

``State.disparity`` gives each slice's selection rate, TPR and FPR (fairlearn's
``MetricFrame`` with the day as a control feature and weights as ``sample_weight``) and its
difference and ratio to a reference, with Newcombe's interval of the difference
(statsmodels' ``confint_proportions_2indep(method="newcomb")``); ``State.fairness`` gives
fairlearn's ``demographic_parity_*``, ``equal_opportunity_*`` and ``equalized_odds_*``
summaries per day.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from fairlearn import metrics as fm
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import confint_proportions_2indep

import streameval as se
from streameval.cli import main
from streameval.errors import InputError

RATES = {
    "selection_rate": fm.selection_rate,
    "tpr": fm.true_positive_rate,
    "fpr": fm.false_positive_rate,
}
SUMMARIES = {
    "demographic_parity": (fm.demographic_parity_difference, fm.demographic_parity_ratio),
    "equal_opportunity": (fm.equal_opportunity_difference, fm.equal_opportunity_ratio),
    "equalized_odds": (fm.equalized_odds_difference, fm.equalized_odds_ratio),
}
#: The rates each summary's ratio is the least of.
COMPONENTS = {
    "demographic_parity": ["selection_rate"],
    "equal_opportunity": ["tpr"],
    "equalized_odds": ["tpr", "fpr"],
}


@st.composite
def frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[int], bool]:
    """Days, slices, 0/1 labels, tied scores (0.5 among them), weights, chunk cuts."""
    n = draw(st.integers(2, 60))
    slices = draw(st.sampled_from([["a", "b"], ["a", "b", "c"], ["x", "y", "z", "w"]]))
    score = st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0]) | st.floats(0, 1)
    rate = draw(st.sampled_from([0.1, 0.5, 0.9]))
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, 1),
                st.sampled_from(slices),
                st.floats(0, 1).map(lambda u: int(u < rate)),
                score,
                st.sampled_from([0.5, 1.0, 3.0]) | st.floats(1e-3, 10),
            ),
            min_size=n,
            max_size=n,
        )
    )
    day, s, y, p, w = (list(c) for c in zip(*rows, strict=True))
    weighted = draw(st.booleans())
    data: dict[str, Any] = {"day": day, "s": s, "y": y, "p": p}
    if weighted:
        data["w"] = w
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=3))) | {0, n})
    return pl.DataFrame(data, schema_overrides={"y": pl.Int64}), cuts, weighted


def _state(df: pl.DataFrame, cuts: list[int], weighted: bool) -> se.State:
    kw = {"label": "y", "score": "p", "by": ["day", "s"], "weight": "w" if weighted else None}
    parts = [df[a:b] for a, b in itertools.pairwise(cuts) if b > a]
    return se.merge([se.accumulate(part, **kw) for part in parts])


def _fairlearn_args(part: pl.DataFrame) -> dict[str, Any]:
    y = part["y"].to_numpy()
    pred = (part["p"].to_numpy() >= 0.5).astype(int)
    w = part["w"].to_numpy() if "w" in part.columns else None
    # (a list: fairlearn refuses a one-element array of strings as "too many dimensions")
    return {"y_true": y, "y_pred": pred, "sensitive_features": part["s"].to_list(), "w": w}


def _metric_frame(args: dict[str, Any]) -> Any:
    """fairlearn's ``MetricFrame`` of the rates, weighted (its warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fm.MetricFrame(
            metrics=RATES,
            y_true=args["y_true"],
            y_pred=args["y_pred"],
            sensitive_features=args["sensitive_features"],
            sample_params={k: {"sample_weight": args["w"]} for k in RATES},
        )


def _same(got: float | None, want: float) -> bool:
    if got is None or want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None and (want is None or math.isnan(want))
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def _defined_everywhere(part: pl.DataFrame) -> bool:
    """Every slice has weight of both classes (fairlearn's rates are then all defined)."""
    w = part["w"] if "w" in part.columns else pl.lit(1.0)
    sums = part.with_columns(w=w).group_by("s", "y").agg(pl.col("w").sum())
    return sums.height == 2 * part["s"].n_unique() and bool((sums["w"] > 0).all())


@settings(max_examples=40, deadline=None)
@given(frames())
def test_each_slice_rate_is_fairlearns(drawn: Any) -> None:
    df, cuts, weighted = drawn
    got = _state(df, cuts, weighted).disparity("s")
    for (day,), part in df.partition_by("day", as_dict=True).items():
        args = _fairlearn_args(part)
        frame = _metric_frame(args).by_group
        mine = got.filter(pl.col("day") == day)
        for metric in RATES:
            for slice_, want in frame[metric].items():
                row = mine.filter((pl.col("s") == slice_) & (pl.col("metric") == metric))
                value = row["value"].item()
                # fairlearn gives 0 (or NaN) where a rate has no denominator; it is null here
                if row["support"].item() == 0:
                    assert value is None
                else:
                    assert _same(value, float(want)), (day, slice_, metric, value, want)


@settings(max_examples=40, deadline=None)
@given(frames(), st.sampled_from(["between_groups", "to_overall"]))
def test_the_summaries_are_fairlearns(drawn: Any, method: str) -> None:
    df, cuts, weighted = drawn
    got = _state(df, cuts, weighted).fairness("s", method=method)
    for (day,), part in df.partition_by("day", as_dict=True).items():
        if not _defined_everywhere(part):
            continue  # (fairlearn's summaries of an undefined rate: see the test below)
        args = _fairlearn_args(part)
        row = got.filter(pl.col("day") == day).row(0, named=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ratios = _metric_frame(args).ratio(method=method)
        for name, (difference, ratio) in SUMMARIES.items():
            call = {k: args[k] for k in ("y_true", "y_pred", "sensitive_features")}
            call |= {"method": method, "sample_weight": args["w"]}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = (difference(**call), ratio(**call))
            assert _same(row[f"{name}_difference"], float(want[0])), (name, row, want)
            if any(math.isnan(ratios[c]) for c in COMPONENTS[name]):
                # a rate 0 wherever it is compared: its ratio is 0/0, so the criterion's is
                # null (fairlearn's least of the ratios then depends on their order)
                assert row[f"{name}_ratio"] is None, (name, row)
                continue
            assert _same(row[f"{name}_ratio"], float(want[1])), (name, row, want)


def test_an_undefined_ratio_leaves_its_criterion_undefined() -> None:
    """Every TPR 0: their ratio is 0/0, so equal opportunity's and equalized odds' are null."""
    df = pl.DataFrame({"s": ["a", "a", "b", "b"], "y": [1, 0, 1, 0], "p": [0.0, 0.5, 0.1, 0.2]})
    row = se.accumulate(df, label="y", score="p", by="s").fairness("s").row(0, named=True)
    assert row["equal_opportunity_difference"] == 0.0
    assert row["equal_opportunity_ratio"] is None and row["equalized_odds_ratio"] is None
    args = {"sensitive_features": df["s"].to_numpy(), "method": "between_groups"}
    y, pred = df["y"].to_numpy(), (df["p"].to_numpy() >= 0.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(fm.equalized_odds_ratio(y, pred, **args))
    assert row["equalized_odds_difference"] == fm.equalized_odds_difference(y, pred, **args)


def test_intervals_of_one_comparison_are_statsmodels() -> None:
    """A fixed case (the property test's cases may hold no comparison with an interval)."""
    s = ["a"] * 50 + ["b"] * 40
    y = [1] * 30 + [0] * 20 + [1] * 25 + [0] * 15
    p = [0.9] * 24 + [0.1] * 6 + [0.7] * 5 + [0.2] * 15 + [0.8] * 15 + [0.3] * 10 + [0.6] * 9
    p += [0.4] * 6
    st_ = se.accumulate(pl.DataFrame({"s": s, "y": y, "p": p}), label="y", score="p", by="s")
    got = st_.disparity("s", reference="a", ci="clopper-pearson", level=0.9)
    row = got.filter((pl.col("s") == "b") & (pl.col("metric") == "tpr")).row(0, named=True)
    assert (row["value"], row["reference_value"]) == (15 / 25, 24 / 30)
    wilson = st_.disparity("s", reference="a", ci="wilson")
    row = wilson.filter((pl.col("s") == "b") & (pl.col("metric") == "tpr")).row(0, named=True)
    lo, hi = confint_proportions_2indep(15, 25, 24, 30, method="newcomb", compare="diff")
    assert row["difference_lo"] == pytest.approx(lo, rel=1e-12)
    assert row["difference_hi"] == pytest.approx(hi, rel=1e-12)


def test_a_slice_without_positives_has_no_tpr_and_is_left_out() -> None:
    df = pl.DataFrame(
        {"s": ["a", "a", "b", "b", "c"], "y": [1, 0, 1, 0, 0], "p": [0.9, 0.1, 0.4, 0.8, 0.7]}
    )
    st_ = se.accumulate(df, label="y", score="p", by="s")
    tpr = st_.disparity("s").filter(pl.col("metric") == "tpr")
    assert tpr["value"].to_list() == [1.0, 0.0, None]
    row = st_.fairness("s").row(0, named=True)
    assert row["equal_opportunity_difference"] == 1.0 and row["equal_opportunity_ratio"] == 0.0


@settings(max_examples=40, deadline=None)
@given(frames(), st.sampled_from(["best", "a"]))
def test_the_difference_interval_is_newcombes(drawn: Any, reference: str) -> None:
    df, cuts, weighted = drawn
    if reference not in df["s"].to_list():
        reference = "best"
    got = _state(df, cuts, weighted).disparity("s", reference=reference, ci="wilson", level=0.9)
    for row in got.filter(pl.col("difference_lo").is_not_null()).iter_rows(named=True):
        ref = got.filter(
            (pl.col("day") == row["day"])
            & (pl.col("metric") == row["metric"])
            & (pl.col("s") == row["reference_slice"])
        ).row(0, named=True)
        x1, n1 = row["value"] * row["support"], row["support"]
        x2, n2 = ref["value"] * ref["support"], ref["support"]
        lo, hi = confint_proportions_2indep(
            x1, n1, x2, n2, method="newcomb", compare="diff", alpha=0.1
        )
        assert math.isclose(row["difference_lo"], lo, rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(row["difference_hi"], hi, rel_tol=1e-9, abs_tol=1e-12)
        assert row["difference_lo"] <= row["difference"] <= row["difference_hi"]
        if row["ratio"] is not None and row["ratio_lo"] is not None:
            assert row["ratio_lo"] <= row["ratio"] * (1 + 1e-12)
            assert row["ratio"] <= row["ratio_hi"] * (1 + 1e-12)


def test_the_ratio_interval_is_near_the_log_interval_for_large_counts() -> None:
    """Donner and Zou's ratio interval and Katz's log interval agree for large counts."""
    rng = np.random.default_rng(5)
    n = 20_000
    s = rng.choice(["a", "b"], n)
    y = rng.random(n) < 0.5
    p = np.where(s == "a", rng.random(n) * 0.9, rng.random(n))
    df = pl.DataFrame({"s": s, "y": y.astype(int), "p": p})
    got = se.accumulate(df, label="y", score="p", by="s").disparity("s", reference="a", ci="wilson")
    row = got.filter((pl.col("s") == "b") & (pl.col("metric") == "selection_rate")).row(
        0, named=True
    )
    ref = got.filter((pl.col("s") == "a") & (pl.col("metric") == "selection_rate")).row(
        0, named=True
    )
    lo, hi = confint_proportions_2indep(
        row["value"] * row["support"],
        row["support"],
        ref["value"] * ref["support"],
        ref["support"],
        method="log",
        compare="ratio",
    )
    assert row["ratio_lo"] == pytest.approx(lo, rel=2e-3)
    assert row["ratio_hi"] == pytest.approx(hi, rel=2e-3)


def test_references_best_overall_and_a_slice() -> None:
    df = pl.DataFrame(
        {
            "day": [1] * 6 + [2] * 4,
            "s": ["a", "a", "a", "b", "b", "b", "a", "a", "b", "b"],
            "y": [1, 1, 0, 1, 0, 0, 1, 0, 1, 0],
            "p": [0.9, 0.8, 0.2, 0.1, 0.9, 0.2, 0.9, 0.9, 0.9, 0.1],
        }
    )
    st_ = se.accumulate(df, label="y", score="p", by=["day", "s"])
    best = st_.disparity("s").filter(pl.col("metric") == "fpr")
    assert best["reference_slice"].to_list() == ["a", "a", "b", "b"]  # the lowest FPR
    overall = st_.disparity("s", reference="overall").filter(pl.col("metric") == "tpr")
    assert overall["reference_value"].to_list() == [2 / 3, 2 / 3, 1.0, 1.0]
    assert overall["reference_slice"].null_count() == 4
    named = st_.disparity("s", reference="b").filter(pl.col("metric") == "selection_rate")
    assert named["difference"].to_list() == pytest.approx([2 / 3 - 1 / 3, 0.0, 0.5, 0.0])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.disparity("nope"), "sensitive column 'nope' among the state's keys"),
        (lambda s: s.disparity("s", reference="zzz"), "not among its values"),
        (lambda s: s.disparity("s", reference="overall", ci="wilson"), "not independent"),
        (lambda s: s.disparity("s", ci="bayes"), "expected ci to be one of"),
        (lambda s: s.disparity("s", threshold=[0.3, 0.5]), "expected one threshold"),
        (lambda s: s.fairness("s", method="pairs"), "between_groups, to_overall"),
    ],
)
def test_mistakes_are_named(call: Any, match: str) -> None:
    df = pl.DataFrame({"s": ["a", "b"], "y": [1, 0], "p": [0.9, 0.1]})
    with pytest.raises(InputError, match=match):
        call(se.accumulate(df, label="y", score="p", by="s"))


def test_a_state_of_another_task_is_refused() -> None:
    df = pl.DataFrame({"s": ["a", "b"], "y": [1.0, 2.0], "f": [1.5, 2.5]})
    state = se.accumulate(df, task="regression", label="y", prediction="f", by="s")
    with pytest.raises(InputError, match="expected a binary state for disparity"):
        state.disparity("s")


def test_the_command_line_tables(tmp_path, capsys) -> None:
    """In this process (the command line's own start-up is tested elsewhere)."""
    rng = np.random.default_rng(7)
    n = 600
    df = pl.DataFrame(
        {
            "day": rng.integers(1, 3, n),
            "band": rng.integers(0, 3, n),
            "y": rng.integers(0, 2, n),
            "p": np.round(rng.random(n), 2),
        }
    )
    path = tmp_path / "log.parquet"
    df.write_parquet(path)
    state = se.accumulate(df, label="y", score="p", by=["day", "band"])
    base = ["evaluate", str(path), "--label", "y", "--score", "p", "--by", "day", "--by", "band"]

    def run(*extra: str) -> tuple[int, str]:
        capsys.readouterr()
        status = main([*base, *extra])
        return status, capsys.readouterr().err

    done = run("--table", "disparity", "--sensitive", "band", "--reference", "2", "--ci",
               "wilson", "--output", str(tmp_path / "d.parquet"))  # fmt: skip
    assert done[0] == 0, done[1]
    want = state.disparity("band", reference=2, ci="wilson")
    got = pl.read_parquet(tmp_path / "d.parquet")
    assert got.sort("day", "metric", "band").equals(want.sort("day", "metric", "band"))
    done = run("--table", "fairness", "--sensitive", "band", "--method", "to_overall",
               "--output", str(tmp_path / "f.parquet"))  # fmt: skip
    assert done[0] == 0, done[1]
    got = pl.read_parquet(tmp_path / "f.parquet")
    assert got.equals(state.fairness("band", method="to_overall"))
    disparity = ["--table", "disparity", "--sensitive", "band"]
    for extra, message in [
        (["--table", "disparity"], "expected --sensitive to name a --by key"),
        (["--table", "fairness", "--sensitive", "band", "--reference", "2"], "--reference only"),
        ([*disparity, "--ci", "bootstrap"], "wilson or"),
        (["--sensitive", "band"], "--sensitive only with --table disparity"),
        (["--table", "fairness", "--sensitive", "band", "--ci", "wilson"], "no --ci with"),
        ([*disparity, "--reference", "overall", "--ci", "wilson"], "a reference slice with --ci"),
    ]:
        status, err = run(*extra)
        assert status == 2 and message in err, err
        assert "Traceback" not in err
