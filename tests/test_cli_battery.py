"""Bad input to the command line, built for real: every case exits 2 with one error line.

Each case writes its bad input in a temporary folder (Parquet files, job files, state files
and stores), runs ``streameval`` in this process and checks the exit status, that stderr is
exactly one ``streameval: error:`` line without a traceback, and that the line names what is
at fault (a path, key or value), so that no case passes by failing for another reason.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from jobs_support import holding

import streameval as se

Case = tuple[list[str], str]
CASES: list[object] = []


def case(*marks: pytest.MarkDecorator) -> Callable[[Callable[..., Case]], Callable[..., Case]]:
    """Register a case builder: ``build(tmp) -> (argv, fragment)``."""

    def register(build: Callable[..., Case]) -> Callable[..., Case]:
        CASES.append(pytest.param(build, id=build.__name__.replace("_", "-"), marks=marks))
        return build

    return register


# ------------------------------------------------------------------------ data on disk


def frame(rows: int = 40, seed: int = 0) -> pl.DataFrame:
    """Binary predictions: label ``y`` (0/1), score ``p``, segment ``seg``, weight ``w``."""
    rng = np.random.default_rng(seed)
    y = np.arange(rows) % 2
    return pl.DataFrame(
        {
            "y": y.astype(np.int8),
            "p": np.round(rng.random(rows) * 0.6 + 0.4 * y, 3),
            "seg": np.where(np.arange(rows) % 4 < 2, "a", "b"),
            "w": np.ones(rows),
        }
    )


def parquet(path: Path, table: pl.DataFrame | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (frame() if table is None else table).write_parquet(path)
    return path


def with_value(column: str, row: int, value: object) -> pl.DataFrame:
    """``frame()`` with one cell of ``column`` replaced by ``value``."""
    table = frame()
    if isinstance(value, str):
        table = table.with_columns(pl.col(column).cast(pl.String))
    return table.with_columns(
        pl.when(pl.int_range(pl.len()) == row)
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )


def truncate(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def evaluate(path: Path | str, *extra: str, label: str = "y", score: str = "p") -> list[str]:
    return ["evaluate", str(path), "--label", label, "--score", score, *extra]


def log(root: Path, days: int = 2, rows: int = 40) -> Path:
    """A hive-partitioned prediction log: ``root/day=2026-10-0N/part-0.parquet``."""
    for d in range(days):
        parquet(root / f"day=2026-10-{d + 1:02d}" / "part-0.parquet", frame(rows, seed=d))
    return root


def job(
    folder: Path,
    source: Path | None = None,
    *,
    task: str = 'label = "y"\nscore = "p"\nby = ["seg"]',
    store: str = "store",
    outputs: str = '[[outputs]]\npath = "out/metrics"\nwindows = ["1d", "all"]\n',
    source_extra: str = "",
) -> Path:
    """A job file in ``folder``: source ``source`` (default: a fresh log), store, outputs."""
    folder.mkdir(parents=True, exist_ok=True)
    source = log(folder / "preds") if source is None else source
    text = (
        f'[source]\npaths = ["{source}"]\npartition_key = "day"\n{source_extra}\n'
        f"[task]\n{task}\n\n[store]\npath = {json.dumps(store)}\n\n{outputs}"
    )
    path = folder / "job.toml"
    path.write_text(text)
    return path


def ran(folder: Path) -> tuple[Path, Path]:
    """A job that has run once: (job file, store folder)."""
    from streameval.jobs import run_job

    path = job(folder)
    run_job(path, quiet=True)
    return path, folder / "store"


def state_file(path: Path, table: pl.DataFrame | None = None, **columns: object) -> Path:
    kwargs = {"label": "y", "score": "p", **columns}
    se.accumulate(frame() if table is None else table, **kwargs).write(path)  # type: ignore[arg-type]
    return path


def edit_spec(path: Path, change: Callable[[dict], object], *, resign: bool) -> Path:
    """Rewrite a state file's spec; ``resign`` recomputes its checksum to match."""
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    spec = json.loads(meta[b"streameval.spec"])
    change(spec)
    meta[b"streameval.spec"] = json.dumps(spec).encode()
    if resign:
        from streameval.io import content_digest

        data = pl.from_arrow(table.replace_schema_metadata(None))
        version = meta[b"streameval.schema_version"]
        digest = content_digest(version, meta[b"streameval.spec"], data)
        meta[b"streameval.checksum"] = f"sha256:{digest}".encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    return path


# ------------------------------------------------------------- inputs: evaluate, report


@case()
def missing_file(tmp: Path) -> Case:
    return evaluate(tmp / "nope.parquet"), "nope.parquet"


@case()
def empty_directory(tmp: Path) -> Case:
    (tmp / "hollow").mkdir()
    return evaluate(tmp / "hollow"), "hollow"


@case()
def not_parquet(tmp: Path) -> Case:
    (tmp / "notes.parquet").write_text("y,p\n1,0.5\n")
    return evaluate(tmp / "notes.parquet"), "notes.parquet"


@case()
def truncated_parquet(tmp: Path) -> Case:
    return evaluate(truncate(parquet(tmp / "cut.parquet"))), "cut.parquet"


@case()
def truncated_parquet_in_hive_folder(tmp: Path) -> Case:
    root = log(tmp / "preds")
    truncate(root / "day=2026-10-02" / "part-0.parquet")
    return evaluate(root), "day=2026-10-02"


@case()
def misspelled_label(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), label="lable"), "lable"


@case()
def misspelled_score(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), score="scroe"), "scroe"


@case()
def misspelled_by(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--by", "segmnt"), "segmnt"


@case()
def misspelled_weight(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--weight", "wieght"), "wieght"


@case()
def string_score_column(tmp: Path) -> Case:
    table = frame().with_columns(pl.col("p").cast(pl.String).alias("p_text"))
    return evaluate(parquet(tmp / "a.parquet", table), score="p_text"), "p_text"


@case()
def nan_score(tmp: Path) -> Case:
    table = with_value("p", 3, float("nan"))
    return evaluate(parquet(tmp / "a.parquet", table)), "1 NaN"


@case()
def infinite_score(tmp: Path) -> Case:
    table = with_value("p", 3, float("inf"))
    return evaluate(parquet(tmp / "a.parquet", table)), "1 infinite"


@case()
def null_labels(tmp: Path) -> Case:
    table = with_value("y", 5, None)
    return evaluate(parquet(tmp / "a.parquet", table)), "1 null labels in 'y'"


@case()
def three_label_values_for_binary(tmp: Path) -> Case:
    table = frame().with_columns((pl.int_range(pl.len()) % 3).cast(pl.Int8).alias("y"))
    return evaluate(parquet(tmp / "a.parquet", table)), "[2]"


@case()
def positive_not_among_labels(tmp: Path) -> Case:
    table = frame().with_columns(pl.col("y").replace_strict({0: "ham", 1: "spam"}))
    return evaluate(parquet(tmp / "a.parquet", table), "--positive", "spma"), "spma"


@case()
def negative_weights(tmp: Path) -> Case:
    table = with_value("w", 2, -1.5)
    return evaluate(parquet(tmp / "a.parquet", table), "--weight", "w"), "-1.5"


@case()
def mismatched_schemas_across_files(tmp: Path) -> Case:
    a = parquet(tmp / "a.parquet")
    b = parquet(tmp / "b.parquet", frame().with_columns(pl.col("p").cast(pl.String)))
    return ["evaluate", str(a), str(b), "--label", "y", "--score", "p"], "b.parquet"


@case()
def threshold_not_a_number(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--threshold", "half"), "half"


@case()
def threshold_nan(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--threshold", "nan"), "nan"


@case()
def precision_not_a_number(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--precision", "x"), "'x'"


@case()
def precision_too_many_bits(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--precision", "60"), "60"


@case()
def unknown_task(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--task", "binery"), "binery"


@case()
def multiclass_scores_count_mismatch(tmp: Path) -> Case:
    rows = 30
    table = pl.DataFrame(
        {
            "animal": ["cat", "dog", "bird"] * (rows // 3),
            "p_cat": [0.5] * rows,
            "p_dog": [0.3] * rows,
            "p_bird": [0.2] * rows,
        }
    )
    path = parquet(tmp / "m.parquet", table)
    argv = ["evaluate", str(path), "--task", "multiclass", "--label", "animal"]
    return [*argv, "--classes", "cat,dog,bird", "--scores", "p_cat,p_dog"], "p_dog"


@case()
def regression_string_prediction(tmp: Path) -> Case:
    table = pl.DataFrame({"t": [1.0, 2.0, 3.0, 4.0], "guess": ["1", "2", "3", "4"]})
    path = parquet(tmp / "r.parquet", table)
    argv = ["evaluate", str(path), "--task", "regression", "--label", "t"]
    return [*argv, "--prediction", "guess"], "guess"


@case()
def one_date_in_two_spellings(tmp: Path) -> Case:
    parquet(tmp / "preds" / "day=2026-10-01" / "a.parquet")
    parquet(tmp / "preds" / "day=20261001" / "b.parquet")
    return evaluate(tmp / "preds", "--by", "day"), "20261001"


@case()
def file_column_disagrees_with_hive_directory(tmp: Path) -> Case:
    parquet(tmp / "preds" / "seg=zzz" / "a.parquet")  # the file's own seg column says a, b
    return evaluate(tmp / "preds", "--by", "seg"), "zzz"


@case()
def output_of_unknown_format(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--output", str(tmp / "m.xlsx")), "m.xlsx"


@case()
def top_k_not_a_number(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--top-k", "two"), "two"


@case()
def scores_half_in_class_column_form(tmp: Path) -> Case:
    path = parquet(tmp / "a.parquet")
    argv = ["evaluate", str(path), "--task", "multiclass", "--label", "y"]
    return [*argv, "--scores", "0=p,p_one"], "p_one"


@case()
def summary_of_a_regression(tmp: Path) -> Case:
    table = pl.DataFrame({"t": [1.0, 2.0, 3.0], "u": [1.5, 2.5, 2.0]})
    path = parquet(tmp / "r.parquet", table)
    argv = ["evaluate", str(path), "--task", "regression", "--label", "t", "--prediction", "u"]
    return [*argv, "--summary"], "regression"


@case()
def glob_matching_nothing(tmp: Path) -> Case:
    parquet(tmp / "a.parquet")
    return evaluate(tmp / "*.pq"), "*.pq"


@case()
def weight_column_of_strings(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--weight", "seg"), "'seg'"


@case()
def metric_misspelled(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--metric", "roc_acu"), "roc_acu"


@case()
def level_out_of_range(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--ci", "wilson", "--level", "1.5"), "1.5"


@case()
def bootstrap_without_replicates(tmp: Path) -> Case:
    path = parquet(tmp / "a.parquet")
    return evaluate(path, "--ci", "bootstrap", "--replicates", "0"), "got 0"


@case()
def jackknife_by_a_missing_key(tmp: Path) -> Case:
    path = parquet(tmp / "a.parquet")
    return evaluate(path, "--ci", "jackknife", "--jackknife-by", "sgm"), "sgm"


@case()
def repeats_without_folds(tmp: Path) -> Case:
    return evaluate(parquet(tmp / "a.parquet"), "--repeats", "seg"), "--repeats 'seg'"


@case()
def paired_with_one_model(tmp: Path) -> Case:
    path = parquet(tmp / "a.parquet")
    return ["evaluate", str(path), "--task", "paired", "--label", "y", "--scores", "p"], "['p']"


def classes_and_codes(tmp: Path) -> Path:
    """Multiclass labels as strings ``animal``, integers ``code`` and floats ``level``."""
    table = pl.DataFrame(
        {"animal": ["cat", "dog", "bird"] * 4, "code": [0, 1, 2] * 4, "level": [0.5, 1, 2] * 4}
    )
    return parquet(tmp / "m.parquet", table)


@case()
def multiclass_integer_prediction_of_string_labels(tmp: Path) -> Case:
    path = classes_and_codes(tmp)
    argv = ["evaluate", str(path), "--task", "multiclass", "--label", "animal"]
    return [*argv, "--prediction", "code"], "code"


@case()
def multiclass_float_prediction_of_integer_labels(tmp: Path) -> Case:
    path = classes_and_codes(tmp)
    argv = ["evaluate", str(path), "--task", "multiclass", "--label", "code"]
    return [*argv, "--prediction", "level"], "level"


@case()
def multiclass_integer_prediction_of_listed_classes(tmp: Path) -> Case:
    path = classes_and_codes(tmp)
    argv = ["evaluate", str(path), "--task", "multiclass", "--label", "animal"]
    return [*argv, "--classes", "cat,dog,bird", "--prediction", "code"], "code"


@case()
def output_below_a_file(tmp: Path) -> Case:
    (tmp / "afile").write_text("x\n")
    return evaluate(parquet(tmp / "a.parquet"), "--output", str(tmp / "afile" / "m.csv")), (
        "afile/m.csv"
    )


@case()
def report_output_is_a_folder(tmp: Path) -> Case:
    path = parquet(tmp / "a.parquet")
    (tmp / "r.html").mkdir()
    argv = ["report", str(path), "--label", "y", "--score", "p"]
    return [*argv, "--output", str(tmp / "r.html")], "r.html"


@case()
def usage_unknown_command(tmp: Path) -> Case:
    return ["evalute", str(tmp)], "evalute"


@case()
def usage_no_command(tmp: Path) -> Case:
    return [], "required: COMMAND"


@case()
def usage_evaluate_without_label(tmp: Path) -> Case:
    return ["evaluate", str(parquet(tmp / "a.parquet")), "--score", "p"], "--label"


@case()
def report_of_a_misspelled_label(tmp: Path) -> Case:
    path = parquet(tmp / "a.parquet")
    argv = ["report", str(path), "--label", "lable", "--score", "p"]
    return [*argv, "--output", str(tmp / "r.html")], "lable"


@case()
def report_of_a_missing_file(tmp: Path) -> Case:
    argv = ["report", str(tmp / "gone.parquet"), "--label", "y", "--score", "p"]
    return [*argv, "--output", str(tmp / "r.html")], "gone.parquet"


# --------------------------------------------------------------------- job files: run


@case()
def job_file_missing(tmp: Path) -> Case:
    return ["run", str(tmp / "nojob.toml")], "nojob.toml"


@case()
def job_file_is_a_directory(tmp: Path) -> Case:
    (tmp / "jobdir.toml").mkdir()
    return ["run", str(tmp / "jobdir.toml")], "jobdir.toml"


@case()
def job_file_invalid_toml(tmp: Path) -> Case:
    path = job(tmp)
    path.write_text(path.read_text().replace("[store]", "[store"))
    return ["run", str(path)], "not a valid TOML"


@case()
def job_unknown_key(tmp: Path) -> Case:
    return ["run", str(job(tmp, task='label = "y"\nscroe = "p"'))], "task.scroe"


@case()
def job_paths_of_wrong_type(tmp: Path) -> Case:
    path = job(tmp)
    text = path.read_text()
    start = text.index("paths = ")
    path.write_text(text[:start] + "paths = 3" + text[text.index("\n", start) :])
    return ["run", str(path)], "source.paths"


@case()
def job_window_of_wrong_type(tmp: Path) -> Case:
    outputs = '[[outputs]]\npath = "out/m"\nwindows = ["1d", 7]\n'
    return ["run", str(job(tmp, outputs=outputs))], "outputs[0].windows[1]"


@case()
def job_threshold_of_wrong_type(tmp: Path) -> Case:
    task = 'label = "y"\nscore = "p"\nthreshold = "high"'
    return ["run", str(job(tmp, task=task))], "high"


@case()
def job_window_misspelled(tmp: Path) -> Case:
    outputs = '[[outputs]]\npath = "out/m"\nwindows = ["7days"]\n'
    return ["run", str(job(tmp, outputs=outputs))], "7days"


@case()
def job_task_kind_misspelled(tmp: Path) -> Case:
    task = 'kind = "binery"\nlabel = "y"\nscore = "p"'
    return ["run", str(job(tmp, task=task))], "binery"


@case()
def job_precision_not_a_number(tmp: Path) -> Case:
    task = 'label = "y"\nscore = "p"\nprecision = "x"'
    return ["run", str(job(tmp, task=task))], "task.precision"


@case()
def job_precision_too_many_bits(tmp: Path) -> Case:
    task = 'label = "y"\nscore = "p"\nprecision = 60'
    return ["run", str(job(tmp, task=task))], "60"


@case()
def job_fingerprint_unknown(tmp: Path) -> Case:
    path = job(tmp, source_extra='fingerprint = "nope"')
    return ["run", str(path)], "nope"


@case()
def job_source_format_misspelled(tmp: Path) -> Case:
    return ["run", str(job(tmp, source_extra='format = "delt"'))], "delt"


@case()
def job_output_is_the_source(tmp: Path) -> Case:
    source = log(tmp / "preds")
    outputs = f'[[outputs]]\npath = "{source}"\n'
    return ["run", str(job(tmp, source, outputs=outputs))], "outputs[0].path"


@case()
def job_output_inside_the_source(tmp: Path) -> Case:
    source = log(tmp / "preds")
    outputs = f'[[outputs]]\npath = "{source}/metrics"\n'
    return ["run", str(job(tmp, source, outputs=outputs))], "outputs[0].path"


@case()
def job_store_inside_the_source(tmp: Path) -> Case:
    source = log(tmp / "preds")
    return ["run", str(job(tmp, source, store=f"{source}/state"))], "store.path"


@case()
def job_two_overlapping_outputs(tmp: Path) -> Case:
    outputs = (
        '[[outputs]]\npath = "out/m"\nwindows = ["1d"]\n\n'
        '[[outputs]]\npath = "out/m/all.csv"\nwindows = ["all"]\n'
    )
    return ["run", str(job(tmp, outputs=outputs))], "outputs[1].path"


@case()
def job_partition_folders_not_dates(tmp: Path) -> Case:
    source = tmp / "preds"
    parquet(source / "day=monday" / "part-0.parquet")
    return ["run", str(job(tmp, source))], "monday"


@case()
def job_source_missing(tmp: Path) -> Case:
    return ["run", str(job(tmp, tmp / "elsewhere"))], "elsewhere"


@case()
def job_label_misspelled_fails_on_data(tmp: Path) -> Case:
    task = 'label = "lable"\nscore = "p"'
    return ["run", str(job(tmp, task=task))], "lable"


@case()
def job_store_path_is_a_file(tmp: Path) -> Case:
    (tmp / "plain").write_text("not a folder\n")
    return ["run", str(job(tmp, store="plain"))], "plain"


@case()
def job_store_manifest_not_json(tmp: Path) -> Case:
    path, store = ran(tmp)
    (store / "manifest.json").write_text("{not json")
    return ["run", str(path)], "manifest.json"


@case()
def job_store_of_another_format(tmp: Path) -> Case:
    path, store = ran(tmp)
    manifest = json.loads((store / "manifest.json").read_text())
    (store / "manifest.json").write_text(json.dumps({**manifest, "store_format": 97}))
    return ["run", str(path)], "97"


@case()
def job_store_locked_by_a_live_run(tmp: Path, hold: Callable[[Path], int]) -> Case:
    path = job(tmp)
    pid = hold(tmp / "store" / "LOCK")
    return ["run", str(path)], f"pid {pid}"


# --------------------------------------------------------- state files: state commands


@case()
def state_metrics_of_a_missing_file(tmp: Path) -> Case:
    return ["state", "metrics", str(tmp / "lost.parquet")], "lost.parquet"


@case()
def state_inspect_of_a_missing_file(tmp: Path) -> Case:
    return ["state", "inspect", str(tmp / "lost.parquet")], "lost.parquet"


@case()
def state_inspect_of_a_plain_directory(tmp: Path) -> Case:
    (tmp / "folder").mkdir()
    return ["state", "inspect", str(tmp / "folder")], "folder"


@case()
def state_metrics_of_a_plain_directory(tmp: Path) -> Case:
    (tmp / "folder").mkdir()
    state_file(tmp / "folder" / "s.parquet")  # state files, but no store manifest
    return ["state", "metrics", str(tmp / "folder")], "folder"


@case()
def state_merge_with_a_plain_directory(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    (tmp / "folder").mkdir()
    return ["state", "merge", str(a), str(tmp / "folder"), "--output", str(tmp / "m.parquet")], (
        "folder"
    )


@case()
def state_metrics_of_plain_parquet(tmp: Path) -> Case:
    return ["state", "metrics", str(parquet(tmp / "preds.parquet"))], "preds.parquet"


@case()
def state_inspect_of_plain_parquet(tmp: Path) -> Case:
    return ["state", "inspect", str(parquet(tmp / "preds.parquet"))], "preds.parquet"


@case()
def state_inspect_of_a_text_file(tmp: Path) -> Case:
    (tmp / "readme.txt").write_text("hello\n")
    return ["state", "inspect", str(tmp / "readme.txt")], "readme.txt"


@case()
def state_truncated(tmp: Path) -> Case:
    path = truncate(state_file(tmp / "s.parquet"))
    return ["state", "metrics", str(path)], "s.parquet"


@case()
def state_bit_flipped(tmp: Path) -> Case:
    path = state_file(tmp / "s.parquet")
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x10
    path.write_bytes(bytes(data))
    return ["state", "metrics", str(path)], "s.parquet"


@case()
def state_spec_edited_without_checksum(tmp: Path) -> Case:
    path = edit_spec(state_file(tmp / "s.parquet"), lambda s: s.update(precision=8), resign=False)
    return ["state", "metrics", str(path)], "checksum"


@case()
def state_spec_precision_not_a_number(tmp: Path) -> Case:
    path = edit_spec(state_file(tmp / "s.parquet"), lambda s: s.update(precision="x"), resign=True)
    return ["state", "metrics", str(path)], "'x'"


@case()
def state_spec_precision_too_many_bits(tmp: Path) -> Case:
    path = edit_spec(state_file(tmp / "s.parquet"), lambda s: s.update(precision=60), resign=True)
    return ["state", "inspect", str(path)], "60"


@case()
def state_spec_kind_unknown(tmp: Path) -> Case:
    path = edit_spec(state_file(tmp / "s.parquet"), lambda s: s.update(kind="nope"), resign=True)
    return ["state", "metrics", str(path)], "nope"


@case()
def state_spec_keys_dropped(tmp: Path) -> Case:
    path = state_file(tmp / "s.parquet", by=["seg"])
    edit_spec(path, lambda s: s.update(keys=[]), resign=True)
    return ["state", "metrics", str(path)], "seg"


@case()
def state_of_another_schema_version(tmp: Path) -> Case:
    path = state_file(tmp / "s.parquet")
    table = pq.read_table(path)
    meta = {**table.schema.metadata, b"streameval.schema_version": b"977"}
    pq.write_table(table.replace_schema_metadata(meta), path)
    return ["state", "inspect", str(path)], "977"


@case()
def state_merge_of_different_specs(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    b = state_file(tmp / "b.parquet", by=["seg"])
    return ["state", "merge", str(a), str(b), "--output", str(tmp / "m.parquet")], "seg"


@case()
def state_merge_of_different_precisions(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet", precision=8)
    b = state_file(tmp / "b.parquet", precision="exact")
    return ["state", "merge", str(a), str(b), "--output", str(tmp / "m.parquet")], "precision"


@case()
def state_merge_output_csv(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    return ["state", "merge", str(a), "--output", str(tmp / "merged.csv")], "merged.csv"


@case()
def state_merge_with_a_missing_file(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    argv = ["state", "merge", str(a), str(tmp / "b.parquet")]
    return [*argv, "--output", str(tmp / "m.parquet")], "b.parquet"


@case()
def state_metrics_output_xlsx(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    return ["state", "metrics", str(a), "--output", str(tmp / "m.xlsx")], "m.xlsx"


@case()
def state_metrics_by_window_of_a_state_file(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    return ["state", "metrics", str(a), "--by-window", "7d"], "a.parquet"


@case()
def state_metrics_by_window_misspelled(tmp: Path) -> Case:
    _path, store = ran(tmp)
    return ["state", "metrics", str(store), "--by-window", "7days"], "7days"


@case()
def state_metrics_end_not_a_date(tmp: Path) -> Case:
    _path, store = ran(tmp)
    return ["state", "metrics", str(store), "--by-window", "1d", "--end", "someday"], "someday"


@case()
def state_metrics_of_a_store_with_a_damaged_manifest(tmp: Path) -> Case:
    _path, store = ran(tmp)
    (store / "manifest.json").write_text("[1, 2")
    return ["state", "metrics", str(store)], "manifest.json"


@case()
def state_metrics_end_before_every_partition(tmp: Path) -> Case:
    _path, store = ran(tmp)
    return ["state", "metrics", str(store), "--by-window", "1d", "--end", "2000-01-01"], (
        "2000-01-01"
    )


@case()
def state_merge_output_is_a_folder(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    (tmp / "m.parquet").mkdir()
    return ["state", "merge", str(a), "--output", str(tmp / "m.parquet")], "m.parquet"


@case()
def state_metrics_output_below_a_file(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    (tmp / "afile").write_text("x\n")
    return ["state", "metrics", str(a), "--output", str(tmp / "afile" / "m.csv")], "afile/m.csv"


@case()
def state_inspect_without_a_path(tmp: Path) -> Case:
    return ["state", "inspect"], "required: path"


@case()
def state_metrics_threshold_not_a_number(tmp: Path) -> Case:
    a = state_file(tmp / "a.parquet")
    return ["state", "metrics", str(a), "--threshold", "high"], "high"


# ------------------------------------------------------------------------------ the test


@pytest.fixture
def hold() -> Iterator[Callable[[Path], int]]:
    """Start processes that hold store locks; they are killed when the case ends."""
    with ExitStack() as stack:
        yield lambda lock: stack.enter_context(holding(lock))


@pytest.mark.parametrize("build", CASES)
def test_bad_input_exits_2_with_one_error_line(build, tmp_path, capsys, request) -> None:
    from streameval.cli import main

    needs = list(inspect.signature(build).parameters)[1:]  # fixtures besides tmp
    extra = {name: request.getfixturevalue(name) for name in needs}
    argv, fragment = build(tmp_path, **extra)
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("streameval: error:"), err
    assert "Traceback" not in err
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"


def test_the_battery_is_large() -> None:
    assert len(CASES) >= 60
