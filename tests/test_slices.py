"""Worst-slice discovery: every slice's metric against the rest, p-values, ranking, errors.

Each slice's and each rest's numbers are checked against scikit-learn (exact mode) or
``se.evaluate`` at the same precision on the slice's rows, the p-values against their
definition and statsmodels' ``multipletests``, for random chunked, weighted, tied,
imbalanced inputs read in several batches.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr
from sklearn.metrics import roc_auc_score
from statsmodels.stats.multitest import multipletests

import streameval as se
import streameval.slices as slices_module
from streameval.cli import main
from streameval.slices import counts as counts_module
from tests.reference import binary_frames, chunks, close

Z95 = 1.959963984540054


def _in_slice(row: dict[str, Any]) -> pl.Expr:
    cond = pl.lit(True)
    for f, v in zip(row["features"], row["values"], strict=True):
        cond &= pl.col(f).is_null() if v is None else pl.col(f).cast(pl.String) == v
    return cond


def _sklearn_auc(part: pl.DataFrame, weighted: bool) -> float | None:
    y = part["y"].to_numpy()
    w = part["w"].to_numpy() if weighted else None
    kept = np.ones(len(y), bool) if w is None else w > 0
    if len(set(y[kept])) < 2:
        return None
    return float(roc_auc_score(y, part["p"].to_numpy(), sample_weight=w))


def _source(df: pl.DataFrame, cuts: list[int]) -> pl.LazyFrame:
    """The rows as a LazyFrame of chunks (read in several batches)."""
    return pl.concat([c.lazy() for c in chunks(df, cuts) if c.height] or [df.lazy()])


@st.composite
def sliced_frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[int], bool]:
    """``binary_frames`` with four more features: a String with nulls (and the string
    ``"null"``), an Int64 with nulls, 0 and its extremes (numbered by value), a Boolean and a
    UInt8 with nulls (by a direct table, as ``g`` when it is an Int16)."""
    df, cuts, weighted = draw(binary_frames())
    n = df.height
    a = draw(st.lists(st.sampled_from(["x", "null", None]), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from([0, 1, -(2**63), 2**63 - 1, None]), min_size=n, max_size=n))
    c = draw(st.lists(st.sampled_from([True, False, None]), min_size=n, max_size=n))
    d = draw(st.lists(st.sampled_from([0, 255, None]), min_size=n, max_size=n))
    columns = {
        "a": pl.Series(a, dtype=pl.String),
        "b": pl.Series(b, dtype=pl.Int64),
        "c": pl.Series(c, dtype=pl.Boolean),
        "d": pl.Series(d, dtype=pl.UInt8),
    }
    return df.with_columns(**columns), cuts, weighted


def _expected_slices(df: pl.DataFrame, features: list[str], depth: int, min_n: int) -> int:
    """How many slices have ``min_n`` rows or more, and as many outside them."""
    sets = [[f] for f in features]
    sets += [[f, g] for i, f in enumerate(features) for g in features[i + 1 :]] * (depth == 2)
    counts = [df.group_by(s).len()["len"] for s in sets]
    return sum(int(((c >= min_n) & (df.height - c >= min_n)).sum()) for c in counts)


@settings(max_examples=40, deadline=None)
@given(sliced_frames(), st.sampled_from([1, 2]))
def test_every_slice_matches_sklearn_in_exact_mode(drawn: Any, depth: int) -> None:
    df, cuts, weighted = drawn
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(slices_module, "BATCH_ROWS", 3)  # several batches: codes, buckets grow
        mp.setattr(counts_module, "STAGED_ROWS", 5)  # counted in several flushes
        out = se.find_slices(
            _source(df, cuts),
            label="y",
            score="p",
            features=["g", "a", "b", "c", "d"],  # (10 pairs: the four of g added together,
            # then four of three first features, then two alone)
            depth=depth,
            weight="w" if weighted else None,
            precision="exact",
            min_n=1,
            every=True,
        )
    assert out.height == _expected_slices(df, ["g", "a", "b", "c", "d"], depth, 1)
    if depth == 1:
        assert (out["features"].list.len() == 1).all()
    rows = out.iter_rows(named=True)
    singles = {r["slice"]: r["difference"] for r in rows if len(r["features"]) == 1}
    for row in out.filter(pl.col("parent").is_not_null()).iter_rows(named=True):
        assert row["parent"] in row["slice"]
        assert row["parent_difference"] == singles[row["parent"]]
    for row in out.iter_rows(named=True):
        mine, rest = df.filter(_in_slice(row)), df.filter(~_in_slice(row).fill_null(False))
        assert row["n"] == mine.height and row["rest_n"] == rest.height
        assert row["n"] >= 1 and row["rest_n"] >= 1
        positives = (mine["y"] * mine["w"]).sum() if weighted else mine["y"].sum()
        assert close(row["positives"], float(positives))
        assert close(row["roc_auc"], _sklearn_auc(mine, weighted))
        assert close(row["rest"], _sklearn_auc(rest, weighted))
        assert row["roc_auc_error"] is None or row["roc_auc_error"] == 0.0


@settings(max_examples=12, deadline=None)
@given(sliced_frames(), st.sampled_from([3, 6]))
def test_bucketed_slices_and_intervals_match_evaluate(drawn: Any, bits: int) -> None:
    """The AUC, its DeLong interval and bound equal se.evaluate's on the slice's rows."""
    df, cuts, weighted = drawn
    out = se.find_slices(
        _source(df, cuts),
        label="y",
        score="p",
        features=["a", "b"],
        weight="w" if weighted else None,
        precision=bits,
        min_n=1,
        every=True,
    )
    kwargs = {"weight": "w" if weighted else None, "precision": bits, "ci": "wilson"}
    for row in out.iter_rows(named=True):
        mine = df.filter(_in_slice(row))
        want = se.evaluate(mine, label="y", score="p", **kwargs).row(0, named=True)
        assert close(row["roc_auc"], want["roc_auc"])
        if want["roc_auc"] is not None:
            assert close(row["roc_auc_error"], want["roc_auc_error"])
        for column in ("roc_auc_lo", "roc_auc_hi"):
            assert close(row[column], want[column], 1e-7), column


def test_p_values_are_one_sided_normal_and_adjusted_as_statsmodels() -> None:
    df = _planted(6000, seed=3)
    out = se.find_slices(df, label="y", score="p", features=["a", "b"], min_n=50, every=True)
    for row in out.iter_rows(named=True):
        mine, rest = df.filter(_in_slice(row)), df.filter(~_in_slice(row))
        a = se.evaluate(mine, label="y", score="p", precision=6, ci="wilson").row(0, named=True)
        b = se.evaluate(rest, label="y", score="p", precision=6, ci="wilson").row(0, named=True)
        sd = math.sqrt(a["roc_auc_se"] ** 2 + b["roc_auc_se"] ** 2)
        assert close(row["difference"], b["roc_auc"] - a["roc_auc"])
        assert close(row["p_value"], float(ndtr(-row["difference"] / sd)), 1e-7)
        assert close(row["difference_hi"] - row["difference"], Z95 * sd, 1e-7)
    for method, name in (("bh", "fdr_bh"), ("holm", "holm")):
        got = se.find_slices(
            df, label="y", score="p", features=["a", "b"], min_n=50, every=True,
            correction=method,
        )  # fmt: skip
        expected = multipletests(got["p_value"].to_numpy(), method=name)[1]
        np.testing.assert_allclose(got["adjusted_p"].to_numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_proportion_at_a_threshold_matches_evaluate(weighted: bool) -> None:
    df = _planted(4000, seed=5).with_columns(w=pl.Series(np.linspace(0.1, 3, 4000)))
    w = "w" if weighted else None
    out = se.find_slices(
        df, label="y", score="p", features=["a", "b"], metric="recall", threshold=0.3,
        weight=w, min_n=20, every=True,
    )  # fmt: skip
    assert out.height > 0
    for row in out.iter_rows(named=True):
        parts = ((df.filter(_in_slice(row)), "recall"), (df.filter(~_in_slice(row)), "rest"))
        for part, column in parts:
            want = se.evaluate(part, label="y", score="p", threshold=0.3, weight=w, ci="wilson")
            assert close(row[column], want["recall"][0])
            if column == "recall":
                assert close(row["recall_lo"], want["recall_lo"][0])
                assert close(row["recall_hi"], want["recall_hi"][0])
        x = df.filter(_in_slice(row))
        y, p = x["y"].to_numpy(), x["p"].to_numpy()
        weights = x["w"].to_numpy() if weighted else np.ones(len(y))
        trials = weights[y == 1].sum()
        recall = weights[(y == 1) & (p >= 0.3)].sum() / trials
        rest = df.filter(~_in_slice(row))
        ry, rp = rest["y"].to_numpy(), rest["p"].to_numpy()
        rw = rest["w"].to_numpy() if weighted else np.ones(len(ry))
        rest_trials = rw[ry == 1].sum()
        rest_recall = rw[(ry == 1) & (rp >= 0.3)].sum() / rest_trials
        sd = math.sqrt(
            recall * (1 - recall) / trials + rest_recall * (1 - rest_recall) / rest_trials
        )
        assert close(row["difference"], rest_recall - recall)
        assert close(row["p_value"], float(ndtr(-(rest_recall - recall) / sd)), 1e-7)


def _planted(n: int, seed: int, weak: bool = True) -> pl.DataFrame:
    """Three features; the model is poor where a = x and b = 1 (when ``weak``)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z"], n)
    b = rng.integers(0, 3, n)
    c = rng.choice(["u", "v"], n)
    y = rng.integers(0, 2, n)
    noise = np.where((a == "x") & (b == 1) & weak, 4.0, 1.0)
    p = 1 / (1 + np.exp(-(2 * y - 1 + noise * rng.normal(size=n))))
    return pl.DataFrame({"a": a, "b": b, "c": c, "y": y, "p": p})


def test_a_planted_pair_tops_the_list_and_its_parents_do_not_hide_it() -> None:
    df = _planted(30000, seed=1)
    out = se.find_slices(df, label="y", score="p", features=["a", "b", "c"], min_n=200)
    assert out["slice"][0] == "a=x, b=1"
    assert out["rank"].to_list() == list(range(1, out.height + 1))
    assert out["difference"].is_sorted(descending=True)
    assert out["significant"].all()
    # a pair is listed only where it is worse than its worse parent
    pairs = out.filter(pl.col("parent").is_not_null())
    assert (pairs["difference"] > pairs["parent_difference"]).all()
    every = se.find_slices(
        df, label="y", score="p", features=["a", "b", "c"], min_n=200, inherited=True
    )
    assert every.height >= out.height
    assert set(out["slice"]) <= set(every["slice"])


def test_no_change_lists_nothing_at_the_false_discovery_level() -> None:
    df = _planted(30000, seed=2, weak=False)
    out = se.find_slices(df, label="y", score="p", features=["a", "b", "c"], min_n=200)
    assert out.height == 0
    judged = se.find_slices(
        df, label="y", score="p", features=["a", "b", "c"], min_n=200, every=True
    )
    assert judged.height == 3 + 3 + 2 + 9 + 6 + 6  # every single and pair slice
    assert judged["adjusted_p"].min() > 0.05


def test_min_n_leaves_small_slices_and_their_complements_out() -> None:
    df = _planted(3000, seed=4)
    out = se.find_slices(df, label="y", score="p", features=["a", "b"], min_n=400, every=True)
    assert (out["n"] >= 400).all() and (out["rest_n"] >= 400).all()
    counts = df.group_by("a", "b").len()
    assert out.filter(pl.col("features").list.len() == 2).height == (counts["len"] >= 400).sum()


def test_the_sources_give_the_same_slices(tmp_path: Any) -> None:
    df = _planted(5000, seed=6).with_columns(day=pl.lit(date(2026, 11, 1)))
    df = pl.concat([df, df.with_columns(day=pl.lit(date(2026, 11, 2)))])
    kwargs: dict[str, Any] = {"label": "y", "score": "p", "features": ["a", "b", "day"]}
    want = se.find_slices(df, min_n=100, every=True, **kwargs)
    df.write_parquet(tmp_path / "one.parquet")
    df.write_parquet(tmp_path / "hive", partition_by="day")
    for i, part in enumerate(df.partition_by("c")):
        (tmp_path / "glob").mkdir(exist_ok=True)
        part.write_parquet(tmp_path / "glob" / f"{i}.parquet")
    sources = [
        tmp_path / "one.parquet",
        tmp_path / "hive",
        str(tmp_path / "glob" / "*.parquet"),
        pl.scan_parquet(tmp_path / "one.parquet"),
        df.to_arrow(),
    ]
    for source in sources:
        got = se.find_slices(source, min_n=100, every=True, **kwargs)
        key = ["slice"]
        a, b = got.sort(key), want.sort(key)
        assert a["slice"].to_list() == b["slice"].to_list(), source
        assert a["n"].to_list() == b["n"].to_list()
        np.testing.assert_allclose(a["roc_auc"].to_numpy(), b["roc_auc"].to_numpy(), rtol=1e-12)


def test_feature_types_and_null_values_make_slices() -> None:
    n = 600
    rng = np.random.default_rng(7)
    pick = rng.integers(0, 3, n)
    df = pl.DataFrame(
        {
            "s": pl.Series([["p", "q", None][i] for i in rng.integers(0, 3, n)], dtype=pl.String),
            "cat": pl.Series(rng.choice(["k", "l"], n)).cast(pl.Categorical),
            "enum": pl.Series(rng.choice(["m", "o"], n)).cast(pl.Enum(["m", "o"])),
            "flag": rng.random(n) < 0.5,
            "i8": pl.Series(rng.integers(0, 3, n)).cast(pl.Int8),
            "u16": pl.Series([[0, 2**16 - 1, None][i] for i in pick], dtype=pl.UInt16),
            "u64": pl.Series([[0, 2**64 - 1, None][i] for i in pick], dtype=pl.UInt64),
            "day": pl.Series([date(2026, 1, 1 + i % 2) for i in range(n)]),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    features = ["s", "cat", "enum", "flag", "i8", "u16", "u64", "day"]
    out = se.find_slices(df, label="y", score="p", features=features, depth=1, min_n=1, every=True)
    assert out.height == 3 + 2 + 2 + 2 + 3 + 3 + 3 + 2
    assert "s is null" in out["slice"].to_list() and "flag=true" in out["slice"].to_list()
    assert "day=2026-01-02" in out["slice"].to_list()
    assert {"u16=65535", "u16 is null", "u64=18446744073709551615"} <= set(out["slice"])
    for row in out.iter_rows(named=True):
        assert row["n"] == df.filter(_in_slice(row)).height, row["slice"]


def test_a_hash_collision_reads_the_data_again_with_other_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    df = _planted(2000, seed=8)
    want = se.find_slices(df, label="y", score="p", features=["a", "b"], min_n=10, every=True)
    real = counts_module.SliceCounts._number
    seen: list[tuple[int, int]] = []

    def colliding(self: Any, batch: Any, i: int, out: Any) -> Any:
        seen.append(self.seeds)
        if self.seeds == counts_module.SEEDS[0]:
            raise counts_module.Collision(self.features[i])
        return real(self, batch, i, out)

    monkeypatch.setattr(counts_module.SliceCounts, "_number", colliding)
    got = se.find_slices(df, label="y", score="p", features=["a", "b"], min_n=10, every=True)
    assert counts_module.SEEDS[1] in seen
    assert got.equals(want)


@pytest.mark.parametrize("dtype", [pl.Int16, pl.Int64, pl.UInt64])
def test_values_numbered_chunk_by_chunk_are_numbered_as_one_column(dtype: Any) -> None:
    """A batch's feature in several chunks gets the codes it gets rechunked (each chunk's
    rows from its own start), nulls code 0, a value the same code in every batch."""
    rng = np.random.default_rng(5)
    values = [[3, 0, None, 7][i] for i in rng.integers(0, 4, 40)]
    parts = [pl.Series("x", values[a:b], dtype=dtype) for a, b in ((0, 13), (13, 14), (14, 40))]
    chunked = pl.concat(parts, rechunk=False)
    assert chunked.n_chunks() == 3
    got = []
    for column in (chunked, chunked.rechunk()):
        counts = counts_module.SliceCounts(["x"], 1, False, 6, (), 10, 1 << 20, types=[dtype])
        counts._make_room(80)
        counts.tables[0] = counts._by_value(column, 0, 0)
        counts.tables[0] = counts._by_value(column.reverse(), 0, 40)  # (a second batch)
        got.append(counts.staged_codes[0][:80].copy())
        counts.close()
    assert got[0].tolist() == got[1].tolist()
    codes = got[0]
    doubled = values + values[::-1]
    assert [c == 0 for c in codes] == [v is None for v in doubled]
    assert len({(v, int(c)) for v, c in zip(doubled, codes, strict=True)}) == 4


def test_a_collision_of_the_first_hash_is_seen_by_the_second() -> None:
    counts = counts_module.SliceCounts(["a"], 1, False, 6, (), 10, 1 << 20)
    batch = pl.DataFrame(
        {"a": ["x", "y"], "_g0": pl.Series([5, 5], dtype=pl.UInt64),
         "_h0": pl.Series([7, 8], dtype=pl.UInt64)}
    )  # fmt: skip
    with pytest.raises(counts_module.Collision):
        counts._number(batch, 0, 0)
    counts.close()


def test_a_weighted_rest_without_positives_has_no_auc() -> None:
    """The rest's sums are the whole's minus the slice's: weighted, a class absent from the
    rest is known from its rows, not from a difference of float sums."""
    rng = np.random.default_rng(13)
    n = 20000
    a, b = rng.integers(0, 30, n), rng.integers(0, 2, n)
    y = np.where(b == 1, rng.integers(0, 2, n), 0)
    df = pl.DataFrame({"a": a, "b": b, "y": y, "p": rng.random(n), "w": rng.random(n) * 10})
    for precision in (0, 6):
        for metric in ("roc_auc", "recall"):
            out = se.find_slices(
                df, label="y", score="p", features=["a", "b"], weight="w", metric=metric,
                precision=precision, min_n=1, every=True,
            )  # fmt: skip
            row = out.filter(pl.col("slice") == "b=1").row(0, named=True)
            rest = se.evaluate(df.filter(pl.col("b") == 0), label="y", score="p", weight="w")
            assert row["rest"] == rest[metric][0], (precision, metric)  # (None; recall: 0.0)
            assert row["p_value"] is None, (precision, metric)


def test_features_named_like_metric_columns_and_a_single_feature_at_depth_2() -> None:
    df = _planted(3000, seed=14).rename({"a": "n", "b": "precision"})
    out = se.find_slices(
        df, label="y", score="p", features=["n", "precision"], min_n=100, every=True
    )
    assert {"n=x", "precision=1", "n=x, precision=1"} <= set(out["slice"])
    alone = se.find_slices(df, label="y", score="p", features=["n"], min_n=1, every=True)
    assert sorted(alone["slice"]) == ["n=x", "n=y", "n=z"]


def test_slices_that_cannot_be_tested_come_last() -> None:
    df = _planted(3000, seed=15).with_columns(
        y=pl.when(pl.col("a") == "z").then(0).otherwise(pl.col("y"))
    )
    out = se.find_slices(df, label="y", score="p", features=["a"], metric="recall", every=True)
    assert out["slice"][-1] == "a=z" and out["p_value"][-1] is None


def test_empty_data_gives_an_empty_table() -> None:
    df = pl.DataFrame({"a": ["x"], "y": [1], "p": [0.5]}).clear()
    out = se.find_slices(df, label="y", score="p", features=["a"], every=True)
    assert out.height == 0 and {"slice", "roc_auc", "adjusted_p", "rank"} <= set(out.columns)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"features": ["x"]}, "expected the feature 'x' to be a string"),
        ({"depth": 3}, "expected depth=1"),
        ({"metric": "f1"}, "analytic variance"),
        ({"features": ["y"]}, "expected features other than the columns read"),
        ({"features": ["nope"]}, "nope"),
        ({"features": []}, "expected one or more distinct features"),
        ({"min_n": 0}, "expected min_n="),
        ({"correction": "bonferroni"}, "expected correction="),
        ({"significance": 1.5}, "expected significance="),
        ({"max_values": 2}, "expected at most 2 distinct values in the feature 'a'"),
        ({"memory": 1000}, "expected the slices' score histograms to fit in 1,000 bytes"),
        ({"threshold": float("nan")}, "expected threshold= to be one finite number"),
        ({"threshold": [0.3, 0.5]}, "expected threshold= to be one finite number"),
        ({"label": ["y"]}, "expected label= to be one column name"),
        ({"weight": 1}, "expected weight= to be a column name"),
        ({"significance": None}, "expected significance= to be a number"),
        ({"features": ["a", "a"]}, "expected one or more distinct features"),
        ({"features": [1]}, "expected features= to be a column name"),
    ],
)
def test_mistakes_are_named(kwargs: dict[str, Any], message: str) -> None:
    df = _planted(500, seed=9).with_columns(x=pl.col("p") * 2)
    options: dict[str, Any] = {"label": "y", "score": "p", "features": ["a", "b"], **kwargs}
    with pytest.raises(se.InputError, match=message):
        se.find_slices(df, **options)


def test_a_spark_dataframe_is_refused_with_a_way_round(spark_classic: Any) -> None:
    frame = spark_classic.createDataFrame(_planted(100, seed=12).to_pandas())
    with pytest.raises(se.InputError, match="Spark DataFrame; hint: write it as Parquet"):
        se.find_slices(frame, label="y", score="p", features=["a"])


def test_rows_that_cannot_be_evaluated_are_named_or_dropped() -> None:
    df = _planted(500, seed=10).with_columns(
        y=pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("y"))
    )
    with pytest.raises(se.InputError, match="null"):
        se.find_slices(df, label="y", score="p", features=["a"])
    with pytest.warns(UserWarning, match="dropped 1 rows"):
        out = se.find_slices(
            df, label="y", score="p", features=["a"], drop_nulls=True, min_n=1, every=True
        )
    assert out["n"].sum() == 499


def test_the_command_line_lists_and_writes_the_slices(tmp_path: Any, capsys: Any) -> None:
    df = _planted(20000, seed=11).with_columns(x=pl.col("p") * 2)
    df.write_parquet(tmp_path / "preds.parquet")
    args = ["slices", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p"]
    assert main([*args, "--features", "a", "b", "c", "--min-n", "200"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("rank,slice,roc_auc")
    assert printed[1].startswith('1,"a=x, b=1",')
    out = tmp_path / "worst.parquet"
    assert main([*args, "--features", "a", "b", "--output", str(out)]) == 0
    want = se.find_slices(df, label="y", score="p", features=["a", "b"])
    assert pl.read_parquet(out).equals(want)
    assert main([*args, "--features", "x"]) == 2
    assert "expected the feature 'x' to be a string" in capsys.readouterr().err
