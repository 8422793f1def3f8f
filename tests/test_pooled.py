"""Sliding pools of day states: any sequence of day sets equals merging those days.

The pools a job's ``history`` baselines read (:mod:`streameval.kernels.pooled`,
:mod:`streameval.jobs.pools`) add and take away days and slices; whatever the order of those
moves, the pooled counts must equal those of :func:`streameval.merge` of the days it holds
(exactly, per bucket), its float sums the merged ones per group (to 1e-12), and its metric
table (from the pool's runs) and score drift the merged state's.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streameval as se
from streameval.jobs.pools import DayPools, PooledState
from streameval.kernels import compiled
from streameval.state import drift_table
from streameval.stats.drift import Counted, Sorted, drift

SEGMENTS = ["a", "b", "c", None]


def day_states(
    seed: int, days: int, precision: object, key: str, optional: bool = False
) -> list[se.State]:
    """Day states of tied, imbalanced scores; a segment is missing on some days.

    ``optional``: some labels are null (kept as unlabeled rows).
    """
    rng = np.random.default_rng(seed)
    out = []
    for d in range(days):
        n = int(rng.integers(1, 40))
        seg = rng.choice(SEGMENTS[: 1 + d % 4], n)
        frame = pl.DataFrame(
            {
                "segment": pl.Series(seg.tolist(), dtype=pl.String),
                "label": (rng.random(n) < rng.uniform(0.05, 0.9)).astype(np.int8),
                "score": np.round(rng.random(n) ** 3, int(rng.integers(1, 5))),
            }
        )
        if optional:
            frame = frame.with_columns(
                pl.when(pl.Series(rng.random(n) < 0.3))
                .then(None)
                .otherwise(pl.col("label"))
                .alias("label")
            )
        if key == "int":
            frame = frame.with_columns(
                pl.col("segment").replace_strict({"a": 1, "b": 2, "c": 3}, return_dtype=pl.Int32)
            )
        labels = "optional" if optional else "required"
        state = se.accumulate(
            frame, label="label", score="score", by="segment", precision=precision, labels=labels
        )
        out.append(state)
    return out


def same_table(got: pl.DataFrame, want: pl.DataFrame, order: list[str]) -> None:
    """Equal tables: the same rows (by ``order``), counts exactly, float sums to 1e-12."""
    got, want = got.sort(order, nulls_last=False), want.sort(order, nulls_last=False)
    assert got.columns == want.columns and got.schema == want.schema
    assert got.select(order).equals(want.select(order))
    for c in got.columns[len(order) :]:
        a, b = got[c].to_numpy(), want[c].to_numpy()
        if got.schema[c].is_integer():
            assert np.array_equal(a, b), c
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=c)


@pytest.mark.skipif(compiled.loops() is None, reason="the compiled loops are off")
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    precision=st.sampled_from(["exact", 4, 11]),
    key=st.sampled_from(["string", "int"]),
    optional=st.booleans(),
    sliding=st.booleans(),
    split=st.booleans(),
    moves=st.lists(
        st.tuples(
            st.lists(st.integers(0, 7), min_size=1, max_size=6, unique=True),
            st.dictionaries(st.integers(0, 7), st.sampled_from(["a", "b", "c", None])),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_a_pool_moved_anywhere_equals_the_merge_of_its_days(
    seed, precision, key, optional, sliding, split, moves
):
    """Table, metric table and score drift against it: as the merge of the days it holds.

    ``sliding``: the pool moved along the index; else each history's tables summed as they
    are (a run judging one or two days). ``split``: every day's rows added to a pool by two
    threads, half each (as a day of many rows is).
    """
    import streameval.kernels.pooled as pooled

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pooled, "SPLIT_ROWS", 2 if split else pooled.SPLIT_ROWS)
        pooled_as_merged(seed, precision, key, optional, sliding, moves)


def pooled_as_merged(
    seed: int, precision: object, key: str, optional: bool, sliding: bool, moves: list
) -> None:
    """The property of :func:`test_a_pool_moved_anywhere_equals_the_merge_of_its_days`."""
    states = day_states(seed, 8, precision, key, optional)
    pools = DayPools(lambda j: states[j], len(states), sliding)
    others = DayPools(lambda j: states[j], len(states), not sliding)
    for members, out in moves:
        members = sorted(members)
        keyed = states[0].table.schema["segment"]
        left = {
            j: pl.DataFrame(
                {"segment": [s if key == "string" or s is None else "abc".index(s) + 1]},
                schema={"segment": keyed},
            )
            for j, s in out.items()
            if j in members
        }
        kept = [
            s.table.join(left[j], on="segment", how="anti", nulls_equal=True)
            if j in left
            else s.table
            for j, s in ((j, states[j]) for j in members)
        ]
        pooled = pools.state(members, left)
        if not sliding and not any(t.height for t in kept):
            assert pooled is None  # (no rows to sum: merged)
            continue
        assert isinstance(pooled, PooledState)
        merged = se.merge([se.State(states[0].spec, t) for t in kept])
        table = merged.table
        ints = [c for c in table.columns[2:] if table.schema[c].is_integer()]
        floats = [c for c in table.columns[2:] if c not in ints]
        counts = table.select("segment", "bucket", *ints)
        same_table(pooled._pooled.counts().cast(counts.schema), counts, ["segment", "bucket"])
        totals = table.group_by("segment").agg(pl.col(floats).sum())
        if floats:
            same_table(pooled._pooled.group_totals(), totals, ["segment"])
        same_table(pooled.table, table, ["segment", "bucket"])  # (merged when asked for)
        # the other way of pooling (summed, or slid) gives the same sums, bit for bit
        other = others.state(members, left)
        if other is None:  # (summed: no rows to sum)
            assert not any(t.height for t in kept)
            continue
        for part in ("counts", "group_totals"):  # (rows in the order of each one's codes)
            mine, theirs = (getattr(p._pooled, part)() for p in (pooled, other))
            order = mine.columns[: 2 if part == "counts" else 1]
            assert theirs.sort(order).equals(mine.sort(order)), part
        assert other.metrics(ci="wilson").equals(pooled.metrics(ci="wilson"))
        got = pooled.metrics(ci="wilson").sort("segment", nulls_last=False)
        want = merged.metrics(ci="wilson").sort("segment", nulls_last=False)
        assert got.columns == want.columns
        for c in got.columns[1:]:
            a, b = got[c].to_numpy(), want[c].to_numpy()
            np.testing.assert_allclose(
                a.astype(np.float64), b.astype(np.float64), rtol=1e-12, atol=1e-12, err_msg=c
            )
        current = states[-1]
        got, want = current.drift(pooled, bins=4), current.drift(merged, bins=4)
        assert got.columns == want.columns and got["segment"].equals(want["segment"])
        for c in got.columns[1:]:
            np.testing.assert_allclose(
                got[c].to_numpy().astype(np.float64),
                want[c].to_numpy().astype(np.float64),
                rtol=1e-12,
                atol=1e-12,
                err_msg=c,
            )
        # the histograms read from the index (buckets: its positions), bit for bit, and the
        # pool's counts read in place as the baseline (the slices left out for the moment)
        base, now = pools.histogram(members, left), pools.histogram([7], {})
        if not sliding or optional:  # (summed pools, rows without a label: merged)
            assert base is None and now is None
            continue
        assert base is not None and now is not None and base.coding is now.coding
        exact = states[0].spec.exact
        want = drift_table(current, merged, 4, every=True)
        read = drift(now, base, ["segment"], ["segment"], bins=4, exact=exact, every=True)
        assert read.equals(want)
        with pools.baseline(members, left) as counts:
            assert isinstance(counts, Counted if len(members) > 1 else Sorted)
            read = drift(now, counts, ["segment"], ["segment"], bins=4, exact=exact, every=True)
        assert read.equals(want)
        assert pools.histogram(members, left).mass.tolist() == base.mass.tolist()  # (put back)


@pytest.mark.parametrize("optional", [False, True])
def test_a_pooled_state_reads_the_pools_runs_not_its_table(optional):
    """The metric table comes from the pool's runs (and its rows without a label from the
    pool's counts): the table is never built for it."""
    states = day_states(3, 5, 11, "string", optional)
    pooled = DayPools(lambda j: states[j], len(states)).state([1, 2, 3], {})
    assert isinstance(pooled, PooledState)
    table = pooled.metrics(metrics=["roc_auc"], ci="wilson")
    assert pooled._built is None  # (the table was not needed)
    want = se.merge(states[1:4]).metrics(metrics=["roc_auc"], ci="wilson")
    assert table.equals(want)


@pytest.mark.parametrize("sliding", [True, False])
def test_weighted_states_are_merged_not_pooled(sliding):
    frame = pl.DataFrame(
        {"segment": ["a", "b"], "label": [0, 1], "score": [0.2, 0.7], "w": [1.0, 2.0]}
    )
    state = se.accumulate(frame, label="label", score="score", by="segment", weight="w")
    assert DayPools(lambda j: state, 2, sliding).state([0, 1], {}) is None


def test_a_jobs_history_checks_read_the_sliding_pools(tmp_path, monkeypatch):
    """Unweighted, each judged day's history comes from the pools (no merge of its days)."""
    from test_checks import job, write_days

    from streameval.jobs import pools, run_job

    made: list[object] = []
    state = pools.DayPools.state

    def spied(self, *args, **kwargs):
        out = state(self, *args, **kwargs)
        made.append(out)
        return out

    monkeypatch.setattr(pools.DayPools, "state", spied)
    write_days(tmp_path, 6, rows=40)
    checks = '[[checks]]\nmetric = "roc_auc"\nmax_drop = 0.5\nbaseline = "history"\ndays = 3\n'
    run_job(job(tmp_path, checks), quiet=True)
    assert len(made) == 5 and all(isinstance(s, PooledState) for s in made)


# -- rollup windows ------------------------------------------------------------------------


def _rollup_job(folder, source, precision, windows='["1d", "3d", "7d", "mtd"]'):
    """A binary job without weights: trailing windows (pooled) and a running one (merged).

    ``precision`` ``"optional"``: at 11 bits, with labels optional.
    """
    from jobs_support import write_job

    job = write_job(folder, source, windows=windows)
    setting = '11\nlabels = "optional"' if precision == "optional" else precision
    job.write_text(job.read_text().replace('precision = "exact"', f"precision = {setting}"))
    return job


def _write_days(source, days, precision, first=0):
    """Days ``first`` … ``days`` − 1 of binary predictions (labels optional: a fifth null)."""
    from jobs_support import write_day

    for day in range(first, days):
        folder = write_day(source, "binary", day, 120)
        if precision == "optional":
            file = folder / "part-0.parquet"
            frame = pl.read_parquet(file)
            unknown = pl.Series(np.random.default_rng(day).random(frame.height) < 0.2)
            label = pl.when(unknown).then(None).otherwise("label").alias("label")
            frame.with_columns(label).write_parquet(file)
    return source


def _rows(folder) -> pl.DataFrame:
    rows = pl.read_parquet(folder / "out" / "metrics", hive_partitioning=True)
    return rows.sort("segment", "window", "day", "threshold")


@pytest.mark.skipif(compiled.loops() is None, reason="the compiled loops are off")
@pytest.mark.parametrize("precision", ['"exact"', "11", "optional"])
def test_rollup_windows_pooled_slid_summed_or_merged_agree(tmp_path, monkeypatch, precision):
    """A first run slides its windows' pools, a nightly run sums its day's windows: the same
    rows, bit for bit, also where the index is built again as the days move on; merged
    windows (pools off) give the same counts and the same float sums to rounding."""
    from streameval.jobs import pools, run_job
    from streameval.kernels import pooled

    built, summed = [], []
    build, of_tables = pooled.DayIndex.build.__func__, pooled.Pooled.of_tables.__func__
    monkeypatch.setattr(
        pooled.DayIndex, "build", classmethod(lambda c, *a: built.append(1) or build(c, *a))
    )
    monkeypatch.setattr(
        pooled.Pooled, "of_tables", classmethod(lambda c, *a: summed.append(1) or of_tables(c, *a))
    )
    for kind in (pools.PooledState, pools.TaggedPools):  # (their tables are never merged)
        monkeypatch.setattr(kind, "table", property(lambda _: pytest.fail("a table merged")))
    first = tmp_path / "first"
    run_job(_rollup_job(first, _write_days(tmp_path / "all", 12, precision), precision), quiet=True)
    assert len(built) == 1 and not summed  # (one index: 12 days)
    want = _rows(first)

    # a nightly run: the last day's windows summed from the day tables, no index
    source = _write_days(tmp_path / "nightly", 11, precision)
    nightly = tmp_path / "nightly_job"
    run_job(_rollup_job(nightly, source, precision), quiet=True)
    built.clear()
    _write_days(source, 12, precision, first=11)
    assert run_job(_rollup_job(nightly, source, precision), quiet=True).processed == 1
    assert not built and summed
    assert _rows(nightly).equals(want)

    # an index of a few days at a time (twice the widest window's), built again as the
    # windows move on
    monkeypatch.setattr(pools, "INDEX_DAYS", 2)
    built.clear()
    small = tmp_path / "small"
    run_job(_rollup_job(small, tmp_path / "all", precision, '["1d", "3d", "mtd"]'), quiet=True)
    assert len(built) > 1
    assert _rows(small).equals(want.filter(pl.col("window") != "7d"))

    # merged, not pooled
    monkeypatch.setattr(pools, "poolable", lambda spec: False)
    merged = tmp_path / "merged"
    run_job(_rollup_job(merged, tmp_path / "all", precision), quiet=True)
    same_table(_rows(merged), want, ["segment", "window", "day", "threshold"])


@pytest.mark.skipif(compiled.loops() is None, reason="the compiled loops are off")
def test_tagged_pools_finalize_as_their_tagged_tables():
    """Pooled states finalized together, each tagged: as the state of their tagged tables."""
    from dataclasses import replace

    from streameval.jobs.pools import DayRuns, TaggedPools

    states = day_states(11, 6, 11, "string")
    pools = DayPools(lambda j: states[j], len(states))
    parts = [
        (pools.state([0, 1, 2], {}), pl.DataFrame({"w": ["3d"], "end": [2]})),
        (pools.state([3, 4], {}), pl.DataFrame({"w": ["2d"], "end": [4]})),
        (DayRuns(states[5]), pl.DataFrame({"w": ["1d"], "end": [5]})),
    ]
    spec = replace(states[0].spec, keys=("segment", "w", "end"))
    tagged = TaggedPools(spec, parts, keep=[True, False, True])
    got = tagged.metrics(ci="wilson")
    kept = tagged.grouped()  # (the aggregates of the parts kept, alone)
    assert [g is not None for g in kept] == [True, False, True]
    assert all("_var" in g.frame.columns for g in kept if g is not None)
    table = pl.concat(
        [se.merge([states[j] for j in m]).table.with_columns(w=pl.lit(w), end=pl.lit(e, pl.Int64))
         for m, w, e in (([0, 1, 2], "3d", 2), ([3, 4], "2d", 4), ([5], "1d", 5))]
    )  # fmt: skip
    same_table(tagged.table, table.select(tagged.table.columns), ["segment", "w", "end", "bucket"])
    want = se.State(spec, table.select(tagged.table.columns)).metrics(ci="wilson")
    same_table(got, want, ["segment", "w", "end"])


@pytest.mark.skipif(compiled.loops() is None, reason="the compiled loops are off")
@pytest.mark.parametrize("key", ["string", "int"])
def test_a_days_histogram_on_the_index_is_its_own_in_any_row_order(key):
    """A day's score histogram read from the index (its rows' positions, sorted when the
    table's rows are not in word order) holds the state's own buckets, rows and groups: its
    buckets are positions on the index, whose words are the group's and the bucket's."""
    from streameval.kernels.pooled import DayIndex
    from streameval.tasks.binary import state as binary_state

    states = day_states(7, 4, 11, key)
    shuffled = [s.table.sample(fraction=1.0, shuffle=True, seed=i) for i, s in enumerate(states)]
    spec = states[0].spec
    index = DayIndex.build(shuffled, spec, list(binary_state.merge_ops(spec)))
    assert index is not None
    for day, state in enumerate(states):
        assert not np.all(np.diff(index.at[day]) > 0) or state.table.height < 3
        got = Sorted.of_weighed(index.weighed(day), index.coding.groups, ["segment"], index)
        want = se.state.score_histogram(state)
        bits = np.uint64(index.coding.score.bits)
        words = index.words[got.bucket]
        buckets = index.coding.score.decode(words & ((np.uint64(1) << bits) - np.uint64(1)))
        spans = np.diff(got.starts)
        owners = np.repeat(np.arange(spans.size), spans)
        codes = index.coding.groups.decode(words >> bits)[0].to_list()
        assert codes == [got.keys["segment"][int(g)] for g in owners]
        assert got.keys.sort("segment").equals(want.keys.sort("segment"))

        def groups(h: Sorted, bucket: np.ndarray) -> dict[object, tuple[list, list]]:
            spans = zip(h.keys["segment"], h.starts[:-1], h.starts[1:], strict=True)
            return {g: (bucket[a:b].tolist(), h.mass[a:b].tolist()) for g, a, b in spans}

        assert groups(got, buckets) == groups(want, want.bucket)


def test_a_pools_sums_in_16_32_or_64_bits_are_the_same(monkeypatch):
    """A pool keeps its sums in 16 or 32 bits where no sum at a position can pass 2^15 − 1
    or 2^31 − 1 (less memory a walk of the pool reads), else in 64: the same pooled sums,
    metrics and drift whatever the width."""
    import streameval.kernels.pooled as pooled

    states = day_states(5, 8, 11, "string")
    members, left = [1, 2, 3, 4, 5], {3: pl.DataFrame({"segment": ["b"]})}
    seen = {}
    for narrowest, narrow in ((pooled.NARROWEST, pooled.NARROW), (0, pooled.NARROW), (0, 0)):
        monkeypatch.setattr(pooled, "NARROWEST", narrowest)
        monkeypatch.setattr(pooled, "NARROW", narrow)
        pools = DayPools(lambda j: states[j], len(states), True)
        state = pools.state(members, left)
        assert isinstance(state, PooledState)
        now = pools.histogram([7], {})
        with pools.baseline(members, left) as counts:
            assert isinstance(counts, Counted)
            width = counts.pos.dtype.itemsize
            read = drift(now, counts, ["segment"], ["segment"], bins=4, exact=False, every=True)
        seen[width] = (state._pooled.counts(), state.metrics(ci="wilson"), read)
    assert set(seen) == {2, 4, 8}  # (one pool of each width)
    for width in (4, 8):
        for a, b in zip(seen[2], seen[width], strict=True):
            assert a.equals(b)


@st.composite
def counted_pools(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """A pool's counts on an index (long runs without rows, heavy positions) and a day's
    positions on it, by group."""
    groups = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(0, 1_500), min_size=groups, max_size=groups))
    starts = np.cumsum([0, *sizes]).astype(np.int64)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = int(starts[-1])
    empty = draw(st.floats(0.0, 0.99))  # (the share of positions without rows)
    heavy = rng.random(size) < 0.05
    pos = np.where(rng.random(size) < empty, 0, rng.integers(0, 3, size) * (1 + 40 * heavy))
    neg = np.where(pos > 0, rng.integers(0, 2, size), rng.integers(0, 2, size))
    neg = np.where(rng.random(size) < empty, 0, neg)
    current = np.flatnonzero(rng.random(size) < draw(st.floats(0.0, 0.2)))
    cur_starts = np.searchsorted(current, starts).astype(np.int64)
    mass = rng.integers(1, 5, current.size).astype(np.float64)
    return starts, pos.astype(np.int32), neg.astype(np.int32), current, cur_starts, mass


@settings(max_examples=150, deadline=None)
@given(counted_pools(), st.sampled_from([0, 2, 3, 7, 10, 50]), st.booleans())
def test_a_counted_baseline_walks_as_its_histogram(pool, bins, exact):
    """A pool's counts read in place (runs of positions summed within a bin) give the same
    drift, bit for bit, as the same baseline as a histogram walked bucket by bucket; without
    bins (0), the same KS statistic and bound as with them, and no PSI, JS distance or bins."""
    from streameval.kernels.drift import group_drift

    starts, pos, neg, current, cur_starts, mass = pool
    groups = np.arange(starts.size - 1, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(pos.astype(np.int64) + neg)])
    rows = cum[starts[1:]] - cum[starts[:-1]]  # (each group's rows)
    counted = group_drift(
        cur_starts, current, mass, groups, starts, pos[:0], pos, bins, exact, 1e-4, neg, rows
    )
    held = np.flatnonzero(pos.astype(np.int64) + neg > 0)  # (positions with rows: buckets)
    sorted_ = group_drift(
        cur_starts, current, mass, groups, np.searchsorted(held, starts).astype(np.int64),
        held, (pos[held].astype(np.int64) + neg[held]).astype(np.float64), bins, exact, 1e-4,
    )  # fmt: skip
    for a, b in zip(counted, sorted_, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    if not bins:
        binned = group_drift(
            cur_starts, current, mass, groups, starts, pos[:0], pos, 7, exact, 1e-4, neg, rows
        )
        for a, b in zip(counted[2:4], binned[2:4], strict=True):  # (KS statistic, bound)
            assert np.array_equal(a, b, equal_nan=True)
        assert all(np.isnan(counted[k]).all() for k in (0, 1, 4))  # (PSI, JS, bins)


def test_a_day_with_two_rows_at_a_position_is_not_pooled_in_16_bits():
    """A day whose rows share a (group, bucket) word counts their sum, not its largest
    value, toward a position's bound: 2 × 20,000 rows at one position do not wrap."""
    from streameval.bucketing import EXACT_BITS
    from streameval.kernels.pooled import DayIndex, Pool
    from streameval.spec import Spec

    spec = Spec(kind="binary", keys=("g",), precision=EXACT_BITS)
    days = [
        pl.DataFrame({"g": ["a", "a"], "bucket": [5, 5], "pos": [20_000, 20_000], "neg": [1, 2]}),
        pl.DataFrame({"g": ["a"], "bucket": [5], "pos": [3], "neg": [1]}),
    ]
    index = DayIndex.build(days, spec, ["pos", "neg"])
    assert index is not None and index.sum_type() is not np.int16
    runs = Pool(index).move([0, 1]).pooled().runs()
    assert runs.pos.tolist() == [40_003] and runs.neg.tolist() == [4]


def test_a_day_with_a_row_that_counts_no_row_is_not_indexed():
    """A pool tells the positions that hold rows by their sums, so a day with a row whose
    counts are all 0 (or one below 0) is not indexed: its states are merged instead."""
    from streameval.bucketing import EXACT_BITS
    from streameval.kernels.pooled import DayIndex
    from streameval.spec import Spec

    spec = Spec(kind="binary", keys=("g",), precision=EXACT_BITS)
    day = pl.DataFrame({"g": ["a", "b"], "bucket": [5, 6], "pos": [1, 0], "neg": [0, 1]})
    assert DayIndex.build([day, day], spec, ["pos", "neg"]) is not None
    for pos, neg in (([1, 0], [0, 0]), ([1, -1], [0, 2])):
        odd = day.with_columns(pos=pl.Series(pos), neg=pl.Series(neg))
        assert DayIndex.build([day, odd], spec, ["pos", "neg"]) is None
