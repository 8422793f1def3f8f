"""The sort kernel (streameval.kernels) gives the Polars path's exact states and metrics."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import kernel_path
from streameval.pipeline import prepare, unit_runs
from streameval.tasks.common import Inputs

SCORES = {
    "probabilities": st.floats(0, 1, allow_nan=False),
    "logits": st.floats(-40, 40, allow_nan=False),
    "ties": st.sampled_from([-0.0, 0.0, 0.1, 0.5, 0.5000000000000001, 0.9, 1.0]),
    "wide": st.sampled_from([-1e300, -2.5, 0.0, 1e-300, 0.3, 7.0, 1e300]),
}
# (No subnormal weights: where a group's whole weight is subnormal, the Polars finalize's
# ratios come out inf or NaN — it divides such numbers as 0 — and the compiled one's right.)
WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 3.0]) | st.floats(
    0, 10, allow_nan=False, allow_subnormal=False
)


@st.composite
def frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[str], str | None]:
    """(rows with keys g, h, d, label y, score p and weight w; group keys; weight name)."""
    n = draw(st.integers(1, 60))
    score = SCORES[draw(st.sampled_from(sorted(SCORES)))]
    rate = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    texts = draw(st.sampled_from([["a"], ["a", "b", "c"], ["a", "b", None], [None]]))
    numbers = draw(st.sampled_from([[7], [-3, 0, 7], [-3, 0, 7, None]]))
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(texts),
                st.sampled_from(numbers),
                st.sampled_from([dt.date(2026, 1, 1), dt.date(2026, 1, 2)]),
                st.floats(0, 1).map(lambda u: u < rate),
                score,
                WEIGHTS,
            ),
            min_size=n,
            max_size=n,
        )
    )
    g, h, d, y, p, w = (list(c) for c in zip(*rows, strict=True))
    df = pl.DataFrame(
        {"g": g, "h": h, "d": d, "y": y, "p": p, "w": w},
        schema={
            "g": pl.String,
            "h": pl.Int16,
            "d": pl.Date,
            "y": pl.Boolean,
            "p": pl.Float64,
            "w": pl.Float64,
        },
    )
    if draw(st.booleans()):
        df = df.with_columns(pl.col("y").cast(pl.Int8))
    keys = draw(st.lists(st.sampled_from(["g", "h", "d"]), unique=True, max_size=3))
    weight = draw(st.sampled_from([None, "w"]))
    return df, keys, weight


def both(call: Callable[[], Any]) -> tuple[Any, Any]:
    """``call()`` with the sort kernel, then with the Polars path only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fast = call()
        with kernel_path("off"):
            slow = call()
    return fast, slow


def assert_same_state(fast: se.State, slow: se.State, weighted: bool) -> None:
    """Same spec, columns, types and rows; weighted sums equal to 1e-12 relative."""
    assert fast.spec == slow.spec
    order = [*fast.keys, "bucket"]
    left = fast.table.sort(order, nulls_last=False)
    right = slow.table.sort(order, nulls_last=False)
    assert left.schema == right.schema
    assert_frame_equal(left, right, check_exact=not weighted, rel_tol=1e-12, abs_tol=0)


def assert_same_metrics(fast: pl.DataFrame, slow: pl.DataFrame) -> None:
    """Same columns, types, rows and integers; floats equal to 1e-12 relative."""
    assert_frame_equal(fast, slow, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


@given(frames())
def test_state_and_metrics_match_the_polars_path(frame):
    df, keys, weight = frame
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision="exact")
    assert_same_state(*both(lambda: se.accumulate(df, **kw)), weighted=weight is not None)
    thresholds = [0.0, 0.3, 0.5, 1.0, 1e300]
    fast, slow = both(lambda: se.evaluate(df, threshold=thresholds, **kw))
    assert_same_metrics(fast, slow)


@settings(max_examples=15)
@given(frames())
def test_hive_units_match_the_polars_path(tmp_path_factory, frame):
    df, keys, weight = frame
    root = tmp_path_factory.mktemp("hive")
    df.write_parquet(root, partition_by="d")
    keys = ["d", *(k for k in keys if k != "d")]
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision="exact")
    assert_same_state(*both(lambda: se.accumulate(root, **kw)), weighted=weight is not None)
    fast, slow = both(lambda: se.evaluate(root, threshold=[0.2, 0.5], **kw))
    assert_same_metrics(fast, slow)


def test_the_kernel_runs_on_hive_units(tmp_path):
    rng = np.random.default_rng(0)
    df = pl.DataFrame(
        {
            "g": rng.choice(["x", "y"], 1000),
            "day": rng.choice([1, 2], 1000),
            "y": rng.integers(0, 2, 1000),
            "p": rng.random(1000),
        }
    )
    df.write_parquet(tmp_path, partition_by="day")
    plan = prepare(tmp_path, Inputs(label="y", score="p", precision=52), by=["g", "day"])
    assert plan.units is not None
    runs = unit_runs(plan, plan.units[0])
    assert runs is not None
    rows = (df["day"] == plan.units[0].constants["day"]).sum()
    assert int(runs.pos.sum() + runs.neg.sum()) == rows


def test_scores_too_wide_to_pack_are_ranked_among_their_values():
    """Group bits plus a score range of all floats do not fit in 64 bits: ranks do."""
    n = 600
    df = pl.DataFrame(
        {
            "g": [f"s{i % 300}" for i in range(n)],
            "y": [i % 2 for i in range(n)],
            "p": [(-1.0) ** i * 10.0 ** (i % 600 - 300) for i in range(n)],
        }
    )
    plan = prepare(df, Inputs(label="y", score="p", precision=52), by="g")
    runs = unit_runs(plan)
    assert runs is not None and runs.score.values is not None and runs.score.bits == 10
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision="exact")
    assert_same_metrics(*both(lambda: se.evaluate(df, **kw)))


def test_wide_integer_keys_are_hashed_for_the_sort_too():
    df = pl.DataFrame({"g": [1, 2, 2], "y": [0, 1, 0], "p": [0.1, 0.4, 0.3]})
    plan = prepare(df, Inputs(label="y", score="p", precision=52), by="g")
    assert unit_runs(plan) is not None


def test_lazy_sources_are_read_in_shards_not_collected_whole():
    lf = pl.LazyFrame({"y": [0, 1], "p": [0.1, 0.4]})
    plan = prepare(lf, Inputs(label="y", score="p", precision=52))
    assert unit_runs(plan) is None  # (the whole source) …
    assert plan.units is not None and unit_runs(plan, plan.units[0]) is not None  # … its shard


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
def test_bad_scores_raise_as_the_polars_path(bad):
    df = pl.DataFrame({"y": [0, 1, 1], "p": [0.1, bad, 0.3]}, schema_overrides={"p": pl.Float64})
    messages = []
    for enabled in (True, False):
        with kernel_path("all" if enabled else "off"), pytest.raises(se.InputError) as err:
            se.evaluate(df, label="y", score="p", precision="exact")
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("distinct", [3, 5000])
@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical, pl.Enum])
def test_text_keys_match_the_polars_path(dtype, distinct):
    rng = np.random.default_rng(distinct)
    n = 20_000
    names = [f"k{i}" for i in range(distinct)] + [None]
    g = pl.Series("g", [names[i] for i in rng.integers(0, distinct + 1, n)])
    if dtype == pl.Enum:
        g = g.cast(pl.Enum([f"k{i}" for i in range(distinct)]))
    elif dtype == pl.Categorical:
        g = g.cast(pl.Categorical)
    # many groups leave fewer bits for the scores: keep them in one binade, close together
    p = np.round(rng.random(n), 3) if distinct < 100 else 0.5 + rng.integers(0, 99, n) * 2.0**-30
    df = pl.DataFrame({"g": g, "y": rng.integers(0, 2, n), "p": p})
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision="exact")
    assert unit_runs(prepare(df, Inputs(label="y", score="p", precision=52), by="g")) is not None
    assert_same_state(*both(lambda: se.accumulate(df, **kw)), weighted=False)
    assert_same_metrics(*both(lambda: se.evaluate(df, **kw)))


def test_binades_are_ranked_when_the_scores_span_too_many():
    rng = np.random.default_rng(7)
    n = 5000
    pool = np.array([-1e300, -3.5, -0.0, 0.0, 5e-324, 1e-300, 1e-5, 0.25, 0.5, 0.75, 1.0, 2e300])
    p = pool[rng.integers(0, pool.size, n)] * (1 + rng.integers(0, 3, n) * 2.0**-52)
    df = pl.DataFrame({"g": rng.integers(0, 50, n).astype(np.int16), "y": rng.integers(0, 2, n)})
    df = df.with_columns(pl.Series("p", p))
    runs = unit_runs(prepare(df, Inputs(label="y", score="p", precision=52), by="g"))
    assert runs is not None and runs.score.tops is not None
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision="exact")
    assert_same_state(*both(lambda: se.accumulate(df, **kw)), weighted=False)
    thresholds = [-1e301, -3.5, 0.0, 1e-300, 0.3, 0.5, 1.0, 3e300]
    assert_same_metrics(*both(lambda: se.evaluate(df, threshold=thresholds, **kw)))


@settings(max_examples=20, deadline=None)
@given(
    st.integers(1, 400),
    st.sampled_from([None, "w"]),
    st.sampled_from(["spread", "ties"]),
    st.integers(0, 2**32 - 1),
)
def test_scores_too_wide_to_pack_are_ranked(rows, weight, kind, seed):
    """Where group, binades and label pass 64 bits, scores are ranked, not left to Polars.

    2,000 groups take 11 bits, the label one, and a binade's 52 bits of mantissa the rest:
    scores over three binades or more do not pack as they are, even with the label apart.
    Scores whose keys share their low bits (a few powers of two) pack with those bits
    shifted off instead.
    """
    from unittest import mock

    from streameval.kernels.scorekeys import ScoreField

    fitted: list[Any] = []
    original = ScoreField.fit

    def recording(*args: Any) -> Any:
        fitted.append(original(*args))
        return fitted[-1]

    rng = np.random.default_rng(seed)
    if kind == "spread":
        p = 10.0 ** rng.uniform(-300, 300, rows) * rng.choice([-1.0, 1.0], rows)
    else:
        p = rng.choice([-1e300, -2.5, -0.0, 0.0, 1e-300, 0.3, 0.5, 1.0, 7.0, 1e300], rows)
    df = pl.DataFrame(
        {
            "g": np.append(np.arange(2000), rng.integers(0, 2000, rows))[-rows - 2000 :],
            "y": np.append(np.zeros(2000, np.int8), rng.integers(0, 2, rows)),
            "p": np.append(np.resize([0.25, 0.5, 4.0], 2000), p),  # three binades at least
            "w": np.append(np.ones(2000), rng.choice([0.0, 0.5, 2.0], rows)),
        }
    )
    kw: dict[str, Any] = dict(label="y", score="p", by="g", weight=weight, precision="exact")
    with mock.patch.object(ScoreField, "fit", staticmethod(recording)):
        fast, slow = both(lambda: se.accumulate(df, **kw))
    packed = [f for f, _ in filter(None, fitted) if f.values is not None or f.shift]
    assert packed  # (ranked, or shifted: not left to Polars)
    assert_same_state(fast, slow, weighted=weight is not None)
    thresholds = [0.0, 0.5, 1.0, 1e300]
    fast, slow = both(lambda: se.evaluate(df, threshold=thresholds, ci="wilson", **kw))
    assert_same_metrics(fast, slow)


def test_the_kernel_paths_variable_takes_named_paths_only(monkeypatch):
    df = pl.DataFrame({"y": [0, 1, 1], "p": [0.1, 0.7, 0.3]})
    monkeypatch.setenv("STREAMEVAL_KERNEL", "fast")
    with pytest.raises(se.InputError, match="STREAMEVAL_KERNEL to be one of all, no-dense"):
        se.evaluate(df, label="y", score="p")
    tables = []
    for value in ("all", "no-dense", "no-loops", "off"):
        monkeypatch.setenv("STREAMEVAL_KERNEL", value)
        tables.append(se.evaluate(df, label="y", score="p"))
    for table in tables[1:]:
        assert_frame_equal(table, tables[0], rel_tol=1e-12, abs_tol=1e-15)


@given(
    st.integers(-(2**62), 2**62),
    st.integers(1, 50),
    st.lists(st.integers(0, 2**12), min_size=1, max_size=40),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=10),
)
def test_a_score_field_shifts_off_the_bits_its_keys_share(low, shift, steps, probes):
    """Bucket keys share their low bits: the field drops them and keeps order and thresholds."""
    from streameval.kernels.scorekeys import ScoreField

    keys = np.array(sorted({low + (s << shift) for s in steps}), np.int64)
    span = int(keys[-1]) - int(keys[0])
    field = ScoreField.build(keys, int(keys[0]), int(keys[-1]), max(span.bit_length() - shift, 1))
    assert field is not None
    fields = field.encode(keys)
    assert field.shift >= shift or span == 0
    assert bool((field.decode(fields) == keys).all())
    assert bool((np.diff(fields.astype(np.float64)) > 0).all())
    for probe in [*probes, *keys.tolist(), *(k + 1 for k in keys.tolist())]:
        reach = field.offset(probe)  # the fields of keys >= probe, as _threshold_index reads it
        assert [int(f) >= reach for f in fields] == [int(k) >= probe for k in keys]
