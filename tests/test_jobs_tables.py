"""Delta Lake and Iceberg tables as job sources (skipped without the optional extras)."""

from __future__ import annotations

import warnings
from datetime import timedelta

import polars as pl
import pytest
from jobs_support import START, day_frame

import streameval as se
from streameval.jobs import run_job


def frame(days: range, rows: int = 120, seed: int = 0) -> pl.DataFrame:
    parts = [
        day_frame("binary", d, rows, seed).with_columns(day=pl.lit(START + timedelta(days=d)))
        for d in days
    ]
    return pl.concat(parts)


def job_file(tmp_path, source: str, windows: str = '["1d", "all"]') -> str:
    job = tmp_path / "job.toml"
    job.write_text(
        f'[source]\n{source}\n[task]\nlabel = "label"\nscore = "score"\nby = "segment"\n'
        'precision = "exact"\n[store]\npath = "store"\n'
        f'[[outputs]]\npath = "out.csv"\nwindows = {windows}\n'
    )
    return str(job)


def check(tmp_path, data: pl.DataFrame) -> None:
    """The 'all' rows at the last day equal se.evaluate over everything."""
    got = pl.read_csv(tmp_path / "out.csv", try_parse_dates=True)
    last = got.filter(pl.col("window") == "all", pl.col("day") == got["day"].max())
    want = se.evaluate(data, label="label", score="score", by="segment", precision="exact")
    assert last.sort("segment")["roc_auc"].to_list() == want.sort("segment")["roc_auc"].to_list()
    assert last["n"].sum() == data.height


def test_a_delta_table_partition_by_partition(tmp_path):
    pytest.importorskip("deltalake")
    from deltalake import DeltaTable

    table = str(tmp_path / "delta")
    options = {"partition_by": ["day"]}
    frame(range(3)).write_delta(table, delta_write_options=options)
    job = job_file(tmp_path, f'paths = ["{table}"]\nformat = "delta"\npartition_key = "day"')
    assert run_job(job, quiet=True).processed == 3
    check(tmp_path, frame(range(3)))
    late = frame(range(1, 2), rows=30, seed=9)
    late.write_delta(table, mode="append", delta_write_options=options)
    report = run_job(job, quiet=True)
    assert (report.processed, report.changed) == (1, ["2026-09-26"])
    check(tmp_path, pl.concat([frame(range(3)), late]))
    DeltaTable(table).delete("day = '2026-09-25'")
    report = run_job(job, quiet=True)
    assert (report.processed, report.dropped) == (0, ["2026-09-25"])
    check(tmp_path, pl.concat([frame(range(1, 3)), late]))
    assert run_job(job, quiet=True).processed == 0


def test_an_iceberg_table_partition_by_partition_and_whole(tmp_path):
    pytest.importorskip("pyiceberg")
    pytest.importorskip("sqlalchemy")
    from pyiceberg.catalog.sql import SqlCatalog

    uri, warehouse = f"sqlite:///{tmp_path}/catalog.db", f"file://{tmp_path}/warehouse"
    catalog = SqlCatalog("default", uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    data = frame(range(3))
    table = catalog.create_table("db.preds", schema=data.to_arrow().schema)
    with table.update_spec() as spec:
        spec.add_identity("day")
    catalog.load_table("db.preds").append(data.to_arrow())
    source = (
        f'format = "iceberg"\ntable = "db.preds"\npartition_key = "day"\n'
        f'catalog = {{ uri = "{uri}", warehouse = "{warehouse}" }}'
    )
    job = job_file(tmp_path, source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run_job(job, quiet=True).processed == 3
        check(tmp_path, data)
        more = frame(range(3, 4))
        catalog.load_table("db.preds").append(more.to_arrow())
        report = run_job(job, quiet=True)
        assert (report.processed, report.new) == (1, ["2026-09-28"])
        check(tmp_path, pl.concat([data, more]))
        # the whole table as one partition, from its metadata files
        whole = tmp_path / "whole"
        whole.mkdir()
        folder = catalog.load_table("db.preds").location().removeprefix("file://")
        job = job_file(whole, f'paths = ["{folder}"]\nformat = "iceberg"', '["all"]')
        assert run_job(job, quiet=True).processed == 1
        got = pl.read_csv(whole / "out.csv")
        assert got["n"].sum() == data.height + more.height
