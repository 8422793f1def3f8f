"""se.split: stratification, groups, determinism under reordering and chunking, TimeSeriesSplit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import TimeSeriesSplit

import streameval as se
from streameval.split.folds import NAMES
from streameval.split.keys import NULL_VALUE, STREAMS, add_key_hash, mix_int
from streameval.split.resample import poisson_cuts

MASK = (1 << 64) - 1
HALF = settings(max_examples=max(4, settings.default.max_examples // 2))


@st.composite
def labelled(draw: st.DrawFn, *, max_rows: int = 120):
    """A frame with a unique id (int or string), a class, a group and a seed."""
    n = draw(st.integers(1, max_rows))
    n_classes = draw(st.integers(1, 4))
    weights = draw(st.lists(st.integers(1, 10), min_size=n_classes, max_size=n_classes))
    classes = draw(
        st.lists(st.sampled_from(range(n_classes)), min_size=n, max_size=n)
        | st.just([i % n_classes for i in range(n)])
    )
    if draw(st.booleans()):  # skewed class shares
        pool = [c for c, w in enumerate(weights) for _ in range(w)]
        classes = [pool[i % len(pool)] for i in range(n)]
    ids = draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n, unique=True))
    df = pl.DataFrame(
        {
            "id": ids,
            "y": classes,
            "g": draw(st.lists(st.integers(0, max(1, n // 3)), min_size=n, max_size=n)),
        }
    )
    if draw(st.booleans()):
        df = df.with_columns(pl.col("id").cast(pl.String).str.replace("^", "row-"))
    return df, draw(st.integers(0, 2**64 - 1))


def shuffled_chunks(df: pl.DataFrame, seed: int) -> pl.LazyFrame:
    """The same rows in another order, as a lazy concatenation of chunks."""
    rows = df.sample(fraction=1.0, shuffle=True, seed=seed % 2**32)
    cut = [0, rows.height // 3, rows.height // 2, rows.height]
    return pl.concat([rows[a:b].lazy() for a, b in itertools.pairwise(cut)])


def by_id(df: pl.DataFrame, *columns: str) -> dict:
    return {row[0]: row[1:] for row in df.select("id", *columns).iter_rows()}


@given(labelled(), st.integers(2, 7))
def test_stratified_kfold_is_exact_within_one_row_per_stratum(data, k):
    df, seed = data
    out = se.split.kfold(df, k, seed=seed, by="id", stratify="y")
    counts = out.group_by("y", "fold").len()
    for (y,), part in counts.partition_by("y", as_dict=True).items():
        n = int((df["y"] == y).sum())
        got = dict(part.select("fold", "len").iter_rows())
        sizes = [got.get(f, 0) for f in range(k)]
        assert set(sizes) <= {n // k, -(-n // k)}, (y, sizes)
    totals = out["fold"].value_counts()["count"]
    assert df.height < k or totals.max() - totals.min() <= 1


@HALF
@given(labelled(), st.sampled_from([(0.5, 0.25, 0.25), (0.7, 0.3), {"a": 0.1, "b": 0.9}]))
def test_stratified_holdout_parts_within_one_row_of_their_share(data, fractions):
    df, seed = data
    out = se.split.holdout(df, fractions, seed=seed, by="id", stratify="y")
    if isinstance(fractions, dict):
        names, values = list(fractions), list(fractions.values())
    else:
        names, values = list(NAMES[len(fractions)]), list(fractions)
    for (_y,), part in out.partition_by("y", as_dict=True).items():
        got = part["split"].cast(pl.String).value_counts()
        got = dict(got.iter_rows())
        for name, share in zip(names, values, strict=True):
            assert abs(got.get(name, 0) - part.height * share) <= 1 + 1e-9


@HALF
@given(labelled(), st.integers(2, 5), st.booleans())
def test_groups_never_straddle_folds_or_parts(data, k, stratified):
    df, seed = data
    stratify = "y" if stratified else None
    folds = se.split.kfold(df, k, seed=seed, group="g", stratify=stratify)
    assert (folds.group_by("g").agg(pl.col("fold").n_unique())["fold"] == 1).all()
    parts = se.split.holdout(df, (0.5, 0.5), seed=seed, group="g", stratify=stratify)
    assert (parts.group_by("g").agg(pl.col("split").n_unique())["split"] == 1).all()
    repeated = se.split.repeated_kfold(df, k, 3, seed=seed, group="g", stratify=stratify)
    spread = repeated.group_by("repeat", "g").agg(pl.col("fold").n_unique())["fold"]
    assert (spread == 1).all()
    boot = se.split.bootstrap(df, 3, seed=seed, group="g")
    assert (boot.group_by("replicate", "g").agg(pl.col("in_bag").n_unique())["in_bag"] == 1).all()


@HALF
@given(labelled(), st.integers(2, 5), st.booleans())
def test_stratified_groups_balance_rows_within_one_group(data, k, per_group):
    """Groups of a class laid end to end and cut at 1/k …: each fold within one group's size."""
    df, seed = data
    if per_group:  # a class per group, as a patient's diagnosis
        df = df.with_columns(pl.col("y").first().over("g", order_by="id"))
    out = se.split.kfold(df, k, seed=seed, group="g", stratify="y")
    held = se.split.holdout(df, (0.5, 0.3, 0.2), seed=seed, group="g", stratify="y")
    counts = df.group_by("g", "y").len()
    modal = counts.group_by("g").agg(
        pl.col("y").filter(pl.col("len") == pl.col("len").max()), pl.col("len").sum().alias("n")
    )
    if (modal["y"].list.len() > 1).any():
        return  # ties are broken by the class hash: leave those out
    modal = modal.with_columns(pl.col("y").list.first().alias("stratum"))
    largest = modal["n"].max()
    for frame, column, shares in ((out, "fold", [1 / k] * k), (held, "split", [0.5, 0.3, 0.2])):
        parts = frame.group_by("g").agg(pl.col(column).first().to_physical())
        rows = modal.join(parts, on="g")
        for (_,), stratum in rows.partition_by("stratum", as_dict=True).items():
            total = stratum["n"].sum()
            for index, share in enumerate(shares):
                got = stratum.filter(pl.col(column) == index)["n"].sum()
                assert abs(got - total * share) <= largest + 1e-9, (column, index, got, total)


@HALF
@given(labelled(), st.integers(2, 6), st.booleans())
def test_assignment_ignores_row_order_and_chunks(data, k, stratified):
    df, seed = data
    lazy = shuffled_chunks(df, seed)
    stratify = "y" if stratified else None
    for split in (
        lambda f: se.split.kfold(f, k, seed=seed, by="id", stratify=stratify),
        lambda f: se.split.holdout(f, (0.6, 0.2, 0.2), seed=seed, by="id", stratify=stratify),
        lambda f: se.split.kfold(f, k, seed=seed, group="g", stratify=stratify),
        lambda f: se.split.repeated_kfold(f, k, [0, 2], seed=seed, by="id", stratify=stratify),
        lambda f: se.split.leave_one_out(f, by="id"),
    ):
        a, b = split(df), split(lazy).collect()
        assert a.sort(a.columns).equals(b.sort(b.columns))
    boot = se.split.bootstrap(df, 2, seed=seed, by="id")
    again = se.split.bootstrap(lazy, [1], seed=seed, by="id").collect()
    assert by_id(boot.filter(pl.col("replicate") == 1), "in_bag") == by_id(again, "in_bag")


def test_parquet_files_get_the_same_folds_as_the_frame(tmp_path):
    df = pl.DataFrame({"id": range(1000), "y": [i % 3 for i in range(1000)]})
    for i, part in enumerate(df.sample(fraction=1.0, shuffle=True, seed=4).iter_slices(300)):
        part.write_parquet(tmp_path / f"part-{i}.parquet")
    lazy = pl.scan_parquet(tmp_path / "*.parquet")
    for stratify in (None, "y"):
        a = se.split.kfold(df, 5, seed=9, by="id", stratify=stratify)
        b = se.split.kfold(lazy, 5, seed=9, by="id", stratify=stratify).collect()
        assert by_id(a, "fold") == by_id(b, "fold")


def test_the_hash_is_pinned():
    """The assignment is part of the data's history: it must not change between versions."""
    assert mix_int(0) == 0xE220A8397B1DCDAF
    ints = pl.DataFrame({"id": range(12)})
    assert se.split.kfold(ints, 3, seed=7, by="id")["fold"].to_list() == [
        2, 2, 1, 2, 1, 0, 2, 2, 2, 0, 1, 2,
    ]  # fmt: skip
    words = pl.DataFrame({"id": ["a", "b", "", "user-0000000000000001", None]})
    assert se.split.kfold(words, 4, seed=7, by="id")["fold"].to_list() == [0, 3, 3, 3, 3]


def _value(v) -> int:
    """The documented value hash, in plain Python: the specification of the Polars one."""
    if v is None:
        return NULL_VALUE
    if isinstance(v, int):
        return v & MASK
    data = v.encode().hex()
    chunks = [int(data[i : i + 14], 16) for i in range(0, len(data), 14)]
    total = sum(mix_int((c + mix_int(j)) & MASK) for j, c in enumerate(chunks)) & MASK
    return mix_int(total ^ len(v.encode()))


@given(
    st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1) | st.none(), st.text() | st.none())),
    st.integers(0, 2**64 - 1),
)
def test_the_hash_is_the_documented_function(rows, seed):
    df = pl.DataFrame(rows, schema={"a": pl.Int64, "b": pl.String}, orient="row")
    lf = add_key_hash(df.lazy(), df.schema, ["a", "b"], seed=seed, stream="kfold", role="id",
                      out="h")  # fmt: skip
    expected = []
    for a, b in rows:
        h = mix_int(seed ^ mix_int(STREAMS["kfold"]))
        for v in (_value(a), _value(b)):
            h = mix_int(h ^ v)
        expected.append(h)
    assert lf.collect()["h"].to_list() == expected


def test_a_key_hashes_alike_across_integer_widths_and_text_types():
    base = pl.DataFrame({"id": [1, 2, 300, -5], "s": ["x", "y", "z", "x"]})
    folds = se.split.kfold(base, 5, by="id")["fold"]
    for dtype in (pl.Int16, pl.Int32):
        assert se.split.kfold(base.with_columns(pl.col("id").cast(dtype)), 5, by="id")[
            "fold"
        ].equals(folds)
    text = se.split.kfold(base, 5, by="s")["fold"]
    cat = base.with_columns(pl.col("s").cast(pl.Categorical))
    assert se.split.kfold(cat, 5, by="s")["fold"].equals(text)


def test_hash_only_shares_are_right_in_expectation():
    n = 20_000
    df = pl.DataFrame({"id": range(n)})
    parts = se.split.holdout(df, (0.5, 0.25, 0.25), seed=1, by="id")["split"].value_counts()
    for name, share in [("train", 0.5), ("validation", 0.25), ("test", 0.25)]:
        got = parts.filter(pl.col("split") == name)["count"].item()
        assert abs(got - n * share) < 5 * math.sqrt(n * share * (1 - share))
    folds = se.split.kfold(df, 4, seed=1, by="id")["fold"].value_counts()["count"]
    assert (abs(folds - n / 4) < 5 * math.sqrt(n / 4 * 0.75)).all()
    exact = se.split.kfold(df, 7, seed=1, by="id", balanced=True)["fold"].value_counts()["count"]
    assert exact.max() - exact.min() <= 1
    held = se.split.holdout(df, (0.3, 0.7), by="id", balanced=True)["split"].value_counts()
    assert sorted(held["count"].to_list()) == [6000, 14000]


def test_bootstrap_counts_are_poisson_one():
    n = 100_000
    boot = se.split.bootstrap(pl.DataFrame({"id": range(n)}), 1, seed=2, by="id")
    counts = boot["in_bag"].value_counts().sort("in_bag")
    expected = np.diff([0.0, *poisson_cuts()[:4]]) * n
    got = counts["count"].to_numpy()[:4]
    assert (np.abs(got - expected) < 5 * np.sqrt(expected)).all()
    assert abs(boot["oob"].mean() - math.exp(-1)) < 0.005
    assert boot["in_bag"].dtype == pl.Int32 and boot["oob"].dtype == pl.Boolean


@given(
    st.integers(3, 30),
    st.integers(2, 5),
    st.none() | st.integers(1, 4),
    st.integers(0, 2),
    st.none() | st.integers(1, 6),
    st.integers(1, 3),
)
def test_time_split_is_time_series_split_over_distinct_values(n, splits, size, gap, most, dup):
    times = pl.DataFrame({"t": np.repeat(np.arange(n) * 10, dup)}).sample(
        fraction=1.0, shuffle=True, seed=n
    )
    try:
        reference = list(
            TimeSeriesSplit(splits, test_size=size, gap=gap, max_train_size=most).split(np.zeros(n))
        )
    except ValueError:
        with pytest.raises(se.InputError):
            se.split.time_split(times, "t", splits, test_size=size, gap=gap, max_train_size=most)
        return
    out = se.split.time_split(
        times.lazy(), "t", splits, test_size=size, gap=gap, max_train_size=most
    ).collect()
    assert out["split"].n_unique() == splits
    for i, (train, test) in enumerate(reference):
        for role, index in (("train", train), ("test", test)):
            got = out.filter((pl.col("split") == i) & (pl.col("role") == role))["t"] // 10
            assert sorted(got.to_list()) == sorted(np.repeat(index, dup).tolist())


def test_leave_one_out_numbers_keys_in_order():
    df = pl.DataFrame({"id": [30, 10, 20], "g": ["b", "a", "b"]})
    assert se.split.leave_one_out(df, by="id")["fold"].to_list() == [2, 0, 1]
    assert se.split.leave_one_out(df, group="g")["fold"].to_list() == [1, 0, 1]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda df: se.split.kfold(df, 5, by="idd"), "did you mean 'id'"),
        (lambda df: se.split.kfold(df, 5), "either by="),
        (lambda df: se.split.kfold(df, 5, by="id", group="g"), "either by="),
        (lambda df: se.split.kfold(df, 1, by="id"), "k to be an integer ≥ 2"),
        (lambda df: se.split.kfold(df, 5, by="id", stratify="x"), "discrete stratify"),
        (lambda df: se.split.kfold(df, 5, by="id", name="y"), "already a column"),
        (lambda df: se.split.kfold(df, 5, by="l"), "key column of integers"),
        (lambda df: se.split.holdout(df, (0.5, 0.4), by="id"), "summing to 1"),
        (lambda df: se.split.holdout(df, (0.5, 0.2, 0.2, 0.1), by="id"), "name the parts"),
        (lambda df: se.split.repeated_kfold(df, 3, 0, by="id"), "repeats to be ≥ 1"),
        (lambda df: se.split.bootstrap(df, [1.5], by="id"), "list of integers"),
        (lambda df: se.split.time_split(df, "id", 9), r"at least n_splits \+ 1"),
        (lambda df: se.split.time_split(df, "id", 2, gap=3), "room for a training set"),
        (lambda df: se.split.kfold(df.to_dict(), 5, by="id"), "DataFrame or LazyFrame"),
        (lambda df: se.split.kfold(df, 5, by="id", seed=1.5), "seed to be an integer"),
    ],
)
def test_bad_arguments_say_what_was_expected(call, message):
    df = pl.DataFrame({"id": range(5), "y": [0, 1, 0, 1, 0], "x": [0.5] * 5, "l": [[1]] * 5})
    with pytest.raises(se.InputError, match=message):
        call(df)
