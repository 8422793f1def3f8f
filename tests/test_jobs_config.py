"""Job file validation: every mistake names its key, what was expected and a hint."""

from __future__ import annotations

import pytest

from streameval.jobs import JobConfigError, load_job

GOOD = """
[source]
paths = ["preds/"]
partition_key = "day"

[task]
kind = "binary"
label = "label"
score = "score"
by = ["segment"]

[store]
path = "state"

[[outputs]]
path = "out/metrics"
windows = ["1d", "7d"]

[[outputs]]
path = "out/metrics.csv"
windows = ["all"]
"""


def load(tmp_path, text):
    job = tmp_path / "job.toml"
    job.write_text(text)
    return load_job(job)


def test_a_good_job_file_resolves_paths_against_its_folder(tmp_path):
    job = load(tmp_path, GOOD)
    assert job.source.paths == (str(tmp_path / "preds"),)
    assert job.store == str(tmp_path / "state")
    assert [o.format for o in job.outputs] == ["parquet", "csv"]
    assert [w.name for w in job.windows] == ["1d", "7d", "all"]
    assert job.task.accumulate_kwargs()["by"] == ["segment"]
    assert job.task.metric_kwargs() == {"threshold": 0.5}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('label = "label"', 'lable = "label"'), "task.lable: unknown key; did you mean 'label'"),
        (("[store]", "[stor]"), "stor: unknown key; did you mean 'store'"),
        (('windows = ["all"]', 'windows = ["all", 7]'), "outputs[1].windows[1]: expected a string"),
        (('windows = ["all"]', 'windows = ["7days"]'), "outputs[1].windows[0]: expected a window"),
        (('windows = ["all"]', 'windows = ["all", "all"]'), "listed twice"),
        (('path = "out/metrics.csv"', 'path = "out/m.xlsx"\nformat = "xlsx"'),
         "outputs[1].format: expected one of parquet, csv, json, got 'xlsx'"),
        (('paths = ["preds/"]', 'paths = "preds/"\nformat = "delt"'), "did you mean 'delta'?"),
        (('paths = ["preds/"]', "paths = 3"),
         "source.paths: expected a string or a list of strings"),
        (('label = "label"\n', ""), "task.label: missing; expected a string"),
        (('score = "score"', 'score = "score"\npower = 2'),
         "task.power: does not apply to kind 'binary' (it applies to regression)"),
        (('kind = "binary"\nlabel = "label"\nscore = "score"',
          'kind = "multiclass"\nlabel = "label"\nprediction = "guess"'),
         "task.classes: missing; a job accumulates each partition on its own"),
        (('kind = "binary"\nlabel = "label"\nscore = "score"',
          'kind = "multiclass"\nlabel = "label"\nclasses = [0, 1]'),
         "task.prediction: missing; a multiclass task needs prediction or scores"),
        (('score = "score"', 'score = "score"\nscores = ["a"]'),
         "task.scores: does not apply to kind 'binary' (it applies to multiclass, paired, "
         "multilabel)"),
        (('kind = "binary"\nlabel = "label"\nscore = "score"',
          'kind = "paired"\nlabel = "label"\nscores = ["a", "b"]\nmetrics = ["roc_auc"]'),
         "task.metrics: does not apply to kind 'paired' (it applies to binary, multiclass, "
         "regression, ranking, multilabel)"),
        (('by = ["segment"]', 'by = ["segment", "day"]'), "task.by: expected group keys other"),
        (('by = ["segment"]', 'by = ["days"]'), "task.by: expected group keys other than 'days'"),
        (('by = ["segment"]', 'precision = "fast"'), "task.precision: expected precision"),
        (('by = ["segment"]', "level = 1.5"), "task.level: expected a level between 0 and 1"),
        (('path = "out/metrics"', 'path = "state/m"'),
         "outputs[0].path: expected a path apart from store.path"),
        (('partition_key = "day"', ""),
         "outputs[0].windows[0]: window '1d' needs dated partitions"),
        (('partition_key = "day"', 'partition_key = "day"\ntable = "t"'),
         "source.table: applies to format = 'iceberg' or engine = 'spark' only"),
        (('partition_key = "day"', 'partition_key = "day"\nengine = "dask"'),
         "source.engine: expected one of"),
        (('partition_key = "day"', 'partition_key = "day"\nspark = { master = "local[2]" }'),
         "source.spark: applies to engine = 'spark' only"),
        (('partition_key = "day"',
          'partition_key = "day"\nengine = "spark"\nspark = { "spark.sql.ansi.enabled" = 1 }'),
         "source.spark.spark.sql.ansi.enabled: expected a string, got an integer"),
        (("[source]", "[source\n"), "not a valid TOML job file"),
    ],
)  # fmt: skip
def test_mistakes_name_the_offending_key(tmp_path, edit, message):
    old, new = edit
    assert old in GOOD
    with pytest.raises(JobConfigError) as info:
        load(tmp_path, GOOD.replace(old, new, 1))
    assert message in str(info.value)
    assert str(tmp_path / "job.toml") in str(info.value)


def test_a_missing_job_file_is_a_clear_error(tmp_path):
    with pytest.raises(JobConfigError, match="expected a job file at"):
        load_job(tmp_path / "nope.toml")


def test_the_command_line_prints_one_line_and_exits_2(tmp_path, capsys):
    from streameval.cli import main

    job = tmp_path / "job.toml"
    job.write_text(GOOD.replace('score = "score"', 'scroe = "score"'))
    assert main(["run", str(job)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "task.scroe: unknown key; did you mean 'score'" in err


def test_the_docs_job_file_is_valid(tmp_path):
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "jobs.md").read_text()
    section = page[page.index("## The job file") :]
    text = section[
        section.index("```toml") + 7 : section.index("```", section.index("```toml") + 7)
    ]
    job = load(tmp_path, text)
    assert [w.name for w in job.windows] == ["1d", "7d", "28d", "mtd", "all"]
    assert job.task.metric_kwargs()["threshold"] == [0.3, 0.5]
