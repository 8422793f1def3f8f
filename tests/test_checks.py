"""Job checks: bounds, baselines, significance and the day's false-discovery control.

Every p-value is compared with a direct computation from the raw rows (DeLong's variance via
``State.roc_test`` and the metric intervals, the binomial variance from the counts), the
adjustments with statsmodels' ``multipletests``; the simulated days check the false-alarm
rate over 200 days without change, and that an injected drop is the one row that fails.
"""

from __future__ import annotations

import json
import math
import os
import sys
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import streameval as se
from streameval.cli import main
from streameval.jobs import run_job
from streameval.jobs.config import load_job
from streameval.jobs.tomlkeys import JobConfigError
from streameval.stats.multiple import adjust

START = date(2026, 10, 1)
SEGMENTS = ["a", "b", "c", "d", "e"]


def day_rows(day: int, rows: int, seed: int, drops: dict[tuple[int, str], float]) -> pl.DataFrame:
    """A day's predictions: per segment, scores separating the classes by 1 (``drops``: less)."""
    rng = np.random.default_rng([seed, day])
    seg = np.repeat(SEGMENTS, rows)
    y = (rng.random(seg.size) < 0.4).astype(np.int8)
    shift = np.array([drops.get((day, s), 1.0) for s in seg])
    score = 1 / (1 + np.exp(-(y * shift + rng.normal(0, 1, seg.size))))
    other = 1 / (1 + np.exp(-(y * 0.3 + rng.normal(0, 1, seg.size))))
    weight = rng.choice([0.5, 1.0, 2.0], seg.size)
    frame = {"segment": seg, "label": y, "score": np.round(score, 4), "old": np.round(other, 4)}
    return pl.DataFrame({**frame, "weight": weight})


def write_days(
    root: Path, days: int, rows: int = 150, seed: int = 0, drops: dict | None = None
) -> pl.DataFrame:
    """Write ``days`` days under ``root/preds/day=…``; return every row with its day."""
    frames = []
    for d in range(days):
        day = START + timedelta(days=d)
        frame = day_rows(d, rows, seed, drops or {})
        folder = root / "preds" / f"day={day.isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(folder / "part-0.parquet")
        frames.append(frame.with_columns(pl.lit(day).alias("day")))
    return pl.concat(frames)


def job(root: Path, checks: str, task: str = "", checking: str = "") -> Path:
    task = task or 'label = "label"\nscore = "score"'
    text = (
        f'[source]\npaths = ["preds"]\npartition_key = "day"\n\n[task]\n{task}\n'
        f'by = ["segment"]\n\n[store]\npath = "store"\n\n[checking]\noutput = "checks"\n'
        f"{checking}\n{checks}"
    )
    path = root / "job.toml"
    path.write_text(text)
    return path


def checks_table(root: Path) -> pl.DataFrame:
    return pl.read_parquet(root / "checks" / "**" / "*.parquet").sort("check", "day", "segment")


# -- adjustments ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(0, 1), st.just(float("nan")), st.sampled_from([0.0, 0.01, 1.0])),
        min_size=1,
        max_size=40,
    )
)
def test_adjusted_p_values_are_statsmodels(p):
    from statsmodels.stats.multitest import multipletests

    p = np.array(p)
    present = ~np.isnan(p)
    for method, theirs in (("bh", "fdr_bh"), ("by", "fdr_by"), ("holm", "holm")):
        ours = adjust(p, method)
        assert np.isnan(ours[~present]).all()
        if present.any():
            expected = multipletests(p[present], method=theirs)[1]
            np.testing.assert_allclose(ours[present], expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(adjust(p, "none")[present], p[present])


# -- p-values against direct computation ----------------------------------------------------


@pytest.mark.parametrize("drop", [0.0, 0.03])
def test_auc_drop_against_the_previous_day_is_delongs_test(tmp_path, drop):
    rows = write_days(tmp_path, 3, drops={(2, "b"): 0.3})
    checks = (
        f'[[checks]]\nmetric = "roc_auc"\nmax_drop = {drop}\nbaseline = "previous"\n'
        "significance = 0.05\n"
    )
    run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path).filter(pl.col("day") == START + timedelta(days=2))
    state = se.accumulate(rows, label="label", score="score", by=["segment", "day"])
    metrics = state.metrics(ci="wilson").sort("segment", "day")
    tested = state.roc_test("day", "previous").sort("segment", "day")
    for seg in SEGMENTS:
        m = metrics.filter(pl.col("segment") == seg)
        a, b = m["roc_auc"][2], m["roc_auc"][1]
        sd = math.hypot(m["roc_auc_se"][2], m["roc_auc_se"][1])
        row = got.filter(pl.col("segment") == seg).row(0, named=True)
        assert row["value"] == pytest.approx(a, abs=1e-12)
        assert row["baseline"] == pytest.approx(b, abs=1e-12)
        assert row["p_value"] == pytest.approx(stats.norm.sf((b - a - drop) / sd), abs=1e-9)
        if drop == 0:  # DeLong's statistic (A − B)/√(Va + Vb): p = Φ(statistic)
            statistic = tested.filter(pl.col("segment") == seg)["statistic"][-1]
            assert row["p_value"] == pytest.approx(stats.norm.cdf(statistic), abs=1e-9)
    p = got.sort("segment")["p_value"].to_numpy()
    np.testing.assert_allclose(got.sort("segment")["p_adjusted"], adjust(p, "bh"), atol=1e-12)
    failed = got.filter(pl.col("status") == "fail")["segment"].to_list()
    assert failed == ["b"]


def test_weighted_recall_relative_drop_is_the_binomial_test(tmp_path):
    rows = write_days(tmp_path, 2, drops={(1, "c"): 0.2})
    checks = (
        '[[checks]]\nmetric = "recall"\nmax_relative_drop = 0.05\nbaseline = "previous"\n'
        "significance = 0.05\nseverity = 'warn'\n"
    )
    task = 'label = "label"\nscore = "score"\nweight = "weight"\nthreshold = [0.6, 0.5]'
    run_job(job(tmp_path, checks, task), quiet=True)
    got = checks_table(tmp_path).filter(pl.col("day") == START + timedelta(days=1))
    assert got["threshold"].unique().to_list() == [0.6]  # the task's first threshold
    for seg in SEGMENTS:
        values = []
        for d in (1, 0):
            r = rows.filter(pl.col("segment") == seg, pl.col("day") == START + timedelta(days=d))
            pos = r.filter(pl.col("label") == 1)
            tp = pos.filter(pl.col("score") >= 0.6)["weight"].sum()
            trials = pos["weight"].sum()
            values.append((tp / trials, trials))
        (a, na), (b, nb) = values
        var = a * (1 - a) / na + (0.95**2) * b * (1 - b) / nb
        row = got.filter(pl.col("segment") == seg).row(0, named=True)
        assert row["value"] == pytest.approx(a, rel=1e-12)
        assert row["tolerance"] == pytest.approx(0.05 * b, rel=1e-12)
        assert row["p_value"] == pytest.approx(
            stats.norm.sf((0.95 * b - a) / math.sqrt(var)), abs=1e-9
        )
    assert set(got["status"]) <= {"pass", "warn"}
    assert "warn" in got["status"].to_list()


def test_a_challenger_against_its_champion_is_delongs_paired_test(tmp_path):
    rows = write_days(tmp_path, 1)
    checks = (
        '[[checks]]\nmetric = "roc_auc"\nmodel = "old"\nchampion = "score"\nmax_drop = 0\n'
        'baseline = "champion"\nsignificance = 0.05\nwindow = "1d"\n'
    )
    task = 'kind = "paired"\nlabel = "label"\nscores = ["score", "old"]'
    run_job(job(tmp_path, checks, task), quiet=True)
    got = checks_table(tmp_path)
    state = se.accumulate(rows, task="paired", label="label", scores=["score", "old"], by="segment")
    tested = state.roc_test(alternative="greater").sort("segment")  # score > old: old worse
    for seg in SEGMENTS:
        row = got.filter(pl.col("segment") == seg).row(0, named=True)
        t = tested.filter(pl.col("segment") == seg).row(0, named=True)
        assert row["model"] == "old"
        assert row["value"] == pytest.approx(t["roc_auc_b"], abs=1e-12)
        assert row["baseline"] == pytest.approx(t["roc_auc_a"], abs=1e-12)
        assert row["p_value"] == pytest.approx(t["p_value"], abs=1e-9)
    assert (got["status"] == "fail").sum() >= 3  # the old model separates the classes by 0.3, not 1


def test_a_reference_state_is_each_slices_baseline(tmp_path):
    rows = write_days(tmp_path, 2)
    reference = rows.filter(pl.col("day") == START)
    se.accumulate(reference, label="label", score="score").write(tmp_path / "ref.parquet")
    checks = (
        '[[checks]]\nmetric = "roc_auc"\nmax_drop = 0.05\nbaseline = "reference"\n'
        'reference = "ref.parquet"\n'
    )
    run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path)
    expected = se.evaluate(reference, label="label", score="score")["roc_auc"].item()
    assert got["baseline"].to_list() == pytest.approx([expected] * got.height, abs=1e-12)
    raw = (pl.col("baseline") - pl.col("value") - 0.05 > 0).alias("x")
    assert got.select((pl.col("status") == "fail") == raw)["status"].all()


# -- the simulated days ---------------------------------------------------------------------


def test_over_200_unchanged_days_false_alarms_stay_within_the_level(tmp_path):
    write_days(tmp_path, 200, rows=120, seed=7)
    level = 0.05
    checks = (
        f'[[checks]]\nmetric = "roc_auc"\nmax_drop = 0\nbaseline = "previous"\n'
        f"significance = {level}\n"
    )
    run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path).filter(pl.col("status") != "no_baseline")
    days = got["day"].n_unique()
    alarmed = got.filter(pl.col("status") == "fail")["day"].n_unique()
    assert days == 199 and got.height == 199 * len(SEGMENTS)
    # BH at q: under no change at all, P(any alarm in a day) ≤ q; binomial tolerance (3 sd)
    assert alarmed / days <= level + 3 * math.sqrt(level * (1 - level) / days)
    # without the adjustment, five tests a day alarm on about 1 − 0.95⁵ of days
    raw = got.filter(pl.col("p_value") <= level)["day"].n_unique()
    assert raw > alarmed


def test_an_injected_drop_fails_alone_and_leaves_the_accepted_history(tmp_path):
    drop_day = 12
    rows = write_days(tmp_path, 15, rows=400, seed=3, drops={(drop_day, "c"): 0.0})
    checks = (
        '[[checks]]\nmetric = "roc_auc"\nmax_drop = 0.02\nbaseline = "history"\ndays = 7\n'
        "significance = 0.05\nmin_n = 100\n"
    )
    report = run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path)
    failed = got.filter(pl.col("status") == "fail")
    assert failed.select("day", "segment").rows() == [(START + timedelta(days=drop_day), "c")]
    assert [r["segment"] for r in report.failures] == ["c"] and report.checks_failed == 1
    # the next day's history for c leaves the failed day out; for the others it keeps it
    nxt = got.filter(pl.col("day") == START + timedelta(days=drop_day + 1))
    for seg, days in (("c", [6, 7, 8, 9, 10, 11]), ("a", [6, 7, 8, 9, 10, 11, 12])):
        kept = rows.filter(
            pl.col("segment") == seg,
            pl.col("day").is_in([START + timedelta(days=d) for d in days]),
        )
        expected = se.evaluate(kept, label="label", score="score")
        row = nxt.filter(pl.col("segment") == seg).row(0, named=True)
        assert row["baseline_n"] == kept.height
        assert row["baseline"] == pytest.approx(expected["roc_auc"].item(), abs=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("by", [["segment"], []])
@pytest.mark.parametrize("lenient_first", [True, False])
def test_history_baselines_pool_each_checks_accepted_days(tmp_path, by, lenient_first, weighted):
    """Every history baseline equals the metric of that check's accepted days, read back.

    Two checks pool the same days: a strict one that warns on many slice-days (its history
    leaves them out) and a lenient one that never does (its history keeps all). Unweighted,
    both read one sliding pool (the strict one less its rejected slices); weighted, the days
    are merged: the lenient one first, the strict one takes the day's merged pool less its
    rejected slices, else it merges its accepted days itself.
    """
    order = (("strict", 0.0, "warn"), ("lenient", 1.0, "error"))
    rows = write_days(tmp_path, 9, rows=60, seed=5, drops={(4, "b"): 0.0, (6, "d"): -1.0})
    checks = "".join(
        f'[[checks]]\nname = "{name}"\nmetric = "roc_auc"\nmax_drop = {drop}\n'
        f'baseline = "history"\ndays = 4\nseverity = "{severity}"\n'
        for name, drop, severity in (order[::-1] if lenient_first else order)
    )
    task = 'label = "label"\nscore = "score"' + ('\nweight = "weight"' if weighted else "")
    path = job(tmp_path, checks, task=task)
    path.write_text(path.read_text().replace('by = ["segment"]', f"by = {json.dumps(by)}"))
    run_job(path, quiet=True)
    got = pl.read_parquet(tmp_path / "checks" / "**" / "*.parquet")
    rejected = got.filter(pl.col("status").is_in(["fail", "warn"]))
    weight = {"weight": "weight"} if weighted else {}
    assert rejected.filter(pl.col("check") == "strict").height >= 3  # (the test has teeth)
    assert rejected.filter(pl.col("check") == "lenient").is_empty()
    days = [START + timedelta(days=d) for d in range(9)]
    for row in got.filter(pl.col("baseline").is_not_null()).iter_rows(named=True):
        i = days.index(row["day"])
        slice_ = [pl.col(k) == row[k] for k in by]
        bad = rejected.filter(pl.col("check") == row["check"], *slice_)["day"].to_list()
        kept = [d for d in days[max(0, i - 4) : i] if d not in bad]
        pooled = rows.filter(pl.col("day").is_in(kept), *slice_)
        expected = se.evaluate(pooled, label="label", score="score", **weight)["roc_auc"].item()
        assert row["baseline_n"] == pooled.height
        assert row["baseline"] == pytest.approx(expected, abs=1e-12)


def test_a_nightly_runs_summed_history_judges_as_a_first_runs_pools(tmp_path, monkeypatch):
    """One judged day sums its history's tables; a run judging many days slides pools along
    an index of every day: the same rows.

    Strict checks warn on slices (their histories leave them out), on a bucketed state
    whose float sums (log loss) both keep per group. (Drift checks read histograms from an
    index even in a nightly run: test_drift_checks_read_the_pools_as_they_would_merge.)
    """
    from streameval.jobs import pools

    pooled: list[object] = []
    summed: list[object] = []
    build, of_tables = pools.DayIndex.build, pools.Pooled.of_tables
    monkeypatch.setattr(pools.DayIndex, "build", lambda *a, **k: pooled.append(1) or build(*a, **k))
    monkeypatch.setattr(
        pools.Pooled, "of_tables", lambda *a, **k: summed.append(1) or of_tables(*a, **k)
    )
    checks = "".join(
        f'[[checks]]\nname = "{metric}"\nmetric = "{metric}"\n{bound}\n'
        f'baseline = "history"\ndays = 4\nseverity = "warn"\n'
        for metric, bound in (
            ("roc_auc", "max_drop = 0.0"),
            ("log_loss", "max_relative_drop = 0.0"),
        )
    )
    drops = {(4, "b"): 0.0, (6, "d"): -1.0}
    runs = {}
    for name, days in (("nightly", 7), ("first", 8)):
        root = tmp_path / name
        write_days(root, days, rows=60, seed=5, drops=drops)
        path = job(root, checks)
        assert run_job(path, quiet=True).judged == days
        if name == "nightly":
            pooled.clear()
            folder = root / "preds" / f"day={(START + timedelta(days=7)).isoformat()}"
            folder.mkdir()
            day_rows(7, 60, 5, drops).write_parquet(folder / "part-0.parquet")
            assert run_job(path, quiet=True).judged == 1
            assert summed and not pooled  # (one judged day: its history's tables summed)
        else:
            assert pooled
        runs[name] = checks_table(root)
    last = START + timedelta(days=7)
    got, want = (runs[n].filter(pl.col("day") == last) for n in ("nightly", "first"))
    assert got.height == want.height > 0 and (got["status"] == "warn").any()
    floats = [c for c, dtype in got.schema.items() if dtype.is_float()]
    assert got.drop(floats).equals(want.drop(floats))
    for c in floats:
        np.testing.assert_allclose(
            got[c].to_numpy().astype(float), want[c].to_numpy().astype(float), rtol=1e-12
        )


#: Checks whose windows and baselines are rollup windows (``1d``; a 4-day history, the 4d
#: window of the day before), and the rollups.
ROLLED_CHECKS = (
    '[[checks]]\nname = "floor"\nmetric = "roc_auc"\nmin = 0.7\nseverity = "warn"\n'
    '[[checks]]\nname = "recall"\nmetric = "recall"\nmax_drop = 0.0\n'
    'baseline = "previous"\nseverity = "warn"\n'
    '[[checks]]\nname = "history"\nmetric = "roc_auc"\nmax_drop = 0.3\n'
    'baseline = "history"\ndays = 4\nseverity = "warn"\n'
)
ROLLED_OUTPUTS = '\n[[outputs]]\npath = "metrics"\nwindows = ["1d", "4d"]\n'


def test_checks_read_the_rollups_aggregates_as_they_would_compute_them(tmp_path, monkeypatch):
    """A run's rollups keep each window's aggregates; its checks read those of their own
    windows and histories (a history of 4 days is the previous day's 4d window; the slices
    it rejected on some day summed again from their accepted days; the days' own windows
    tagged and finalized in one pass a block of days, and the rows of the checks that read no
    verdict judged for the block's days at once): the checks table is the one they give
    computing every window and day by itself, bit for bit."""
    from streameval.jobs import aggregates, checks

    read: list[bool] = []
    grouped = aggregates.WindowAggregates.grouped
    finalized: list[int] = []
    metric_table = checks.metric_table

    def spied(self, *args):
        out = grouped(self, *args)
        read.append(out is not None)
        return out

    def counted(*args):
        finalized.append(1)
        return metric_table(*args)

    compared: list[int] = []
    compare = checks.compare

    def compared_once(*args):
        compared.append(1)
        return compare(*args)

    monkeypatch.setattr(aggregates.WindowAggregates, "grouped", spied)
    monkeypatch.setattr(checks, "metric_table", counted)
    monkeypatch.setattr(checks, "compare", compared_once)
    tables, hits, finalizes, compares = {}, {}, {}, {}
    for name in ("kept", "a few kept", "not kept"):
        if name == "a few kept":
            monkeypatch.setattr(aggregates, "KEPT_ROWS", 20)  # (the first windows' alone)
        if name == "not kept":
            monkeypatch.setattr(aggregates.WindowAggregates, "remember", lambda *a: None)
        root = tmp_path / name.replace(" ", "_")
        write_days(root, 9, rows=80, seed=3, drops={(5, "b"): 0.0})
        path = job(root, ROLLED_CHECKS)
        path.write_text(path.read_text() + ROLLED_OUTPUTS)
        read.clear()
        finalized.clear()
        compared.clear()
        assert run_job(path, quiet=True).judged == 9
        hits[name] = sum(read)
        finalizes[name] = len(finalized)
        compares[name] = len(compared)
        tables[name] = checks_table(root)
    # each day's 1d window (the next day's previous: the same table), and every history
    # of the 8 days after the first (slices rejected on some day or not)
    assert hits["kept"] == 9 + 8 and 0 < hits["a few kept"] < hits["kept"]
    assert hits["not kept"] == 0
    # the 9 days' windows (of the floor and recall checks, and recall's previous) in one
    # finalize a block of days (the first two, then the rest), or one each; the histories
    # one each
    assert finalizes == {"kept": 2 + 8, "a few kept": finalizes["a few kept"], "not kept": 9 + 8}
    assert 2 + 8 < finalizes["a few kept"] < 9 + 8
    # and the floor and recall checks' rows of a block's days compared as one table each
    assert compares["kept"] == 2 + 2 + 9 and compares["not kept"] == 9 + 9 + 9
    assert tables["kept"].equals(tables["not kept"])
    assert tables["a few kept"].equals(tables["not kept"])
    history = tables["kept"].filter(pl.col("check") == "history")
    assert (history["status"] == "warn").any()


def test_the_rollups_keep_the_aggregates_of_the_windows_checks_read_alone(tmp_path, monkeypatch):
    """Of the rollups' 1d, 2d and 4d windows, checks of 1d windows with a 4-day history read
    the 1d and 4d ones: those are kept (with DeLong's variance), the 2d ones are not; a job
    whose checks are all score drifts keeps none."""
    from streameval.jobs import aggregates
    from streameval.jobs.checks import Checks

    kept: list[tuple[int, int]] = []
    remember = aggregates.WindowAggregates.remember

    def spied(self, members, grouped, store_as=None):
        assert "_var" in grouped.frame.columns
        kept.append((len(members), members[-1]))
        return remember(self, members, grouped, store_as)

    monkeypatch.setattr(aggregates.WindowAggregates, "remember", spied)
    drift = '[[checks]]\nname = "psi"\nmetric = "psi"\nmax = 0.2\nbaseline = "previous"\n'
    outputs = '\n[[outputs]]\npath = "metrics"\nwindows = ["1d", "2d", "4d"]\n'
    for checks, lengths in ((ROLLED_CHECKS, {1, 4}), (drift, set())):
        root = tmp_path / str(len(lengths))
        write_days(root, 9, rows=80, seed=3)
        path = job(root, checks)
        path.write_text(path.read_text() + outputs)
        assert Checks(load_job(path), None, {}, print).read_windows() == lengths  # type: ignore[arg-type]
        kept.clear()
        assert run_job(path, quiet=True).judged == 9
        # (from the fourth day on, a 2d window has 2 days and a 4d window 4)
        assert {n for n, last in kept if last >= 3} == lengths


@pytest.mark.parametrize("key_type", ["String", "Int32", "Categorical"])
def test_a_nightly_run_reads_the_aggregates_the_last_run_stored(
    tmp_path, monkeypatch, capsys, key_type
):
    """The rollups store the last day's 1d and 4d windows' aggregates; a nightly run's checks
    read them as the new day's previous and history baselines (a slice rejected on some day
    summed again) and judge as a run that stores none, and as a first run: the same rows,
    bit for bit, whatever the keys' type. The day before's files are removed; a damaged one
    is recomputed."""
    from streameval.jobs import checks as checks_module
    from streameval.jobs import store as store_module

    def keyed(frame: pl.DataFrame) -> pl.DataFrame:
        if key_type == "Int32":
            codes = {s: i for i, s in enumerate(SEGMENTS)}
            return frame.with_columns(
                pl.col("segment").replace_strict(codes, return_dtype=pl.Int32)
            )
        return frame.with_columns(pl.col("segment").cast(getattr(pl, key_type)))

    def write(root: Path, first: int, days: int) -> None:
        for d in range(first, days):
            folder = root / "preds" / f"day={(START + timedelta(days=d)).isoformat()}"
            folder.mkdir(parents=True, exist_ok=True)
            keyed(day_rows(d, 80, 3, drops)).write_parquet(folder / "part-0.parquet")

    drops = {(5, "b"): 0.0}
    reads: list[str] = []
    read_table = store_module.Store.read_table

    def spied(self, relative, *args):
        reads.append(relative)
        return read_table(self, relative, *args)

    def stored(root: Path) -> list[str]:
        return sorted(p.name.split(".")[:2] for p in (root / "store").glob("**/aggregates/*"))

    monkeypatch.setattr(store_module.Store, "read_table", spied)
    tables, aggregates_read = {}, {}
    names = ("first", "stored", "damaged", "none stored")
    for name in names if key_type == "String" else names[:2]:
        if name == "none stored":
            monkeypatch.setattr(checks_module.Checks, "next_windows", lambda self: frozenset())
        root = tmp_path / name.replace(" ", "_")
        write(root, 0, 9 if name == "first" else 8)
        path = job(root, ROLLED_CHECKS)
        path.write_text(path.read_text() + ROLLED_OUTPUTS)
        run_job(path, quiet=True)
        if name != "first":
            last = [["day=2026-10-08", w] for w in ("1d", "4d")]
            assert stored(root) == ([] if name == "none stored" else last)
            if name == "damaged":
                next((root / "store").glob("**/aggregates/*.4d.*")).write_bytes(b"not parquet")
            write(root, 8, 9)
            reads.clear()
            assert run_job(path, quiet=True).judged == 1
            now = [[x.replace("08", "09"), w] for x, w in last]
            assert stored(root) == ([] if name == "none stored" else now)
            aggregates_read[name] = len([r for r in reads if "aggregates/" in r])
        tables[name] = checks_table(root)
    # (damaged: the 4d file fails its digest; the run is retried, and reads the new day's 1d
    # window as its rollups stored it, the history summed from the days)
    expected = {"stored": 2, "damaged": 3, "none stored": 0}
    assert aggregates_read == {n: expected[n] for n in aggregates_read}
    if "damaged" in aggregates_read:
        assert "the stored aggregates of window" in capsys.readouterr().err
    # the new day's history leaves out segment b's day it warned on (its others summed)
    history = tables["first"].filter(
        pl.col("check") == "history", pl.col("day") == date(2026, 10, 9)
    )
    b = keyed(pl.DataFrame({"segment": ["b"]}))["segment"][0]
    assert sorted(history["baseline_n"].to_list()) == [3 * 80] + [4 * 80] * 4
    assert history.filter(pl.col("segment") == b)["baseline_n"].to_list() == [3 * 80]
    for name in tables:
        assert tables[name].equals(tables["first"]), name


def test_a_run_lets_go_of_its_states(tmp_path):
    """The states a run read (held in a cycle by its pools' callbacks) are let go when it
    ends, not when the next collection comes: a process running job after job (a
    scheduler, a notebook) keeps no store's days in memory."""
    import gc

    from streameval.jobs.rollup import StateCache

    write_days(tmp_path, 6, rows=40)
    path = job(tmp_path, ROLLED_CHECKS)
    path.write_text(path.read_text() + ROLLED_OUTPUTS)
    gc.collect()
    gc.disable()  # (what a collection would free stays among the objects until then)
    try:
        assert run_job(path, quiet=True).judged == 6
        caches = [o for o in gc.get_objects() if isinstance(o, StateCache)]
        assert caches  # (the cycle: the cache is still there, holding nothing)
        assert all(not c.held() and not c._pools and not c.aggregates._kept for c in caches)
    finally:
        gc.enable()


def test_the_tables_checks_judge_are_the_metric_tables_less_carets_statistics():
    """A check's table holds its metric, interval and counts as ``State.metrics`` gives
    them; caret's statistics (which no check reads: they are not metrics) are left out."""
    from streameval.measure import narrowed_metrics
    from streameval.stats.confusion import STATISTICS

    frame = day_rows(0, 60, 1, {})
    kwargs = {"threshold": [0.3, 0.5]}
    state = se.accumulate(frame, label="label", score="score", by="segment", thresholds=[0.3, 0.5])
    public = state.metrics(ci="wilson", **kwargs)
    assert set(STATISTICS) <= set(public.columns)
    for metrics in (["recall"], ["roc_auc", "precision"]):
        table = narrowed_metrics(state, metrics, kwargs)
        assert not set(STATISTICS) & set(table.columns)
        assert {*metrics, f"{metrics[-1]}_lo", "positives"} <= set(table.columns)
        assert table.equals(public.select(table.columns))


# -- runs, statuses, outputs ----------------------------------------------------------------


def test_exit_status_on_failure_command_and_checks_only(tmp_path, capsys, monkeypatch):
    write_days(tmp_path, 4, drops={(3, "a"): -1.0})
    sink = tmp_path / "failed.json"
    command = json.dumps(
        [sys.executable, "-c", f"import sys; open({str(sink)!r}, 'w').write(sys.stdin.read())"]
    )
    checks = '[[checks]]\nmetric = "roc_auc"\nmin = 0.6\nmin_n = 10\n'
    path = job(tmp_path, checks, checking=f"on_failure = {command}\n")
    assert main(["run", str(path), "--quiet"]) == 3
    failed = json.loads(sink.read_text())
    assert [(r["day"], r["segment"], r["status"]) for r in failed] == [("2026-10-04", "a", "fail")]
    assert "check 'roc_auc 1d' fail: day=2026-10-04, segment=a" in capsys.readouterr().err
    # a warn check alone: status 0, the command still told
    path.write_text(path.read_text().replace("min_n = 10", "min_n = 10\nseverity = 'warn'"))
    sink.unlink()
    assert main(["run", str(path), "--quiet"]) == 0
    assert json.loads(sink.read_text())[0]["status"] == "warn"
    # --checks-only reads no source: the source can be gone
    for f in (tmp_path / "preds").rglob("*.parquet"):
        f.unlink()
    path.write_text(path.read_text().replace("min = 0.6", "min = 0.1"))
    assert main(["run", str(path), "--checks-only", "--quiet"]) == 0
    assert set(checks_table(tmp_path)["status"]) == {"pass"}


def test_statuses_too_small_no_baseline_and_slices(tmp_path):
    write_days(tmp_path, 2)
    checks = (
        '[[checks]]\nname = "big"\nmetric = "roc_auc"\nmax_drop = 0.5\nbaseline = "previous"\n'
        "min_n = 100000\n"
        '[[checks]]\nname = "some"\nmetric = "accuracy"\nmin = 0\nmax_drop = 0.5\n'
        'baseline = "previous"\nwhere = { segment = ["a", "b"] }\n'
    )
    run_job(job(tmp_path, checks), quiet=True)
    got = checks_table(tmp_path)
    assert set(got.filter(pl.col("check") == "big")["status"]) == {"too_small"}
    some = got.filter(pl.col("check") == "some")
    assert sorted(set(some["segment"])) == ["a", "b"]
    assert some.filter(pl.col("day") == START)["status"].unique().to_list() == ["no_baseline"]
    assert some.filter(pl.col("day") > START)["status"].unique().to_list() == ["pass"]
    assert got.schema["n"] == pl.Int64 and got.schema["p_value"] == pl.Float64


def test_a_second_run_judges_nothing_and_a_new_day_only_itself(tmp_path):
    write_days(tmp_path, 3)
    path = job(tmp_path, '[[checks]]\nmetric = "roc_auc"\nmin = 0.5\n')
    report = run_job(path, quiet=True)
    assert report.judged == 3 and 0 < report.checks_seconds < report.seconds
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "checks").rglob("*.parquet")}
    assert run_job(path, quiet=True).judged == 0
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "checks").rglob("*.parquet")}
    frame = day_rows(3, 150, 0, {})
    folder = tmp_path / "preds" / f"day={(START + timedelta(days=3)).isoformat()}"
    folder.mkdir()
    frame.write_parquet(folder / "part-0.parquet")
    assert run_job(path, quiet=True).judged == 1
    assert checks_table(tmp_path)["day"].n_unique() == 4


@pytest.mark.parametrize(("rows", "blocks"), [(None, [2, 3]), (1, [2, 2, 1])])
def test_days_judged_together_are_the_days_judged_one_by_one(tmp_path, monkeypatch, rows, blocks):
    """Without a history baseline no check reads an earlier verdict: a first run judges its
    days in blocks at once (two days, then as many as make about ``BATCH_ROWS`` rows; each
    day's p-values still one family), and its checks table is, bit for bit, the one runs
    adding a day at a time write."""
    import shutil

    from streameval.jobs import checks as module
    from streameval.jobs.checks import Checks

    if rows is not None:
        monkeypatch.setattr(module, "BATCH_ROWS", rows)

    checks = (
        '[[checks]]\nname = "floor"\nmetric = "roc_auc"\nmin = 0.7\nmin_n = 100\n'
        '[[checks]]\nname = "auc"\nmetric = "roc_auc"\nmax_drop = 0.0\nbaseline = "previous"\n'
        "significance = 0.3\n"
        '[[checks]]\nname = "recall"\nmetric = "recall"\nmax_relative_drop = 0.01\n'
        'baseline = "previous"\nseverity = "warn"\n'
        '[[checks]]\nname = "psi"\nmetric = "psi"\nmax = 0.05\nbaseline = "previous"\n'
    )
    together, apart = tmp_path / "together", tmp_path / "apart"
    write_days(together, 5, rows=120, seed=4, drops={(3, "b"): 0.0})
    calls: list[int] = []
    judge_days = Checks.judge_days

    def spied(self, entries, days, known):
        calls.append(len(days))
        return judge_days(self, entries, days, known)

    monkeypatch.setattr(Checks, "judge_days", spied)
    assert run_job(job(together, checks), quiet=True).judged == 5
    assert calls == blocks
    (apart / "preds").mkdir(parents=True)
    path = job(apart, checks)
    for day in sorted((together / "preds").iterdir()):
        shutil.copytree(day, apart / "preds" / day.name)
        assert run_job(path, quiet=True).judged == 1
    assert calls == [*blocks, 1, 1, 1, 1, 1]
    table = checks_table(together)
    assert table.equals(checks_table(apart))
    assert set(table["status"]) >= {"pass", "fail", "warn", "no_baseline"}


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ('metric = "roc_acu"\nmin = 0.5', "did you mean 'roc_auc'"),
        ('metric = "roc_auc"', "a check needs min, max, max_drop or max_relative_drop"),
        ('metric = "roc_auc"\nmax_drop = 0.1', "checks[0].baseline: missing"),
        (
            'metric = "f1"\nmax_drop = 0.1\nbaseline = "previous"\nsignificance = 0.05',
            "no analytic variance",
        ),
        ('metric = "roc_auc"\nmin = 0.5\nwindow = "all"', "expected a trailing window"),
        ('metric = "roc_auc"\nmin = 0.5\nwhere = { region = "x" }', "group keys"),
        ('metric = "roc_auc"\nmax_drop = 0.1\nbaseline = "reference"', "expected a state file"),
        ('metric = "roc_auc"\nmin = 0.5\nthreshold = 0.7', "the task's thresholds"),
        (
            'metric = "roc_auc"\nmax_drop = 0.1\nmax_relative_drop = 0.1\nbaseline = "previous"',
            "not both",
        ),
        ('metric = "n"\nmin = 5', "expected one of"),
    ],
)
def test_mistakes_in_checks_are_named(tmp_path, check, message):
    path = job(tmp_path, f"[[checks]]\n{check}\n")
    with pytest.raises(JobConfigError) as info:
        load_job(path)
    assert message in str(info.value)


def test_checking_needs_checks_and_a_report_is_html(tmp_path):
    path = job(tmp_path, "")
    with pytest.raises(JobConfigError, match="expected \\[\\[checks\\]\\] tables"):
        load_job(path)
    path = job(tmp_path, '[[checks]]\nmetric = "roc_auc"\nmin = 0.5\n', checking='report = "r.txt"')
    with pytest.raises(JobConfigError, match=r"checking\.report: expected an \.html file"):
        load_job(path)
    champion = '[[checks]]\nmetric = "roc_auc"\nmax_drop = 0\nbaseline = "champion"\n'
    with pytest.raises(JobConfigError, match="expected model = challenger"):
        load_job(job(tmp_path, champion))


def test_checks_only_needs_checks_and_stored_states(tmp_path):
    write_days(tmp_path, 1)
    path = job(tmp_path, "").with_name("plain.toml")
    path.write_text(job(tmp_path, "").read_text().replace('output = "checks"', ""))
    with pytest.raises(JobConfigError, match="--checks-only needs"):
        run_job(path, checks_only=True, quiet=True)
    path = job(tmp_path, '[[checks]]\nmetric = "roc_auc"\nmin = 0.5\n')
    with pytest.raises(se.errors.StreamevalError, match="holds no states yet"):
        run_job(path, checks_only=True, quiet=True)
    assert not os.path.exists(tmp_path / "checks")


def test_the_report_opens_with_the_checks_and_marks_the_failed_cells(tmp_path):
    import shutil
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    write_days(tmp_path, 4, drops={(3, "a"): -1.0})
    checks = (
        '[[checks]]\nname = "floor"\nmetric = "roc_auc"\nmin = 0.6\n'
        '[[checks]]\nname = "recall"\nmetric = "recall"\nmin = 0.99\nseverity = "warn"\n'
        'where = { segment = "b" }\n'
    )
    path = job(tmp_path, checks, checking='report = "report.html"\nreport_days = 2\n')
    run_job(path, quiet=True)
    text = (tmp_path / "report.html").read_text()
    assert text.index("<h2>Checks</h2>") < text.index("<h2>Metrics</h2>")
    # the failed AUC of a on the last day, in the compact and the full table; b's recall warns
    assert text.count('class="failed"') == 2
    assert text.count('class="warned"') == 2 * 2  # b's recall on both days of the report
    mtime = (tmp_path / "report.html").stat().st_mtime_ns
    run_job(path, quiet=True)  # nothing judged: the report is left as it was
    assert (tmp_path / "report.html").stat().st_mtime_ns == mtime
    if chromium is None:  # CI installs Debian's chromium (.ci/run): there, a missing one fails
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Chromium browser: .ci/run installs Debian's chromium")
        pytest.skip("needs a Chromium browser (Debian's chromium)")
    browser = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--virtual-time-budget=5000",
    ]
    dom = subprocess.run(
        [*browser, "--dump-dom", (tmp_path / "report.html").as_uri()],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    first = dom.index('<table id="checks"')
    assert first < dom.index('<table id="metrics"')
    assert dom[first : dom.index("</table>", first)].count("<tr") == 1 + 1 + 2  # head, a, b×2
    assert dom.count('class="failed"') == 2


@pytest.mark.parametrize(
    ("task", "metric", "direction"),
    [
        ('kind = "multiclass"\nlabel = "animal"\nprediction = "guess"\n'
         'classes = ["cat", "dog", "bird"]', "accuracy", 1),
        ('kind = "regression"\nlabel = "y"\nprediction = "y_hat"', "mse", -1),
    ],
)  # fmt: skip
def test_other_tasks_judge_their_metrics_by_their_direction(tmp_path, task, metric, direction):
    from jobs_support import day_frame

    kind = "multiclass" if "multiclass" in task else "regression"
    frames = []
    for d in range(3):
        day = START + timedelta(days=d)
        frame = day_frame(kind, d, 300)
        (tmp_path / "preds" / f"day={day}").mkdir(parents=True)
        frame.write_parquet(tmp_path / "preds" / f"day={day}" / "part-0.parquet")
        frames.append(frame.with_columns(pl.lit(day).alias("day")))
    rows = pl.concat(frames)
    check = f'[[checks]]\nmetric = "{metric}"\nmax_relative_drop = 0.01\nbaseline = "previous"\n'
    run_job(job(tmp_path, check, task), quiet=True)
    got = checks_table(tmp_path).filter(pl.col("day") > START)
    options = (
        dict(task="multiclass", label="animal", prediction="guess")
        if kind == "multiclass"
        else dict(task="regression", label="y", prediction="y_hat")
    )
    expected = se.evaluate(rows, by=["segment", "day"], **options).sort("segment", "day")
    for row in got.iter_rows(named=True):
        values = expected.filter(pl.col("segment") == row["segment"])
        now = values.filter(pl.col("day") == row["day"])[metric].item()
        before = values.filter(pl.col("day") == row["day"] - timedelta(days=1))[metric].item()
        assert row["value"] == pytest.approx(now, rel=1e-12)
        assert row["baseline"] == pytest.approx(before, rel=1e-12)
        worse = direction * (before - now) - 0.01 * abs(before) > 0
        assert (row["status"] == "fail") == worse
    assert got["p_value"].is_null().all()


def _compared(check: str, rows: dict) -> dict:
    """One row judged by :func:`compare` and :func:`screen` (a binary or regression check)."""
    from streameval.jobs.checkconfig import read_checks
    from streameval.jobs.judge import compare, screen
    from streameval.jobs.task import read_task

    kind = "regression" if "r2" in check else "binary"
    task = {"kind": kind, "label": "y", "by": ["g"]}
    task |= {"prediction": "p"} if kind == "regression" else {"score": "p"}
    parsed = read_checks(
        "job.toml", [dict(tomllib_loads(check))], read_task("job.toml", task), "day", "."
    )
    frame = pl.DataFrame(
        {k: [v] for k, v in rows.items()}, schema_overrides={k: pl.Float64 for k in rows}
    )
    return screen(compare(frame, parsed[0], kind), parsed[0]).row(0, named=True)


def tomllib_loads(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)


BASE = {"value": 0.8, "se": 0.01, "n": 500.0, "positives": 200.0, "baseline": 0.8,
        "baseline_se": 0.01, "baseline_n": 500.0, "baseline_positives": 200.0}  # fmt: skip


def test_a_relative_tolerance_is_a_share_of_the_baselines_magnitude():
    check = 'metric = "r2"\nmax_relative_drop = 0.1\nbaseline = "previous"'
    better = _compared(check, BASE | {"value": -0.19, "baseline": -0.20})
    assert better["tolerance"] == pytest.approx(0.02) and better["excess"] < 0
    assert not better["_drop"]
    worse = _compared(check, BASE | {"value": -0.30, "baseline": -0.20})
    assert worse["excess"] == pytest.approx(0.08) and worse["_drop"]
    # lower is better: excess = v − (1 + r)·b, whose variance scales b's by (1 + r)²
    check = 'metric = "error_rate"\nmax_relative_drop = 0.1\nbaseline = "previous"\n'
    row = _compared(check + "significance = 0.05", BASE | {"value": 0.3, "baseline": 0.2})
    sd = math.sqrt(0.01**2 + (1.1 * 0.01) ** 2)
    assert row["excess"] == pytest.approx(0.08)
    assert row["p_value"] == pytest.approx(stats.norm.sf(0.08 / sd), rel=1e-12)


_MAYBE = st.one_of(
    st.none(), st.just(float("nan")), st.floats(-2, 2, allow_nan=False), st.just(0.0)
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(_MAYBE, _MAYBE, _MAYBE, _MAYBE), min_size=1, max_size=6),
    check=st.sampled_from(
        [
            'metric = "roc_auc"\nmax_drop = 0.02\nbaseline = "previous"\nsignificance = 0.05',
            'metric = "error_rate"\nmax_relative_drop = 0.1\nbaseline = "previous"\nmin = 0.1',
            'metric = "r2"\nmax_relative_drop = 0.1\nbaseline = "previous"\nmin = 0.0',
            'metric = "recall"\nmax_relative_drop = 0.1\nbaseline = "previous"\nsignificance = 0.2',
            'metric = "mean_error"\nmax_drop = 0.01\nbaseline = "previous"\nmax = 0.5',
        ]
    ),
)
def test_compare_and_screen_keep_nulls_and_nan_row_by_row(rows, check):
    """Each row as the definitions say, computed alone: null where an input is null, NaN
    kept, a NaN excess a drop and a NaN value above ``max`` (Polars orders NaN above every
    number), the p-value the normal tail of excess / sd, statuses as :func:`screen` lists."""
    from streameval.jobs.checkconfig import read_checks
    from streameval.jobs.judge import compare, screen
    from streameval.jobs.task import read_task
    from streameval.measure import declaration

    kind = "regression" if "r2" in check or "mean_error" in check else "binary"
    task = {"kind": kind, "label": "y", "by": ["g"]}
    task |= {"prediction": "p"} if kind == "regression" else {"score": "p"}
    c = read_checks("job.toml", [tomllib_loads(check)], read_task("job.toml", task), "day", ".")[0]
    frame = pl.DataFrame(
        [(*r, 500.0, 200.0, 500.0, 200.0) for r in rows],
        schema={k: pl.Float64 for k in ("value", "baseline", "se", "baseline_se", *BASE_COUNTS)},
        orient="row",
    )
    got = screen(compare(frame, c, kind), c)
    direction = declaration(kind, c.metric).direction
    z = stats.norm.ppf(1 - (c.significance or 0.05) / 2)

    for (v, b, sv, sb), out in zip(rows, got.iter_rows(named=True), strict=True):
        r = c.max_relative_drop
        tol = None if r is not None and b is None else (abs(b) * r if r is not None else c.max_drop)
        diff = None if v is None or b is None else v - b
        if direction == "zero":
            excess = None if diff is None or tol is None else abs(v) - abs(b) - tol
            var = None
        else:
            s = -1.0 if direction == "higher" else 1.0
            excess = None if diff is None or tol is None else s * v - s * b - tol
            k = None if b is None else -s - (r or 0.0) * float(np.sign(b))
            var = None if None in (sv, sb, k) else sv**2 + (k * sb) ** 2
        sd_diff = None if None in (sv, sb) else math.sqrt(max(sv**2 + sb**2, 0.0))
        lo = None if None in (diff, sd_diff) else diff - z * sd_diff
        for name, want in (("difference", diff), ("difference_lo", lo), ("excess", excess)):
            have = out[name]
            assert (have is None) == (want is None), (name, have, want)
            if want is not None:
                assert (math.isnan(have) and math.isnan(want)) or have == pytest.approx(want)
        assert out["tolerance"] == pytest.approx(tol, nan_ok=True) if tol is not None else True
        assert out["_drop"] == (excess is not None and (math.isnan(excess) or excess > 0))
        outside = v is not None and (
            (c.min is not None and not math.isnan(v) and v < c.min)
            or (c.max is not None and (math.isnan(v) or v > c.max))
        )
        assert out["_bound"] == outside
        sd = None if var is None else math.sqrt(max(var, 0.0)) if not math.isnan(var) else var
        judged = c.significance is not None and b is not None and v is not None
        if excess is None or sd is None or math.isnan(excess) or math.isnan(sd) or not judged:
            p = None
        elif sd > 0:
            p = stats.norm.sf(excess / sd)
        else:
            p = 1.0 if excess <= 0 else 0.0
        status = "undefined" if v is None else "no_baseline" if b is None and not outside else None
        if status is None and c.significance is not None and p is None and not outside:
            status = "undefined"
        assert out["status"] == status
        assert (out["p_value"] is None) == (p is None or status is not None)
        if out["p_value"] is not None:
            assert out["p_value"] == pytest.approx(p, rel=1e-12, abs=1e-300)


BASE_COUNTS = ("n", "positives", "baseline_n", "baseline_positives")


def test_a_high_significance_never_fails_an_improvement_and_no_se_is_undefined():
    check = 'metric = "roc_auc"\nmax_drop = 0\nbaseline = "previous"\nsignificance = 0.7'
    row = _compared(check, BASE | {"value": 0.81})
    assert row["p_value"] > 0.5 and not row["_drop"]
    untested = _compared(check, BASE | {"value": 0.0, "se": None})
    assert untested["status"] == "undefined" and untested["p_value"] is None


def test_a_slice_gone_from_the_window_is_no_data(tmp_path):
    write_days(tmp_path, 2)
    day = tmp_path / "preds" / f"day={START + timedelta(days=1)}" / "part-0.parquet"
    pl.read_parquet(day).filter(pl.col("segment") != "e").write_parquet(day)
    run_job(
        job(tmp_path, '[[checks]]\nmetric = "roc_auc"\nmax_drop = 0.5\nbaseline = "previous"\n'),
        quiet=True,
    )
    got = checks_table(tmp_path).filter(pl.col("day") == START + timedelta(days=1))
    gone = got.filter(pl.col("segment") == "e").row(0, named=True)
    assert gone["status"] == "no_data" and gone["value"] is None and gone["baseline_n"] == 150


def test_a_changed_reference_or_a_damaged_check_file_is_judged_again(tmp_path):
    rows = write_days(tmp_path, 2)
    se.accumulate(rows.head(300), label="label", score="score").write(tmp_path / "ref.parquet")
    checks = (
        '[[checks]]\nmetric = "roc_auc"\nmax_drop = 0.5\nbaseline = "reference"\n'
        'reference = "ref.parquet"\n'
    )
    path = job(tmp_path, checks)
    assert run_job(path, quiet=True).judged == 2
    se.accumulate(rows.tail(300), label="label", score="score").write(tmp_path / "ref.parquet")
    assert run_job(path, quiet=True).judged == 2  # every day read the reference
    expected = se.evaluate(rows.tail(300), label="label", score="score")["roc_auc"].item()
    assert checks_table(tmp_path)["baseline"].unique().to_list() == pytest.approx([expected])
    stored = sorted((tmp_path / "store" / "checks").glob("*.parquet"))
    stored[-1].write_bytes(b"not parquet")
    report = run_job(path, quiet=True)  # the damaged rows are judged again from the states
    assert report.judged == 1 and report.failures == []
    assert checks_table(tmp_path).height == 2 * len(SEGMENTS)


def test_each_row_that_did_not_pass_gets_its_own_reason():
    """A reason that depends on the check alone is formatted once per check and status, the
    others per row: each row's reason is the one formatted for it alone."""
    from streameval.jobs.checkconfig import read_checks
    from streameval.jobs.judge import _reason, verdicts
    from streameval.jobs.task import read_task

    items = [
        {"name": "floor", "metric": "roc_auc", "min": 0.7, "min_n": 100},
        {"name": "drop", "metric": "recall", "max_drop": 0.01, "baseline": "previous",
         "significance": 0.05, "severity": "warn"},
    ]  # fmt: skip
    task = read_task("job.toml", {"kind": "binary", "label": "y", "score": "p", "by": ["g"]})
    checks = {c.name: c for c in read_checks("job.toml", items, task, "day", ".")}
    statuses = [None, "too_small", "no_baseline", "undefined", "undefined", "no_data", None]
    rows = pl.DataFrame(
        {
            "check": ["floor", "floor", "drop", "drop", "floor", "drop", "drop"] * 3,
            "severity": ["error", "error", "warn", "warn", "error", "warn", "warn"] * 3,
            "status": statuses * 3,
            "value": [0.6, 0.9, 0.5, None, 0.4, None, 0.3] * 3,
            "baseline": [None, None, None, 0.5, None, None, 0.6] * 3,
            "baseline_n": [n for k in range(3) for n in (None, None, None, 40, None, 17 + k, 90)],
            "difference": [None, None, None, None, None, None, -0.3] * 3,
            "tolerance": [None, None, None, None, None, None, 0.01] * 3,
            "p_adjusted": [None, None, None, None, None, None, 0.001] * 3,
            "_bound": [True, False, False, False, False, False, False] * 3,
            "_drop": [False, False, False, False, False, False, True] * 3,
        },
        schema_overrides={"baseline_n": pl.Int64},
    )
    got = verdicts(rows, checks)
    assert got["status"].to_list()[:7] == [
        "fail", "too_small", "no_baseline", "undefined", "undefined", "no_data", "warn"
    ]  # fmt: skip
    dropped = [False] * 6 + [True]
    want = [
        None if r["status"] == "pass" else _reason(r | {"_dropped": d}, checks[r["check"]])
        for r, d in zip(got.iter_rows(named=True), dropped * 3, strict=True)
    ]
    assert got["reason"].to_list() == want
    assert len(set(want[:7])) == 7  # (each status its own reason)


def test_a_failed_write_of_a_days_checks_stops_the_run(tmp_path, monkeypatch):
    """A day's check rows are written while the next days are judged: a write that fails
    stops the run with its error (not a run that looks complete), and the next run judges
    every day again into one file each, the table whole."""
    from streameval.jobs.store import Store

    write_days(tmp_path, 8)
    path = job(tmp_path, '[[checks]]\nmetric = "roc_auc"\nmin = 0.5\n')
    write = Store.write_rows
    failing = (START + timedelta(days=5)).isoformat()

    def full_disk(self, rows, folder, label, digest):
        if failing in label:
            raise OSError(28, "No space left on device")
        return write(self, rows, folder, label, digest)

    monkeypatch.setattr(Store, "write_rows", full_disk)
    with pytest.raises(OSError, match="No space left"):
        run_job(path, quiet=True)
    monkeypatch.setattr(Store, "write_rows", write)
    assert run_job(path, quiet=True).judged == 8
    table = checks_table(tmp_path)
    assert table["day"].n_unique() == 8 and table.height == 8 * len(SEGMENTS)
    assert len(list((tmp_path / "store" / "checks").glob("*.parquet"))) == 8
