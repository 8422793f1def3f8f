"""Every window's rows say how many partition days were merged into them (``days``)."""

from __future__ import annotations

import json
import shutil
from datetime import date, timedelta

import polars as pl
import pytest
from jobs_support import START, write_job, write_log

from streameval.jobs import run_job

WINDOWS = '["1d", "7d", "mtd", "ytd", "all"]'
OUTPUTS = (
    f'[[outputs]]\npath = "out/metrics"\nwindows = {WINDOWS}\n\n'
    f'[[outputs]]\npath = "out/metrics.csv"\nwindows = {WINDOWS}\n\n'
    f'[[outputs]]\npath = "out/metrics.json"\nwindows = {WINDOWS}\n'
)


def expected_days(present: list[date], window: str, end: date) -> int:
    """Distinct partition days of ``present`` inside ``window`` ending at ``end``."""
    first = {
        "1d": end,
        "7d": end - timedelta(days=6),
        "mtd": end.replace(day=1),
        "ytd": end.replace(month=1, day=1),
        "all": date.min,
    }[window]
    return sum(first <= d <= end for d in present)


def check(table: pl.DataFrame, present: list[date]) -> None:
    assert table.columns[:4] == ["segment", "window", "day", "days"]
    assert sorted(table["day"].unique()) == present
    for (window, end), rows in table.group_by("window", "day"):
        assert rows["days"].unique().to_list() == [expected_days(present, window, end)]


@pytest.fixture
def job(tmp_path):
    source = write_log(tmp_path / "preds", days=10, rows=60)
    shutil.rmtree(source / f"day={(START + timedelta(days=3)).isoformat()}")  # a gap
    return write_job(tmp_path / "job", source, outputs=OUTPUTS)


def test_every_window_row_carries_the_days_it_covers(job):
    run_job(job, quiet=True)
    out = job.parent / "out"
    present = [START + timedelta(days=d) for d in range(10) if d != 3]
    parquet = pl.read_parquet(out / "metrics", hive_partitioning=True)
    check(parquet, present)
    assert parquet["days"].dtype == pl.Int32
    first = parquet.filter(pl.col("day") == START)
    assert set(first["days"]) == {1}  # a 7-day window on its first day covers one day
    csv = pl.read_csv(out / "metrics.csv", try_parse_dates=True)
    check(csv, present)
    # (read in the file's key order: Polars' JSON reader orders a wide table's keys its own way)
    records = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    text = pl.from_dicts(records).with_columns(pl.col("day").str.to_date())
    check(text, present)


def test_days_of_running_windows_resumed_from_the_store(job):
    source = job.parent.parent / "preds"
    aside = job.parent.parent / "later"
    aside.mkdir()
    late = [f"day={(START + timedelta(days=d)).isoformat()}" for d in (8, 9)]
    for name in late:
        (source / name).rename(aside / name)
    run_job(job, quiet=True)
    for name in late:
        (aside / name).rename(source / name)
    assert run_job(job, quiet=True).processed == 2  # the running windows resume at day 8
    present = [START + timedelta(days=d) for d in range(10) if d != 3]
    check(pl.read_parquet(job.parent / "out" / "metrics", hive_partitioning=True), present)


def test_state_metrics_by_window_carries_days(job, capsys, tmp_path):
    from streameval.cli import main

    run_job(job, quiet=True)
    table = tmp_path / "windows.csv"
    store = str(job.parent / "store")
    args = ["state", "metrics", store, "--by-window", "7d", "--by-window", "all"]
    assert main([*args, "--end", "2026-09-27", "--output", str(table)]) == 0
    got = pl.read_csv(table, try_parse_dates=True)
    assert got.columns[:4] == ["segment", "window", "day", "days"]
    assert dict(got.select("window", "days").unique().iter_rows()) == {"7d": 3, "all": 3}
