"""Optional labels: rows whose label has not arrived count in the score histogram only.

``labels="optional"`` keeps rows with a null label out of every labelled metric (their
group's metrics equal those of the labelled rows alone) and in the score histogram (drift
equals that of every row) and ``n_unlabeled``, on every kernel path, chunked, weighted,
tied; a job with ``labels = "optional"`` recomputes a partition when its labels land.
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import kernel_path
from streameval.errors import InputError
from streameval.jobs import run_job


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any]:
    """Groups, 0/1 labels with nulls, tied scores, weights; chunks, precision, kernel path."""
    n = draw(st.integers(1, 60))
    score = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1)
    share = draw(st.sampled_from([0.0, 0.3, 0.8, 1.0]))
    data = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["a", "b", "c"]),
                st.integers(0, 1),
                st.floats(0, 1).map(lambda u: u < share),
                score,
                st.sampled_from([0.5, 1.0, 3.0]) | st.floats(1e-3, 10),
            ),
            min_size=n,
            max_size=n,
        )
    )
    g, y, missing, p, w = zip(*data, strict=True)
    label = [None if m else v for v, m in zip(y, missing, strict=True)]
    frame = pl.DataFrame({"g": g, "y": label, "p": p, "w": w}, schema_overrides={"y": pl.Int64})
    return {
        "df": frame,
        "cuts": draw(st.integers(1, 4)),
        "weighted": draw(st.booleans()),
        "precision": draw(st.sampled_from(["exact", 6, None])),
        "path": draw(st.sampled_from(["all", "no-dense", "no-loops", "off"])),
    }


def chunked(df: pl.DataFrame, parts: int, **kwargs: Any) -> se.State:
    size = max(1, math.ceil(df.height / parts))
    pieces = [df.slice(i, size) for i in range(0, df.height, size)]
    return se.merge([se.accumulate(c, label="y", score="p", by="g", **kwargs) for c in pieces])


@settings(max_examples=40, deadline=None)
@given(rows())
def test_unlabeled_rows_count_in_the_histogram_and_no_metric(case: dict[str, Any]) -> None:
    df = case["df"]
    kwargs: dict[str, Any] = {"precision": case["precision"]}
    if case["weighted"]:
        kwargs["weight"] = "w"
    with kernel_path(case["path"]):
        state = chunked(df, case["cuts"], labels="optional", **kwargs)
        labelled = df.filter(pl.col("y").is_not_null())
        every = df.with_columns(pl.col("y").fill_null(0))
        want = (
            se.accumulate(labelled, label="y", score="p", by="g", **kwargs)
            if labelled.height
            else None
        )
        whole = se.accumulate(every, label="y", score="p", by="g", **kwargs)
    assert state.spec.unlabeled
    table = state.metrics()
    counts = df.group_by("g").agg(pl.col("y").is_null().sum().alias("n_unlabeled")).sort("g")
    assert table.select("g", "n_unlabeled").rows() == counts.rows()
    assert table.columns[:3] == ["g", "n", "n_unlabeled"]
    # the labelled rows' metrics, exactly; a group without any: n 0 and null metrics
    seen = table.filter(pl.col("n") > 0).drop("n_unlabeled")
    if want is not None:
        assert_frame_equal(seen, want.metrics(), rel_tol=1e-12, abs_tol=1e-12)
    empty = table.filter(pl.col("n") == 0)
    assert empty.height == table.height - seen.height
    for name in ("roc_auc", "accuracy", "precision", "recall", "log_loss"):
        assert empty[name].null_count() == empty.height
    # the score histogram holds every row: drift as that of all the rows
    reference = se.accumulate(every, label="y", score="p", **kwargs)
    same_drift(state.drift(reference), whole.drift(reference))
    # and a state of optional labels serves as a baseline too
    same_drift(whole.drift(state), whole.drift(whole))


def same_drift(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """Equal drift tables, sums in another order aside (the JS distance: its square)."""
    square = pl.col("js_distance") ** 2
    got, expected = (t.with_columns(square) for t in (got, expected))
    assert_frame_equal(got, expected, rel_tol=1e-12, abs_tol=1e-12)


def test_a_state_of_optional_labels_survives_write_read_merge_and_coarsen(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 5000
    y = rng.integers(0, 2, n).astype(float)
    y[rng.random(n) < 0.3] = np.nan
    df = pl.DataFrame({"g": rng.choice(["a", "b"], n), "y": y, "p": rng.random(n)})
    df = df.with_columns(pl.col("y").fill_nan(None).cast(pl.Int64))
    state = se.accumulate(df, label="y", score="p", by="g", labels="optional")
    state.write(tmp_path / "s.parquet")
    back = se.read_state(tmp_path / "s.parquet")
    assert back.spec == state.spec and back.table.equals(state.table)
    halves = se.merge(
        [
            se.accumulate(d, label="y", score="p", by="g", labels="optional")
            for d in (df[:2000], df[2000:])
        ]
    )
    assert_frame_equal(halves.metrics(), state.metrics())
    coarse = state.coarsen(4)
    assert coarse.metrics()["n_unlabeled"].to_list() == state.metrics()["n_unlabeled"].to_list()
    with pytest.raises(se.SpecMismatchError, match="unlabeled"):
        state.merge(se.accumulate(df.drop_nulls(), label="y", score="p", by="g"))
    # the spec of a state with required labels serialises as before the option existed
    assert "unlabeled" not in se.accumulate(df.drop_nulls(), label="y", score="p").spec.to_json()


def test_hive_files_and_a_job_recompute_a_day_when_its_labels_land(tmp_path: Path) -> None:
    start = date(2026, 10, 1)
    frames = {}
    for d in range(3):
        rng = np.random.default_rng(d)
        y = rng.integers(0, 2, 400)
        frame = pl.DataFrame(
            {"segment": rng.choice(["a", "b"], 400), "label": y, "score": rng.random(400)}
        )
        if d == 2:  # the last day's labels have not arrived
            frame = frame.with_columns(pl.lit(None, pl.Int64).alias("label"))
        folder = tmp_path / "preds" / f"day={(start + timedelta(days=d)).isoformat()}"
        folder.mkdir(parents=True)
        frame.write_parquet(folder / "part-0.parquet")
        frames[d] = (folder, frame, y)
    state = se.accumulate(tmp_path / "preds", label="label", score="score", by="day",
                          labels="optional")  # fmt: skip
    table = state.metrics().sort("day")
    assert table["n"].to_list() == [400, 400, 0] and table["n_unlabeled"].to_list() == [0, 0, 400]
    job = tmp_path / "job.toml"
    job.write_text(
        '[source]\npaths = ["preds"]\npartition_key = "day"\n\n[task]\nlabel = "label"\n'
        'score = "score"\nby = ["segment"]\nlabels = "optional"\n\n[store]\npath = "store"\n\n'
        '[[outputs]]\npath = "daily.csv"\nwindows = ["1d"]\n\n[checking]\noutput = "checks"\n\n'
        '[[checks]]\nmetric = "psi"\nmax = 0.25\nbaseline = "previous"\n'
    )
    run_job(job, quiet=True)
    daily = pl.read_csv(tmp_path / "daily.csv").sort("day", "segment")
    last = daily.filter(pl.col("day") == str(start + timedelta(days=2)))
    assert last["n"].to_list() == [0, 0] and last["n_unlabeled"].sum() == 400
    assert last["roc_auc"].null_count() == 2
    checks = pl.read_parquet(tmp_path / "checks" / "**" / "*.parquet")
    day2 = checks.filter(pl.col("day") == start + timedelta(days=2)).sort("segment")
    assert day2["n"].sum() == 400 and set(day2["status"]) == {"pass"}  # scores as before
    # the labels land: the day's file changes, and the next run recomputes it
    folder, frame, y = frames[2]
    frame.with_columns(pl.Series("label", y)).write_parquet(folder / "part-0.parquet")
    report = run_job(job, quiet=True)
    assert report.processed == 1
    daily = pl.read_csv(tmp_path / "daily.csv").sort("day", "segment")
    last = daily.filter(pl.col("day") == str(start + timedelta(days=2)))
    assert last["n"].sum() == 400 and last["n_unlabeled"].to_list() == [0, 0]


def test_errors_name_what_is_wrong() -> None:
    df = pl.DataFrame({"y": [0, 1, None], "p": [0.1, 0.9, 0.5], "q": [0.2, 0.3, 0.4]})
    with pytest.raises(InputError, match="null labels"):
        se.accumulate(df, label="y", score="p")
    with pytest.raises(InputError, match="labels='required' or 'optional'"):
        se.accumulate(df, label="y", score="p", labels="maybe")
    with pytest.raises(InputError, match="labels= to be"):
        se.accumulate(df, label="y", score="p", labels=True)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="with a binary task"):
        se.accumulate(df, label="y", prediction="p", task="regression", labels="optional")
    with pytest.raises(InputError, match="without bootstrap"):
        se.accumulate(df, label="y", score="p", labels="optional", bootstrap=5)
    # a bad score among the unlabeled rows is still bad input, named as such
    bad = df.with_columns(pl.Series("p", [0.1, 0.9, float("nan")]))
    with pytest.raises(InputError, match="finite scores"):
        se.accumulate(bad, label="y", score="p", labels="optional")
    # drop_nulls drops null scores but keeps the rows without a label
    holes = pl.DataFrame({"y": [0, 1, None, 1], "p": [0.1, 0.9, 0.5, None]})
    with pytest.warns(UserWarning, match="dropped 1 rows with a null in p"):
        state = se.accumulate(holes, label="y", score="p", labels="optional", drop_nulls=True)
    assert state.metrics().select("n", "n_unlabeled").row(0) == (2, 1)


def test_jackknife_leaves_out_only_units_with_labels() -> None:
    rng = np.random.default_rng(3)
    days = []
    for d in range(4):
        n = 40
        label = pl.Series(rng.integers(0, 2, n))
        if d == 3:  # the last day's labels have not arrived
            label = pl.Series([None] * n, dtype=pl.Int64)
        days.append(pl.DataFrame({"day": d, "y": label, "p": rng.random(n)}))
    df = pl.concat(days)
    options: dict[str, Any] = {"ci": "jackknife", "jackknife": "day"}
    state = se.accumulate(df, label="y", score="p", by="day", labels="optional")
    labelled = se.accumulate(df.drop_nulls("y"), label="y", score="p", by="day")
    got, want = state.metrics(**options), labelled.metrics(**options)
    for name in ("roc_auc", "roc_auc_lo", "roc_auc_hi", "accuracy_lo", "accuracy_hi"):
        assert got[name].item() == pytest.approx(want[name].item(), abs=1e-12), name


@pytest.mark.parametrize("layout", ["hive", "file", "glob"])
def test_files_give_the_state_of_the_polars_queries(
    tmp_path: Path, layout: str, monkeypatch: Any
) -> None:
    rng = np.random.default_rng(4)
    frames = []
    for d in range(3):
        n = 3000
        label = pl.Series(rng.integers(0, 2, n)).scatter(list(range(d, n, 3)), None)
        group = pl.Series(rng.choice(["a", "b", "c"], n)).replace("c", None)
        frame = pl.DataFrame(
            {"g": group, "y": label, "p": rng.random(n).round(3), "w": rng.random(n)}
        )
        frames.append(frame)
        if layout == "hive":
            folder = tmp_path / f"day=2026-10-0{d + 1}"
            folder.mkdir()
            frame.write_parquet(folder / "part-0.parquet")
        else:
            frame.write_parquet(tmp_path / f"part-{d}.parquet")
    source = {"hive": tmp_path, "file": tmp_path / "part-1.parquet", "glob": tmp_path / "*.parquet"}
    # small shards, so that a file is read as several
    monkeypatch.setattr("streameval.source.SHARD_ROWS", 500)
    for weight in (None, "w"):
        for precision in ("exact", None):
            kwargs: dict[str, Any] = {
                "label": "y", "score": "p", "by": "g", "weight": weight, "precision": precision,
                "labels": "optional",
            }  # fmt: skip
            fast = se.accumulate(str(source[layout]), **kwargs)
            with kernel_path("off"):
                slow = se.accumulate(str(source[layout]), **kwargs)
            keys = [*fast.keys, "bucket"]
            assert_frame_equal(
                fast.table.sort(keys), slow.table.sort(keys), check_exact=False, rel_tol=1e-12
            )


def test_a_label_column_of_nulls_only() -> None:
    df = pl.DataFrame({"g": ["a", "b"], "p": [0.2, 0.7]}).with_columns(y=pl.lit(None))
    state = se.accumulate(df, label="y", score="p", by="g", labels="optional")
    assert state.metrics().select("n", "n_unlabeled").rows() == [(0, 1), (0, 1)]
    later = pl.DataFrame({"g": ["a", "b"], "p": [0.3, 0.6], "y": [0, 1]})
    both = state.merge(se.accumulate(later, label="y", score="p", by="g", labels="optional"))
    assert both.metrics().select("n", "n_unlabeled").rows() == [(1, 1), (1, 1)]
    with pytest.raises(InputError, match="boolean, numeric or string, got Null"):
        se.accumulate(df, label="y", score="p")
