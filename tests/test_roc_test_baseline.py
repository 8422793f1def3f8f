"""``State.roc_test(column, baseline)`` takes the baseline as the column's values are written."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

import streameval as se
from streameval.errors import InputError


@pytest.fixture
def state() -> se.State:
    days = [date(2026, 10, 1), date(2026, 10, 2)]
    df = pl.DataFrame(
        {
            "day": [d for d in days for _ in range(6)],
            "y": [0, 0, 1, 1, 0, 1] * 2,
            "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7, 0.3, 0.2, 0.6, 0.5, 0.1, 0.9],
        }
    )
    return se.accumulate(df, label="y", score="p", by="day")


@pytest.mark.parametrize("baseline", ["2026-10-01", date(2026, 10, 1)])
def test_a_date_key_takes_a_day_string_or_a_date(state, baseline):
    out = state.roc_test("day", baseline)
    assert out["day"].to_list() == [date(2026, 10, 2)]
    assert out["baseline"].to_list() == [date(2026, 10, 1)]
    assert out["baseline"].dtype == pl.Date


def test_a_baseline_of_the_wrong_kind_says_what_is_expected(state):
    with pytest.raises(InputError, match=r"expected baseline to be a value of 'day' \(Date\)"):
        state.roc_test("day", "first day")
    with pytest.raises(InputError, match=r"expected baseline to be a value of 'day'.*2026-10-01"):
        state.roc_test("day", "2026-09-30")


def test_previous_compares_each_day_with_the_day_before_per_segment():
    import numpy as np

    rng = np.random.default_rng(4)
    n = 3000
    y = rng.integers(0, 2, n)
    df = pl.DataFrame(
        {
            "day": pl.Series([date(2026, 10, d) for d in (1, 2, 3, 5)])[rng.integers(0, 4, n)],
            "seg": rng.choice(["a", "b"], n),
            "y": y,
            "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1),
        }
    )
    state = se.accumulate(df, label="y", score="p", by=["seg", "day"], precision="exact")
    out = state.roc_test("day", "previous")
    days = [date(2026, 10, d) for d in (1, 2, 3, 5)]
    assert out.height == 6  # three comparisons per segment
    for row in out.iter_rows(named=True):
        before = days[days.index(row["day"]) - 1]
        assert row["baseline"] == before
        fixed = state.roc_test("day", before).filter(
            (pl.col("seg") == row["seg"]) & (pl.col("day") == row["day"])
        )
        same = fixed.row(0, named=True)  # the same test as with that day as baseline
        assert same == pytest.approx(row, rel=1e-12)
    strings = se.accumulate(
        df.with_columns(pl.col("seg").replace("b", "previous")), label="y", score="p",
        by=["seg", "day"],
    )  # fmt: skip
    with pytest.raises(InputError, match="'previous' is also a value of 'seg'"):
        strings.roc_test("seg", "previous")
