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
