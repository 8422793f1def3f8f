"""Score drift (``State.drift``) against direct computation on the raw scores.

Random chunked, weighted, tied input in two periods (a baseline and a current one), several
groups, exact and bucketed states: each state is accumulated per chunk and merged. The
reference bins the raw scores at the baseline's quantile edges (the lowest score with at
least ``i/k`` of the baseline's weight below it; in a bucketed state the scores' bucket
edges), and computes the PSI by its formula, the Jensen–Shannon distance with scipy and the
KS statistic with scipy's ``ks_2samp`` (unweighted) or the weighted empirical distributions.
"""

from __future__ import annotations

import math
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy.spatial.distance import jensenshannon
from scipy.stats import ks_2samp
from test_checks import START, checks_table, job

import streameval as se
from streameval.bucketing import bucket_expr, key_to_float
from streameval.cli import main
from streameval.errors import InputError
from streameval.jobs import run_job
from streameval.jobs.config import load_job
from streameval.jobs.tomlkeys import JobConfigError
from streameval.kernels.pooled import DayIndex
from streameval.stats.drift import PSI_FLOOR

TOL = 1e-9


@st.composite
def periods(draw: st.DrawFn) -> dict[str, Any]:
    """Two periods of rows: group, 0/1 label, tied scores, weights; chunk cuts; options."""
    groups = draw(st.sampled_from([["a"], ["a", "b"], ["a", "b", "c"]]))
    score = st.sampled_from([-1.5, 0.0, 0.25, 0.5, 0.75, 1.0, 3.0]) | st.floats(-4, 4)
    shift = draw(st.sampled_from([0.0, 0.3, 2.0]))

    def frame(n: int, moved: float) -> pl.DataFrame:
        rows = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(groups),
                    st.integers(0, 1),
                    score.map(lambda s: s + moved),
                    st.sampled_from([0.5, 1.0, 3.0]) | st.floats(1e-3, 10),
                ),
                min_size=n,
                max_size=n,
            )
        )
        g, y, p, w = zip(*rows, strict=True)
        return pl.DataFrame({"g": g, "y": y, "p": p, "w": w})

    return {
        "base": frame(draw(st.integers(1, 50)), 0.0),
        "cur": frame(draw(st.integers(1, 50)), shift),
        "cuts": draw(st.integers(1, 4)),
        "weighted": draw(st.booleans()),
        "precision": draw(st.sampled_from(["exact", 3, 6])),
        "bins": draw(st.sampled_from([2, 3, 5, 10])),
        "keyed_baseline": draw(st.booleans()),
    }


def chunked(df: pl.DataFrame, parts: int, **kwargs: Any) -> se.State:
    """The state of ``df`` accumulated in ``parts`` chunks and merged."""
    size = max(1, math.ceil(df.height / parts))
    chunks = [df.slice(i, size) for i in range(0, df.height, size)]
    return se.merge([se.accumulate(c, label="y", score="p", **kwargs) for c in chunks])


def values(df: pl.DataFrame, precision: Any, splits: tuple[float, ...]) -> np.ndarray:
    """The scores a state sees: the raw ones (exact), else their buckets' lower edges."""
    if precision == "exact":
        return df["p"].to_numpy().astype(float) + 0.0  # (-0.0 is 0.0)
    edge = key_to_float(bucket_expr(pl.col("p"), precision, splits))
    return df.select(edge).to_series().to_numpy()


def edges_of(x: np.ndarray, w: np.ndarray, bins: int) -> np.ndarray:
    """The baseline's bin edges: the lowest score with at least i/bins of the weight below."""
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    uniq, inverse = np.unique(x, return_inverse=True)
    mass = np.bincount(inverse, weights=w)
    keep = mass > 0
    uniq, mass = uniq[keep], mass[keep]
    below = np.cumsum(mass) - mass
    b = np.clip(np.floor(below * bins / mass.sum()), 0, bins - 1)
    first = np.r_[True, b[1:] != b[:-1]]
    return uniq[first]


def shares(x: np.ndarray, w: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each bin's share of the weight of scores ``x`` (bin i: edges[i] <= x < edges[i+1])."""
    index = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, None)
    total = np.bincount(index, weights=w, minlength=len(edges))
    return total / total.sum()


def weighted_ks(a: np.ndarray, wa: np.ndarray, b: np.ndarray, wb: np.ndarray) -> float:
    """The largest gap between two weighted empirical distributions."""
    points = np.unique(np.r_[a, b])
    fa = np.array([wa[a <= t].sum() for t in points]) / wa.sum()
    fb = np.array([wb[b <= t].sum() for t in points]) / wb.sum()
    return float(np.abs(fa - fb).max())


def expected(
    cur: pl.DataFrame, base: pl.DataFrame, bins: int, weighted: bool, precision: Any, splits: Any
) -> dict[str, float]:
    """PSI, JS distance and KS of the raw rows, binned at the baseline's quantile edges."""
    wc = cur["w"].to_numpy() if weighted else np.ones(cur.height)
    wb = base["w"].to_numpy() if weighted else np.ones(base.height)
    xc, xb = values(cur, precision, splits), values(base, precision, splits)
    edges = edges_of(xb, wb, bins)
    # the raw scores binned at the edges (a bucket edge: the raw ones fall as their buckets)
    c = shares(cur["p"].to_numpy(), wc, edges)
    b = shares(base["p"].to_numpy(), wb, edges)
    np.testing.assert_allclose(c, shares(xc, wc, edges), atol=1e-12)
    cf, bf = np.where(c > 0, c, PSI_FLOOR), np.where(b > 0, b, PSI_FLOOR)
    out = {
        "psi": float(((cf - bf) * np.log(cf / bf)).sum()),
        "js_distance": float(jensenshannon(c, b, base=2)),
        "bins": len(edges),
        # the KS of the scores the state sees (its buckets' edges), and of the raw scores
        "ks_seen": weighted_ks(xc, wc, xb, wb),
        "ks_raw": weighted_ks(cur["p"].to_numpy(), wc, base["p"].to_numpy(), wb),
    }
    if not weighted and precision == "exact":
        out["ks_scipy"] = float(ks_2samp(cur["p"].to_numpy(), base["p"].to_numpy()).statistic)
    return out


@settings(max_examples=60, deadline=None)
@given(periods())
def test_drift_matches_direct_computation(case: dict[str, Any]) -> None:
    weighted, precision, bins = case["weighted"], case["precision"], case["bins"]
    kwargs: dict[str, Any] = {"precision": precision, "weight": "w" if weighted else None}
    cur = chunked(case["cur"], case["cuts"], by="g", **kwargs)
    by = "g" if case["keyed_baseline"] else None
    base = chunked(case["base"], case["cuts"], by=by, **kwargs)
    table = cur.drift(base, bins=bins)
    assert table["g"].to_list() == sorted(case["cur"]["g"].unique().to_list())
    for row in table.iter_rows(named=True):
        mine = case["cur"].filter(pl.col("g") == row["g"])
        theirs = case["base"]
        if by is not None:
            theirs = theirs.filter(pl.col("g") == row["g"])
        assert row["n"] == mine.height
        if theirs.height == 0:
            assert row["baseline_n"] is None and row["psi"] is None and row["ks_statistic"] is None
            continue
        assert row["baseline_n"] == theirs.height
        want = expected(mine, theirs, bins, weighted, precision, cur.spec.splits)
        assert row["bins"] == want["bins"]
        assert row["psi"] == pytest.approx(want["psi"], abs=TOL, rel=TOL)
        # (near 0, a square root magnifies rounding: the divergence is compared)
        assert row["js_distance"] ** 2 == pytest.approx(want["js_distance"] ** 2, abs=TOL)
        assert row["ks_statistic"] == pytest.approx(want["ks_seen"], abs=TOL)
        # the raw scores' KS lies within the stated bound
        assert (
            row["ks_statistic"] - TOL
            <= want["ks_raw"]
            <= row["ks_statistic"] + row["ks_bound"] + TOL
        )
        if precision == "exact":
            assert row["ks_bound"] == 0.0
            assert row["ks_statistic"] == pytest.approx(want["ks_raw"], abs=TOL)
        if "ks_scipy" in want:
            assert row["ks_statistic"] == pytest.approx(want["ks_scipy"], abs=TOL)


def test_identical_periods_do_not_drift() -> None:
    rng = np.random.default_rng(1)
    df = pl.DataFrame({"y": rng.integers(0, 2, 5000), "p": rng.random(5000)})
    state = se.accumulate(df, label="y", score="p")
    row = state.drift(state).row(0, named=True)
    assert row["psi"] == pytest.approx(0.0, abs=1e-15)
    assert row["js_distance"] == pytest.approx(0.0, abs=1e-7)
    assert row["ks_statistic"] == pytest.approx(0.0, abs=1e-15)
    assert row["bins"] == 10


def test_the_ks_statistic_alone_is_the_same_without_bins() -> None:
    """Asked for the KS statistic alone, drift forms no bins (a walk without their edges):
    the same KS statistic and bound, the PSI, JS distance and bins null."""
    from streameval.state import drift_table

    rng = np.random.default_rng(4)
    frames = [
        pl.DataFrame(
            {"g": rng.integers(0, 4, 8000), "y": rng.integers(0, 2, 8000), "p": rng.random(8000)}
        ).with_columns(pl.col("p") + shift * pl.col("g"))
        for shift in (0.0, 0.1)
    ]
    ref, cur = (se.accumulate(f, label="y", score="p", by="g", precision=8) for f in frames)
    every = drift_table(cur, ref, 10, every=True)
    alone = drift_table(cur, ref, 10, every=True, measures=["ks_statistic"])
    keep = ["g", "n", "baseline_n", "ks_statistic", "ks_bound"]
    assert_frame_equal(alone.select(keep), every.select(keep))
    assert alone.select("psi", "js_distance", "bins").null_count().row(0) == (4, 4, 4)
    assert every["ks_statistic"].drop_nulls().len() == 4 and every["ks_bound"].max() > 0


def test_a_shift_is_seen_and_grows() -> None:
    rng = np.random.default_rng(2)
    base = pl.DataFrame({"y": rng.integers(0, 2, 20_000), "p": rng.normal(0, 1, 20_000)})
    ref = se.accumulate(base, label="y", score="p")
    found = []
    for shift in (0.0, 0.1, 0.5, 1.0):
        moved = base.with_columns(pl.col("p") + shift, g=pl.lit(shift))
        cur = se.accumulate(moved, label="y", score="p", by="g")
        found.append(cur.drift(ref).row(0, named=True))
    psi = [r["psi"] for r in found]
    ks = [r["ks_statistic"] for r in found]
    assert psi == sorted(psi) and ks == sorted(ks)
    assert psi[0] < 1e-6 and psi[-1] > 0.5
    # a shift of one sd: the KS of two unit normals is 2Φ(0.5) − 1 ≈ 0.383
    assert ks[-1] == pytest.approx(0.383, abs=0.02)


def test_paired_state_drifts_per_model() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    df = pl.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "y": rng.integers(0, 2, n),
            "s1": rng.random(n),
            "s2": rng.random(n) ** 2,
        }
    )
    early, late = df[: n // 2], df[n // 2 :].with_columns(pl.col("s1") * 0.8)
    paired = {"task": "paired", "label": "y", "scores": ["s1", "s2"], "by": "g"}
    table = se.accumulate(late, **paired).drift(se.accumulate(early, **paired))
    assert table.select("g", "model").rows() == [("a", "s1"), ("a", "s2"), ("b", "s1"), ("b", "s2")]
    for model in ("s1", "s2"):
        one = {"label": "y", "score": model, "by": "g"}
        want = se.accumulate(late, **one).drift(se.accumulate(early, **one))
        got = table.filter(pl.col("model") == model).drop("model")
        assert_frame_equal(got, want, rel_tol=1e-12, abs_tol=1e-15)


def test_replicates_do_not_count() -> None:
    rng = np.random.default_rng(4)
    df = pl.DataFrame({"y": rng.integers(0, 2, 2000), "p": rng.random(2000)})
    plain = se.accumulate(df[:1000], label="y", score="p")
    ref = se.accumulate(df[1000:], label="y", score="p")
    boot = se.accumulate(df[:1000], label="y", score="p", bootstrap=20)
    assert_frame_equal(boot.drift(ref), plain.drift(ref), rel_tol=1e-12, abs_tol=1e-15)


def test_groups_without_baseline_or_weight_are_null() -> None:
    df = pl.DataFrame(
        {"g": ["a", "a", "b", "c"], "y": [0, 1, 0, 1], "p": [0.1, 0.9, 0.4, 0.6],
         "w": [1.0, 1.0, 1.0, 0.0]}
    )  # fmt: skip
    ref = se.accumulate(df.filter(pl.col("g") != "b"), label="y", score="p", by="g", weight="w")
    cur = se.accumulate(df, label="y", score="p", by="g", weight="w")
    table = cur.drift(ref)
    a, b, c = table.rows(named=True)
    assert a["psi"] == pytest.approx(0.0, abs=1e-15) and a["baseline_n"] == 2
    assert b["baseline_n"] is None and b["psi"] is None  # no baseline
    assert c["n"] == 1 and c["psi"] is None and c["bins"] is None  # no weight


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"precision": 8}, "same score buckets"),
        ({"thresholds": 0.3}, "same score buckets"),
        ({"by": "h"}, "keys among"),
        ({"task": "regression"}, "expected a binary baseline"),
    ],
)
def test_incomparable_baselines_are_refused(change: dict[str, Any], message: str) -> None:
    df = pl.DataFrame({"g": ["a", "b"], "h": [1, 2], "y": [0, 1], "p": [0.2, 0.7]})
    cur = se.accumulate(df, label="y", score="p", by="g")
    kwargs: dict[str, Any] = {"label": "y", "score": "p", **change}
    if change.get("task") == "regression":
        kwargs = {"label": "y", "prediction": "p", "task": "regression"}
    with pytest.raises(InputError, match=message):
        cur.drift(se.accumulate(df, **kwargs))


def test_bad_arguments_are_refused() -> None:
    df = pl.DataFrame({"y": [0, 1], "p": [0.2, 0.7]})
    state = se.accumulate(df, label="y", score="p")
    for bins in (1, 0, 2.5, True, 10_001):
        with pytest.raises(InputError, match="bins"):
            state.drift(state, bins=bins)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="expected a State"):
        state.drift(df)  # type: ignore[arg-type]
    reg = se.accumulate(df, label="y", prediction="p", task="regression")
    with pytest.raises(InputError, match="binary or paired state for drift"):
        reg.drift(reg)


def test_ks_bound_covers_what_a_bucket_hides() -> None:
    # at 3 bits [2, 2.25) is one bucket: the periods cannot be told apart there, though
    # every current score is above every baseline score
    base = pl.DataFrame({"y": [0, 1] * 5, "p": [2.0 + i / 1000 for i in range(10)]})
    cur = base.with_columns(pl.col("p") + 0.05)
    kwargs: dict[str, Any] = {"label": "y", "score": "p", "precision": 3}
    row = se.accumulate(cur, **kwargs).drift(se.accumulate(base, **kwargs)).row(0, named=True)
    raw = ks_2samp(cur["p"].to_numpy(), base["p"].to_numpy()).statistic
    assert (row["ks_statistic"], row["ks_bound"], raw) == (0.0, 1.0, 1.0)
    assert row["psi"] == 0.0 and row["bins"] == 1
    exact = se.accumulate(cur, label="y", score="p", precision="exact")
    row = exact.drift(se.accumulate(base, label="y", score="p", precision="exact"))
    assert row["ks_statistic"].item() == 1.0 and row["ks_bound"].item() == 0.0


# -- drift checks in a job -------------------------------------------------------------------


def drifting_days(root: Path, days: int, shifts: dict[tuple[int, str], float]) -> pl.DataFrame:
    """Days of scores per segment under ``root/preds/day=…``; ``shifts`` move some logits."""
    frames = []
    for d in range(days):
        rng = np.random.default_rng([11, d])
        seg = np.repeat(["a", "b", "c"], 300)
        y = (rng.random(seg.size) < 0.3).astype(np.int8)
        logit = y + rng.normal(0, 1, seg.size) + np.array([shifts.get((d, s), 0) for s in seg])
        score = np.round(1 / (1 + np.exp(-logit)), 3)
        frame = pl.DataFrame({"segment": seg, "label": y, "score": score, "other": score**2})
        day = START + timedelta(days=d)
        folder = root / "preds" / f"day={day.isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(folder / "part-0.parquet")
        frames.append(frame.with_columns(pl.lit(day).alias("day")))
    return pl.concat(frames)


def psi_of(rows: pl.DataFrame, base: pl.DataFrame, score: str = "score") -> float:
    """The PSI of two sets of rows through State.drift (its own test: the hypothesis one)."""
    now = se.accumulate(rows, label="label", score=score)
    return float(now.drift(se.accumulate(base, label="label", score=score))["psi"].item())


def on_day(rows: pl.DataFrame, days: list[int], segment: str | None = None) -> pl.DataFrame:
    wanted = rows.filter(pl.col("day").is_in([START + timedelta(days=d) for d in days]))
    return wanted if segment is None else wanted.filter(pl.col("segment") == segment)


def test_a_drift_check_flags_the_moved_segment_against_the_previous_day(tmp_path: Path) -> None:
    rows = drifting_days(tmp_path, 4, {(2, "c"): 1.5, (3, "c"): 1.5})
    checks = '[[checks]]\nmetric = "psi"\nmax = 0.2\nbaseline = "previous"\nmin_n = 100\n'
    report = run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path)
    failed = got.filter(pl.col("status") == "fail").select("day", "segment").rows()
    assert failed == [(START + timedelta(days=2), "c")]  # day 3 is like day 2
    assert report.checks_failed == 1
    assert got.filter(pl.col("day") == START)["status"].unique().to_list() == ["no_baseline"]
    for row in got.filter(pl.col("day") > START).iter_rows(named=True):
        d = (row["day"] - START).days
        mine, theirs = on_day(rows, [d], row["segment"]), on_day(rows, [d - 1], row["segment"])
        assert row["value"] == pytest.approx(psi_of(mine, theirs), abs=1e-12)
        assert (row["n"], row["baseline_n"]) == (mine.height, theirs.height)
        assert row["baseline"] is None and row["difference"] is None and row["p_value"] is None
        assert row["metric"] == "psi" and row["baseline_kind"] == "previous"
    bad = got.filter(pl.col("status") == "fail").row(0, named=True)
    assert bad["reason"].startswith("psi ") and "> max 0.2" in bad["reason"]


def test_a_drift_history_leaves_out_the_days_it_failed(tmp_path: Path) -> None:
    rows = drifting_days(tmp_path, 6, {(3, "c"): 2.0})
    checks = (
        '[[checks]]\nmetric = "ks_statistic"\nmax = 0.15\nbaseline = "history"\ndays = 3\n'
        '[[checks]]\nname = "js"\nmetric = "js_distance"\nmax = 1\nbaseline = "history"\n'
        "days = 3\nbins = 4\n"
    )
    run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path)
    ks = got.filter(pl.col("check") == "ks_statistic 1d")
    assert ks.filter(pl.col("status") == "fail").select("day", "segment").rows() == [
        (START + timedelta(days=3), "c")
    ]
    day4 = ks.filter(pl.col("day") == START + timedelta(days=4))
    for seg, days in (("c", [1, 2]), ("a", [1, 2, 3])):
        base = se.accumulate(on_day(rows, days, seg), label="label", score="score")
        now = se.accumulate(on_day(rows, [4], seg), label="label", score="score")
        row = day4.filter(pl.col("segment") == seg).row(0, named=True)
        want = now.drift(base).row(0, named=True)
        assert row["value"] == pytest.approx(want["ks_statistic"], abs=1e-12)
        assert row["baseline_n"] == base.table["pos"].sum() + base.table["neg"].sum()
    js = got.filter(pl.col("check") == "js", pl.col("day") == START + timedelta(days=4))
    base = se.accumulate(on_day(rows, [1, 2, 3], "a"), label="label", score="score")
    now = se.accumulate(on_day(rows, [4], "a"), label="label", score="score")
    want = now.drift(base, bins=4)["js_distance"].item()
    assert js.filter(pl.col("segment") == "a")["value"].item() == pytest.approx(want, abs=1e-12)


def test_a_reference_without_keys_is_every_segments_baseline(tmp_path: Path) -> None:
    rows = drifting_days(tmp_path, 2, {(1, "b"): -2.0})
    reference = on_day(rows, [0])
    se.accumulate(reference, label="label", score="score").write(tmp_path / "ref.parquet")
    checks = (
        '[[checks]]\nmetric = "psi"\nmax = 0.25\nbaseline = "reference"\n'
        'reference = "ref.parquet"\nwhere = { segment = ["a", "b"] }\n'
    )
    run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path).filter(pl.col("day") == START + timedelta(days=1))
    assert got["segment"].to_list() == ["a", "b"]
    assert got["status"].to_list() == ["pass", "fail"]
    for row in got.iter_rows(named=True):
        want = psi_of(on_day(rows, [1], row["segment"]), reference)
        assert row["value"] == pytest.approx(want, abs=1e-12)
        assert row["baseline_n"] == reference.height


def test_a_paired_task_drifts_per_model_and_a_stopped_segment_is_no_data(tmp_path: Path) -> None:
    rows = drifting_days(tmp_path, 3, {(2, "a"): 1.0})
    gone = tmp_path / "preds" / f"day={(START + timedelta(days=2)).isoformat()}"
    on_day(rows, [2]).filter(pl.col("segment") != "b").drop("day").write_parquet(
        gone / "part-0.parquet"
    )
    task = 'kind = "paired"\nlabel = "label"\nscores = ["score", "other"]'
    checks = (
        '[[checks]]\nmetric = "psi"\nmodel = "other"\nmax = 0.2\nbaseline = "previous"\n'
        "min_n = 10\n"
    )
    run_job(job(tmp_path, checks, task=task), quiet=True)
    got = checks_table(tmp_path).filter(pl.col("day") == START + timedelta(days=2))
    assert got.select("segment", "model", "status").rows() == [
        ("a", "other", "fail"),
        ("b", "other", "no_data"),
        ("c", "other", "pass"),
    ]
    row = got.row(0, named=True)
    want = psi_of(on_day(rows, [2], "a"), on_day(rows, [1], "a"), score="other")
    assert row["value"] == pytest.approx(want, abs=1e-12)
    assert got.row(1, named=True)["n"] is None and got.row(1, named=True)["baseline_n"] == 300


def test_drift_beside_metric_checks_and_checks_only(tmp_path: Path) -> None:
    drifting_days(tmp_path, 3, {(2, "c"): 2.0})
    checks = (
        '[[checks]]\nmetric = "roc_auc"\nmin = 0.5\n'
        '[[checks]]\nmetric = "psi"\nmax = 0.2\nbaseline = "previous"\nseverity = "warn"\n'
    )
    path = job(tmp_path, checks, checking='report = "report.html"')
    report = run_job(path, quiet=True)
    got = checks_table(tmp_path)
    assert report.checks_failed == 0
    page = (tmp_path / "report.html").read_text()
    assert "psi 1d" in page and "warn: 1" in page.replace("</span>", "").replace("<span>", "")
    assert got.filter(pl.col("status") == "warn").select("segment").rows() == [("c",)]
    assert set(got.filter(pl.col("check") == "roc_auc 1d")["status"]) == {"pass"}
    assert main(["run", str(path), "--checks-only", "--quiet"]) == 0
    assert_frame_equal(checks_table(tmp_path), got)


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ('metric = "psi"\nmax_drop = 0.1\nbaseline = "previous"', "measures a change"),
        ('metric = "psi"\nmax = 0.2', "expected 'previous', 'history' or 'reference'"),
        ('metric = "psi"\nbaseline = "previous"', "needs max (or min)"),
        ('metric = "psi"\nmax = 0.2\nbaseline = "previous"\nsignificance = 0.05', "its size"),
        ('metric = "psi"\nmax = 0.2\nbaseline = "previous"\nthreshold = 0.5', "not score drift"),
        ('metric = "psi"\nmax = 0.2\nbaseline = "previous"\nmin_positives = 5', "use min_n"),
        ('metric = "roc_auc"\nmin = 0.5\nbins = 5', "applies to score drift"),
        ('metric = "psi"\nmax = 0.2\nbaseline = "previous"\nbins = 1', "2 to 10000 bins"),
        ('metric = "pis"\nmax = 0.2', "did you mean 'psi'"),
    ],
)
def test_mistakes_in_drift_checks_are_named(tmp_path: Path, check: str, message: str) -> None:
    path = job(tmp_path, f"[[checks]]\n{check}\n")
    with pytest.raises(JobConfigError) as info:
        load_job(path)
    assert message in str(info.value)


def test_drift_is_refused_for_tasks_without_a_score_histogram(tmp_path: Path) -> None:
    task = 'kind = "regression"\nlabel = "label"\nprediction = "score"'
    path = job(tmp_path, '[[checks]]\nmetric = "psi"\nmax = 0.2\nbaseline = "previous"\n', task)
    with pytest.raises(JobConfigError, match="expected one of"):
        load_job(path)


# -- the command line ------------------------------------------------------------------------


def test_the_drift_table_from_the_command_line(tmp_path: Path, capsys: Any) -> None:
    rows = drifting_days(tmp_path, 2, {(1, "b"): 1.0})
    old, new = tmp_path / "old.parquet", tmp_path / "new.parquet"
    on_day(rows, [0]).drop("day").write_parquet(old)
    on_day(rows, [1]).drop("day").with_row_index("hour").with_columns(
        pl.col("hour") % 2
    ).write_parquet(new)
    options = {"label": "label", "score": "score"}
    state = se.accumulate(new, by="segment", **options)
    common = ["evaluate", str(new), "--label", "label", "--score", "score", "--by", "segment"]
    # predictions as the baseline, grouped as the data: each segment against its own
    out = tmp_path / "drift.parquet"
    assert main([*common, "--table", "drift", "--against", str(old), "--output", str(out)]) == 0
    want = state.drift(se.accumulate(old, by="segment", **options))
    assert_frame_equal(pl.read_parquet(out), want)
    # a state file as the baseline (verified as read_state does), without keys: every segment's
    se.accumulate(old, **options).write(tmp_path / "ref.parquet")
    args = ["--table", "drift", "--against", str(tmp_path / "ref.parquet"), "--bins", "4"]
    assert main([*common, *args, "--output", str(out)]) == 0
    assert_frame_equal(pl.read_parquet(out), state.drift(se.accumulate(old, **options), bins=4))
    # --against-by: predictions grouped by fewer keys
    args = ["--table", "drift", "--against", str(old), "--against-by", "segment"]
    assert main([*common, "--by", "hour", *args, "--output", str(out)]) == 0
    got = pl.read_parquet(out)
    both = se.accumulate(new, by=["segment", "hour"], **options)
    assert_frame_equal(got, both.drift(se.accumulate(old, by="segment", **options)))
    assert got.columns[:2] == ["segment", "hour"] and got.height == 6
    capsys.readouterr()
    # rows whose label has not arrived count in the scores
    pending = tmp_path / "pending.parquet"
    on_day(rows, [1]).drop("day").with_columns(pl.lit(None, pl.Int64).alias("label")).write_parquet(
        pending
    )
    args = ["--table", "drift", "--against", str(old), "--output", str(out)]
    assert main(["evaluate", str(pending), *common[2:], *args]) == 0
    every = se.accumulate(on_day(rows, [1]).drop("day"), by="segment", **options)
    assert_frame_equal(
        pl.read_parquet(out), every.drift(se.accumulate(old, by="segment", **options))
    )
    capsys.readouterr()
    state_file = str(tmp_path / "ref.parquet")
    for wrong, message in (
        (
            ["--table", "drift", "--against", state_file, "--against-by", "segment"],
            "with predictions",
        ),
        (["--table", "drift"], "expected --against with --table drift"),
        (["--against", str(old)], "expected --against only with --table drift"),
        (["--table", "drift", "--against", str(old), "--bins", "1"], "--bins from 2"),
        (["--table", "drift", "--against", str(old), "--ci", "wilson"], "--ci"),
        (["--table", "drift", "--against", str(old), "--against-by", "day"], "among the --by"),
    ):
        assert main([*common, *wrong]) == 2
        assert message in capsys.readouterr().err


# -- keys -------------------------------------------------------------------------------------


def test_null_keys_and_keys_named_like_internal_columns() -> None:
    rng = np.random.default_rng(5)
    n = 600
    df = pl.DataFrame(
        {
            "g": pl.Series(rng.choice(["x", "y"], n)).scatter(list(range(0, n, 4)), None),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    base = se.accumulate(df[:300], label="y", score="p", by="g")
    cur = se.accumulate(df[300:], label="y", score="p", by="g")
    table = cur.drift(base)
    assert table["g"].to_list() == [None, "x", "y"]
    for row in table.iter_rows(named=True):
        key = pl.col("g").is_null() if row["g"] is None else pl.col("g") == row["g"]
        mine, theirs = df[300:].filter(key), df[:300].filter(key)
        one = se.accumulate(mine, label="y", score="p").drift(
            se.accumulate(theirs, label="y", score="p")
        )
        assert row["psi"] == pytest.approx(one["psi"].item(), abs=1e-12)
        assert row["ks_statistic"] == pytest.approx(one["ks_statistic"].item(), abs=1e-12)
    # keys named as the computation's own columns work; as the table's columns, are refused
    for name in ("c", "b", "bin", "mass", "rows", "fc", "fb", "one", "model"):
        renamed = df.rename({"g": name})
        state = se.accumulate(renamed, label="y", score="p", by=name)
        assert state.drift(state).height == 3
    for name in ("psi", "bins", "baseline_n", "ks_bound"):
        state = se.accumulate(df.rename({"g": name}), label="y", score="p", by=name)
        with pytest.raises(InputError, match="other than the drift table's columns"):
            state.drift(state)


def test_a_shared_baseline_is_read_once_for_many_groups() -> None:
    # a keyless exact baseline for many groups: each group's KS against a direct computation
    rng = np.random.default_rng(6)
    base = pl.DataFrame({"y": rng.integers(0, 2, 5000), "p": rng.random(5000)})
    cur = pl.DataFrame(
        {"g": rng.integers(0, 200, 4000), "y": rng.integers(0, 2, 4000), "p": rng.random(4000)}
    )
    kwargs: dict[str, Any] = {"label": "y", "score": "p", "precision": "exact"}
    table = se.accumulate(cur, by="g", **kwargs).drift(se.accumulate(base, **kwargs))
    assert table.height == 200
    for row in table.sample(20, seed=1).iter_rows(named=True):
        mine = cur.filter(pl.col("g") == row["g"])["p"].to_numpy()
        want = ks_2samp(mine, base["p"].to_numpy()).statistic
        assert row["ks_statistic"] == pytest.approx(want, abs=1e-12)


def test_a_binary_job_grouped_by_a_key_named_model(tmp_path: Path) -> None:
    rows = drifting_days(tmp_path, 2, {(1, "c"): 2.0})
    for folder in (tmp_path / "preds").iterdir():
        frame = pl.read_parquet(folder / "part-0.parquet")
        frame.rename({"segment": "model"}).write_parquet(folder / "part-0.parquet")
    path = tmp_path / "job.toml"
    path.write_text(
        job(
            tmp_path,
            '[[checks]]\nmetric = "psi"\nmax = 0.2\nbaseline = "previous"\n'
            '[[checks]]\nmetric = "roc_auc"\nmin = 0.5\n',
        )
        .read_text()
        .replace('by = ["segment"]', 'by = ["model"]')
    )
    run_job(path, quiet=True)
    got = pl.read_parquet(tmp_path / "checks" / "**" / "*.parquet").sort("day", "model")
    assert set(got.filter(pl.col("check") == "roc_auc 1d")["status"]) == {"pass"}
    got = got.filter(pl.col("check") == "psi 1d")
    last = got.filter(pl.col("day") == START + timedelta(days=1))
    assert last.select("model", "status").rows() == [("a", "pass"), ("b", "pass"), ("c", "fail")]
    want = psi_of(on_day(rows, [1], "c"), on_day(rows, [0], "c"))
    assert last["value"][2] == pytest.approx(want, abs=1e-12)


def test_a_reference_of_other_buckets_names_the_check(tmp_path: Path) -> None:
    rows = drifting_days(tmp_path, 2, {})
    ref = se.accumulate(on_day(rows, [0]), label="label", score="score", precision=6)
    ref.write(tmp_path / "ref.parquet")
    checks = (
        '[[checks]]\nname = "psi ref"\nmetric = "psi"\nmax = 0.2\nbaseline = "reference"\n'
        'reference = "ref.parquet"\n'
    )
    with pytest.raises(
        InputError, match="check 'psi ref': expected a baseline state with the same"
    ):
        run_job(job(tmp_path, checks), quiet=True)


@pytest.mark.parametrize("keys", ["string", "int32", "none"])
def test_drift_checks_read_the_pools_as_they_would_merge(
    tmp_path: Path, monkeypatch: Any, keys: str
) -> None:
    """Drift against the previous window or a history reads both score histograms from the
    sliding pools' index (buckets: its score fields): the rows of merging the days, bit for
    bit, in a first run and a nightly one (one index for all its pools); days a check failed
    are left out of its history."""
    from streameval.jobs import checks as checks_module

    checks = (
        '[[checks]]\nmetric = "psi"\nmax = 0.2\nbaseline = "previous"\n'
        '[[checks]]\nname = "ks"\nmetric = "ks_statistic"\nmax = 0.15\nbaseline = "history"\n'
        "days = 3\n"
        '[[checks]]\nname = "js"\nmetric = "js_distance"\nmax = 0.3\nbaseline = "previous"\n'
        'window = "2d"\nbins = 4\n'
        '[[checks]]\nname = "weekday"\nmetric = "ks_statistic"\nmax = 0.5\n'
        'baseline = "history"\ndays = 7\nsame_weekday = true\n'
    )
    pooled = checks_module.Checks._pooled_drift
    read: list[bool] = []

    def counted(self: Any, *args: Any) -> Any:
        rows = pooled(self, *args)
        read.append(rows is not None)
        return rows

    built: list[int] = []
    build = DayIndex.build.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        DayIndex, "build", classmethod(lambda c, *a: built.append(1) or build(c, *a))
    )
    source = tmp_path / "source"
    drifting_days(source, 10, {(3, "c"): 2.0, (8, "a"): 1.0})
    if keys == "int32":  # (codes not in the order of the rows: -5, 7, 0)
        segment = pl.col("segment").replace_strict({"a": -5, "b": 7, "c": 0}, return_dtype=pl.Int32)
        for file in (source / "preds").glob("*/*.parquet"):
            pl.read_parquet(file).with_columns(segment).write_parquet(file)
    days = sorted((source / "preds").iterdir())

    tables = {}
    for way in ("pools", "merged"):
        root = tmp_path / way
        for day in days[:9]:
            shutil.copytree(day, root / "preds" / day.name)
        path = job(root, checks)
        if keys == "none":
            path.write_text(path.read_text().replace('by = ["segment"]\n', ""))
        monkeypatch.setattr(
            checks_module.Checks,
            "_pooled_drift",
            counted if way == "pools" else (lambda self, *args: None),
        )
        run_job(path, quiet=True)
        first = pl.read_parquet(root / "checks" / "**" / "*.parquet")
        shutil.copytree(days[9], root / "preds" / days[9].name)  # (a nightly run: a new day)
        built.clear()
        assert run_job(path, quiet=True).judged == 1
        assert len(built) == 1
        tables[way] = (first, pl.read_parquet(root / "checks" / "**" / "*.parquet"))
    # every drift check of every judged day read the pools, days with no baseline day too
    table = tables["pools"][1]
    alone = table.group_by("check", "day").agg((pl.col("status") == "no_baseline").all())
    assert all(read) and len(read) > 20 and alone["status"].sum() > 0
    for got, want in zip(tables["pools"], tables["merged"], strict=True):
        assert (got["status"] != "pass").any()
        assert_frame_equal(got, want)
