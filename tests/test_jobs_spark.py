"""Jobs with ``source.engine = "spark"``: same outputs as the Polars engine, incremental."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest
from jobs_support import START, day_frame, write_day, write_log
from polars.testing import assert_frame_equal

from streameval.errors import InputError
from streameval.jobs import run_job

pytest.importorskip("pyspark")

TASK = 'label = "label"\nscore = "score"\nby = ["segment"]\nthreshold = [0.3, 0.5]'


def job(folder, source: str, engine: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "job.toml"
    path.write_text(
        f'[source]\n{source}\npartition_key = "day"\nengine = "{engine}"\n\n'
        f'[task]\n{TASK}\n\n[store]\npath = "store"\n\n'
        '[[outputs]]\npath = "out/metrics"\nwindows = ["1d", "3d", "all"]\n'
    )
    return str(path)


def outputs(folder) -> pl.DataFrame:
    frame = pl.read_parquet(folder / "out" / "metrics" / "**" / "*.parquet")
    return frame.sort("day", "window", "segment", "threshold")


def test_spark_engine_equals_polars_engine_and_runs_incrementally(spark_classic, tmp_path):
    data = write_log(tmp_path / "preds", days=4, rows=300)
    source = f'paths = ["{data}"]'
    on_spark = job(tmp_path / "s", source, "spark")
    on_polars = job(tmp_path / "p", source, "polars")
    first = run_job(on_spark, quiet=True)
    assert first.processed == 4
    run_job(on_polars, quiet=True)
    assert_frame_equal(outputs(tmp_path / "s"), outputs(tmp_path / "p"), rel_tol=1e-12)

    assert run_job(on_spark, quiet=True).processed == 0
    write_day(data, "binary", 4, 300)
    write_day(data, "binary", 1, 250, seed=5)  # a day rewritten
    report = run_job(on_spark, quiet=True)
    day = lambda d: (START + timedelta(days=d)).isoformat()  # noqa: E731
    assert (report.new, report.changed, report.processed) == ([day(4)], [day(1)], 2)
    run_job(on_polars, quiet=True)
    assert_frame_equal(outputs(tmp_path / "s"), outputs(tmp_path / "p"), rel_tol=1e-12)


def test_catalog_tables_and_views_without_hive_paths(spark_classic, tmp_path):
    frame = pl.concat(
        day_frame("binary", d, 200).with_columns(day=pl.lit(START + timedelta(days=d)))
        for d in range(3)
    )
    frame.write_parquet(tmp_path / "flat.parquet")
    df = spark_classic.read.parquet(str(tmp_path / "flat.parquet"))
    df.write.mode("overwrite").partitionBy("day").saveAsTable("se_job_preds")
    df.createOrReplaceTempView("se_job_view")  # files carry no day=: rows are hashed
    expected = None
    for name in ("se_job_preds", "se_job_view"):
        folder = tmp_path / name
        assert run_job(job(folder, f'table = "{name}"', "spark"), quiet=True).processed == 3
        assert run_job(job(folder, f'table = "{name}"', "spark"), quiet=True).processed == 0
        got = outputs(folder)
        if expected is not None:
            assert_frame_equal(got, expected, rel_tol=1e-12)
        expected = got
    with pytest.raises(InputError, match="cannot read 'no_such_table' with Spark"):
        run_job(job(tmp_path / "bad", 'table = "no_such_table"', "spark"), quiet=True)
