"""Scheduled jobs run for real: job files, Parquet logs and stores in temporary folders."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from jobs_support import START, cli, holding, mtimes, tree, write_day, write_job, write_log

import streameval as se
from streameval.jobs import run_job
from streameval.spec import SCHEMA_VERSION


@pytest.fixture
def main(capsys):
    """The command line in this process: (status, stdout, stderr)."""
    from streameval.cli import main as cli_main

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        status = cli_main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, status, out, err)

    return call


def fresh_run(tmp: Path, source: Path, task: str = "binary") -> dict[str, bytes]:
    """The outputs of a run on an empty store: what an incremental run must equal."""
    job = write_job(tmp, source, task)
    run_job(job, quiet=True)
    return tree(tmp / "out")


@pytest.fixture
def setup(tmp_path):
    source = write_log(tmp_path / "preds", days=10)
    job = write_job(tmp_path / "job", source)
    return tmp_path, source, job


def test_first_run_then_a_second_run_scans_nothing_and_writes_nothing(setup):
    _tmp, _source, job = setup
    first = cli("run", str(job))
    assert first.returncode == 0, first.stderr
    assert "10 processed (10 new, 0 changed)" in first.stderr
    out = job.parent / "out"
    days = sorted(p.name for p in (out / "metrics").iterdir())
    assert days == [f"day={(START + timedelta(days=d)).isoformat()}" for d in range(10)]
    before, stamps = tree(out), mtimes(job.parent)
    second = cli("run", str(job))
    assert second.returncode == 0, second.stderr
    assert "0 processed" in second.stderr and "0 file(s) written" in second.stderr
    assert tree(out) == before
    assert mtimes(job.parent) == stamps  # nothing rewritten, the manifest included
    table = pl.read_parquet(out / "metrics", hive_partitioning=True)
    assert table.columns[:3] == ["segment", "window", "day"]
    assert table.height == 10 * 4 * 3 * 2  # days × windows × segments × thresholds
    assert table.equals(pl.read_csv(out / "metrics.csv", try_parse_dates=True))


def test_a_new_day_is_the_only_partition_read_and_old_files_stay(setup):
    tmp, source, job = setup
    run_job(job, quiet=True)
    out = job.parent / "out"
    stamps = mtimes(out / "metrics")
    write_day(source, "binary", 10, 200)
    report = run_job(job, quiet=True)
    assert (report.processed, report.new, report.rollup_days) == (1, ["2026-10-05"], 1)
    after = mtimes(out / "metrics")
    assert {k: after[k] for k in stamps} == stamps  # earlier days untouched
    assert len(after) == 11
    assert tree(out) == fresh_run(tmp / "fresh", source)


def test_a_rewritten_day_replaces_its_state_and_every_later_window(setup):
    tmp, source, job = setup
    run_job(job, quiet=True)
    states = set((job.parent / "store" / "states").iterdir())
    write_day(source, "binary", 3, 300, seed=7)  # late, rewritten data for day 3
    report = run_job(job, quiet=True)
    assert (report.processed, report.changed) == (1, ["2026-09-28"])
    assert report.rollup_days == 7  # day 3 and later ('all' and 'mtd' windows)
    now = set((job.parent / "store" / "states").iterdir())
    assert len(now - states) == len(states - now) == 1  # the old state file is gone
    assert tree(job.parent / "out") == fresh_run(tmp / "fresh", source)


def test_a_deleted_day_drops_its_state_and_outputs(setup):
    tmp, source, job = setup
    run_job(job, quiet=True)
    shutil.rmtree(source / "day=2026-09-30")
    report = run_job(job, quiet=True)
    assert (report.processed, report.dropped, report.removed) == (0, ["2026-09-30"], 1)
    assert not (job.parent / "out" / "metrics" / "day=2026-09-30").exists()
    assert len(list((job.parent / "store" / "states").iterdir())) == 9
    assert tree(job.parent / "out") == fresh_run(tmp / "fresh", source)


def test_dry_run_lists_the_work_and_writes_nothing(setup, main):
    _tmp, source, job = setup
    result = main("run", str(job), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "would process 10 of 10 partition(s) (10 new, 0 changed)" in result.stdout
    assert "new      day=2026-09-25  1 file(s)  200 rows" in result.stdout
    assert not (job.parent / "store").exists() and not (job.parent / "out").exists()
    run_job(job, quiet=True)
    write_day(source, "binary", 2, 50, seed=3)
    shutil.rmtree(source / "day=2026-10-04")
    result = main("run", str(job), "--dry-run")
    assert "would process 1 of 9 partition(s) (0 new, 1 changed)" in result.stdout
    assert "dropped  day=2026-10-04" in result.stdout
    assert run_job(job, quiet=True).processed == 1  # the dry run changed nothing


def test_full_refresh_recomputes_everything_to_the_same_bytes(setup):
    _tmp, _source, job = setup
    run_job(job, quiet=True)
    before = tree(job.parent / "out")
    report = run_job(job, quiet=True, full_refresh=True)
    assert report.processed == 10 and report.written == 0
    assert tree(job.parent / "out") == before


def windowed(frame: pl.DataFrame, days: list, windows: dict) -> pl.DataFrame:
    """Each row once per (window, end day) whose window holds it, as two more keys."""
    parts = []
    for end in days:
        for name, start in windows.items():
            first = start(end)
            rows = frame.filter(pl.col("day").is_between(first, end))
            parts.append(rows.with_columns(window=pl.lit(name), end=pl.lit(end)))
    return pl.concat(parts)


@pytest.mark.parametrize(
    ("task", "columns", "weight"),
    [
        ("binary", {"label": "label", "score": "score", "threshold": [0.3, 0.5]}, "weight"),
        # (without weights, the trailing windows are pooled: jobs.pools)
        ("binary", {"label": "label", "score": "score", "threshold": [0.3, 0.5]}, None),
        ("multiclass", {"label": "animal", "prediction": "guess", "task": "multiclass",
                        "scores": {"cat": "p_cat", "dog": "p_dog", "bird": "p_bird"}}, "weight"),
        ("regression", {"label": "y", "prediction": "y_hat", "task": "regression"}, "weight"),
    ],
)  # fmt: skip
def test_rollups_equal_evaluate_over_the_same_days(tmp_path, task, columns, weight):
    source = write_log(tmp_path / "preds", task, days=9, rows=150)
    extra = f'weight = "{weight}"' if weight else ""
    job = write_job(tmp_path / "job", source, task, extra=extra)
    run_job(job, quiet=True)
    got = pl.read_parquet(tmp_path / "job" / "out" / "metrics", hive_partitioning=True)
    frame = pl.read_parquet(source, hive_partitioning=True)
    days = sorted(frame["day"].unique())
    windows = {
        "1d": lambda d: d,
        "3d": lambda d: d - timedelta(days=2),
        "mtd": lambda d: d.replace(day=1),
        "all": lambda d: days[0],
    }
    if task != "binary":
        columns = {**columns, "precision": None}
    else:
        columns = {**columns, "precision": "exact"}
    rows = windowed(frame, days, windows)
    covered = rows.group_by("window", "end").agg(days=pl.col("day").n_unique().cast(pl.Int32))
    expected = (
        se.evaluate(rows, by=["segment", "window", "end"], weight=weight, **columns)
        .join(covered, on=["window", "end"])
        .rename({"end": "day"})
    )
    keys = ["segment", "window", "day", *(["threshold"] if task == "binary" else [])]
    got, expected = got.sort(keys), expected.select(got.columns).sort(keys)
    assert got.height == expected.height == 9 * 4 * 3 * (2 if task == "binary" else 1)
    for column in got.columns:
        if got[column].dtype.is_numeric():
            a, b = got[column].to_list(), expected[column].to_list()
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True), column
        else:
            assert got[column].equals(expected[column]), column


def test_a_changed_task_is_refused_and_full_refresh_rebuilds(setup, main):
    _tmp, _source, job = setup
    run_job(job, quiet=True)
    job.write_text(job.read_text().replace('precision = "exact"', "precision = 8"))
    result = main("run", str(job))
    assert result.returncode == 2
    assert "accumulate.precision: 52 → 8" in result.stderr
    assert "--full-refresh" in result.stderr and "Traceback" not in result.stderr
    assert main("run", str(job), "--full-refresh", "--quiet").returncode == 0
    # a metric-only change needs no refresh: outputs are rebuilt from the stored states
    job.write_text(job.read_text().replace("by = [", 'metrics = ["roc_auc"]\nby = ['))
    report = run_job(job, quiet=True)
    assert report.processed == 0 and report.rollup_days == 10
    assert pl.read_csv(job.parent / "out" / "metrics.csv").columns[3:6] == ["days", "n", "roc_auc"]


def test_a_held_lock_is_refused_and_a_stale_one_taken_over(setup, main):
    _tmp, _source, job = setup
    store = job.parent / "store"
    store.mkdir()
    lock = store / "LOCK"
    with holding(lock) as pid:
        result = main("run", str(job))
        assert result.returncode == 2
        assert f"another run holds the store's lock {lock}" in result.stderr
        assert f"pid {pid}" in result.stderr and f"rm {lock}" in result.stderr
    assert lock.exists()
    result = main("run", str(job))  # the holder is gone: its lock is stale
    assert result.returncode == 0, result.stderr
    assert f"took over a stale lock left by pid {pid}" in result.stderr
    assert not lock.exists()


def test_a_store_of_another_version_is_refused_never_misread(setup, main):
    _tmp, source, job = setup
    run_job(job, quiet=True)
    store = job.parent / "store"
    manifest = json.loads((store / "manifest.json").read_text())
    for key, value in [("state_schema_version", SCHEMA_VERSION + 1), ("store_format", 9)]:
        (store / "manifest.json").write_text(json.dumps({**manifest, key: value}))
        result = main("run", str(job))
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert f"has version {value}" in result.stderr and "--full-refresh" in result.stderr
    (store / "manifest.json").write_text(json.dumps(manifest))
    # a state file claiming another schema version is refused when read
    entry = manifest["partitions"]["2026-09-27"]
    path = store / entry["state"]
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = {**table.schema.metadata, b"streameval.schema_version": b"%d" % (SCHEMA_VERSION + 1)}
    pq.write_table(table.replace_schema_metadata(meta), path)
    result = main("state", "metrics", str(store))
    assert result.returncode == 2
    assert f"expected state schema version {SCHEMA_VERSION}" in result.stderr
    assert f"version {SCHEMA_VERSION + 1}" in result.stderr
    write_day(source, "binary", 3, 100, seed=5)  # day 3's 3d window reads day 2's state
    # a run that meets it reports it and recomputes that partition from its source
    result = main("run", str(job))
    assert result.returncode == 0, result.stderr
    assert "the state of partition '2026-09-27'" in result.stderr
    assert f"has version {SCHEMA_VERSION + 1}" in result.stderr
    assert "recomputing that partition from its source" in result.stderr
    assert main("state", "metrics", str(store)).returncode == 0
    assert run_job(job, quiet=True, full_refresh=True).processed == 10


def test_state_subcommands(setup, main):
    tmp, _source, job = setup
    run_job(job, quiet=True)
    store = job.parent / "store"
    result = main("state", "inspect", str(store), "--files")
    assert result.returncode == 0, result.stderr
    assert "10 partition(s), 2,000 source rows" in result.stdout
    assert f"state schema version {SCHEMA_VERSION}" in result.stdout
    assert "day=2026-09-25  1 file(s)  200 rows  state " in result.stdout
    assert "preds/day=2026-09-25/part-0.parquet" in result.stdout
    first = sorted((store / "states").iterdir())[0]
    result = main("state", "inspect", str(first))
    assert f"binary state, schema version {SCHEMA_VERSION}" in result.stdout
    merged = tmp / "merged.parquet"
    result = main("state", "merge", str(store), "--output", str(merged))
    assert result.returncode == 0, result.stderr
    out = pl.read_parquet(job.parent / "out" / "metrics", hive_partitioning=True)
    last = out.filter(pl.col("window") == "all", pl.col("day") == out["day"].max())
    both = se.read_state(merged).metrics(threshold=[0.3, 0.5]).sort("segment", "threshold")
    assert both["roc_auc"].to_list() == last.sort("segment", "threshold")["roc_auc"].to_list()
    table = tmp / "windows.csv"
    args = ["state", "metrics", str(store), "--by-window", "3d", "--threshold", "0.5"]
    result = main(*args, "--end", "2026-10-01", "--output", str(table))
    assert result.returncode == 0, result.stderr
    got = pl.read_csv(table, try_parse_dates=True)
    want = out.filter(pl.col("window") == "3d", pl.col("day") == START + timedelta(days=6))
    want = want.filter(pl.col("threshold") == 0.5).sort("segment")
    assert got.sort("segment")["f1"].to_list() == want["f1"].to_list()
    assert main("state", "inspect", str(tmp)).returncode == 2


def test_progress_is_plain_lines_without_a_terminal_and_silent_when_quiet(setup, main):
    _tmp, source, job = setup
    result = main("run", str(job))
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 11
    assert lines[0].startswith("streameval run: day=2026-09-25: 1 file(s), 200 rows [1/10 files")
    assert "rows/s, ETA" in lines[0]
    write_day(source, "binary", 10, 200)
    assert main("run", str(job), "--quiet").stderr == ""


def test_progress_on_a_terminal_is_a_bar_with_the_log_above_it():
    import io
    import re

    from streameval.jobs.progress import Progress

    out = io.StringIO()
    p = Progress(2, 20, stream=out, tty=True)
    p.log("took over a stale lock")
    p.begin("day=1")
    p.done("day=1", files=1, rows=10)
    p.done("day=2", files=1, rows=10)
    p.finish()
    p.log("2 partitions processed")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "2/2 files 20/20 rows" in text and "ETA" in text
    assert "streameval run: took over a stale lock\n" in text
    assert text.endswith("streameval run: 2 partitions processed\n")
    assert "day=1" not in out.getvalue().split("\n")[-1]  # the bar is gone at the end


def test_a_flat_source_is_one_partition_per_file(tmp_path):
    source = tmp_path / "preds"
    source.mkdir()
    for i in range(3):
        write_day(tmp_path / "tmp", "binary", i, 100).joinpath("part-0.parquet").rename(
            source / f"file-{i}.parquet"
        )
    job = tmp_path / "job.toml"
    job.write_text(
        f'[source]\npaths = ["{source}/*.parquet"]\n[task]\nlabel = "label"\nscore = "score"\n'
        'precision = "exact"\n[store]\npath = "store"\n[[outputs]]\npath = "out"\n'
    )
    assert run_job(job, quiet=True).processed == 3
    got = pl.read_parquet(tmp_path / "out" / "part-0.parquet")
    want = se.evaluate(str(source), label="label", score="score", precision="exact")
    assert got["window"].to_list() == ["all"] and got["roc_auc"].item() == want["roc_auc"].item()
    (source / "file-1.parquet").unlink()
    assert run_job(job, quiet=True).dropped == ["preds/file-1.parquet"]


def test_a_job_with_a_scores_mapping_runs_incrementally(tmp_path):
    """The job's identity is compared as the manifest holds it (the mapping's pairs as lists)."""
    source = write_log(tmp_path / "preds", "multiclass", days=2, rows=50)
    job = write_job(tmp_path / "job", source, "multiclass")
    assert run_job(job, quiet=True).processed == 2
    write_day(source, "multiclass", 2, 50)
    assert run_job(job, quiet=True).processed == 1
