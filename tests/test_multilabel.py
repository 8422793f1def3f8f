"""The multilabel task: its label inputs, sources, files, intervals, errors, CLI and jobs.

The metrics themselves are held to scikit-learn's by the registry-driven laws
(``test_metric_laws``: tables ``multilabel`` and ``per_label``); here, what reaches them.
"""

from __future__ import annotations

import io
import itertools
from typing import Any

import numpy as np
import polars as pl
import pytest
import reference_multilabel as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs_support import cli

import streameval as se
from reference import close, kernel_path
from streameval import source
from streameval.cli import main
from streameval.errors import InputError
from streameval.report import write_report

LABELS = ["y_a", "y_b", "y_c"]

SCORES = ["p_a", "p_b", "p_c"]
TASK: dict[str, Any] = {"task": "multilabel", "label": LABELS, "scores": SCORES}


def _rows(n: int = 900, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.random((n, 3)) < [0.5, 0.2, 0.05]
    scores = np.clip(truth * 0.3 + rng.random((n, 3)) * 0.8, 0, 1).round(2)
    return pl.DataFrame(
        {
            "day": rng.choice(["2026-10-01", "2026-10-02", "2026-10-03"], n),
            "seg": rng.choice(["a", "b"], n),
            **{c: truth[:, j].astype(np.int8) for j, c in enumerate(LABELS)},
            **{c: scores[:, j] for j, c in enumerate(SCORES)},
            "w": rng.choice([0.5, 1.0, 2.0], n),
        }
    )


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    frame = _rows()
    root = tmp_path_factory.mktemp("multilabel") / "log"
    for (day,), part in frame.partition_by("day", as_dict=True).items():
        (root / f"day={day}").mkdir(parents=True)
        part.drop("day").write_parquet(root / f"day={day}" / "part-0.parquet")
    return frame, root


def _same(a: pl.DataFrame, b: pl.DataFrame, tol: float = 1e-12) -> None:
    assert a.columns == b.columns and a.height == b.height
    for column in a.columns:
        for x, y in zip(a[column].to_list(), b[column].to_list(), strict=True):
            assert close(x, y, tol), (column, x, y)


def test_labels_as_columns_as_tag_lists_and_as_flag_lists_agree(log):
    frame, _ = log
    classes = ["a", "b", "c"]
    tags = pl.concat_list(
        pl.when(pl.col(c) == 1).then(pl.lit(name)) for c, name in zip(LABELS, classes, strict=True)
    ).list.drop_nulls()
    flags = pl.concat_list(pl.col(c).cast(pl.Boolean) for c in LABELS)
    listed = frame.with_columns(tags.alias("tags"), flags.alias("flags"))
    kw = {"by": "seg", "weight": "w"}
    want = se.evaluate(frame, **TASK, **kw, classes=classes)
    by_tags = se.evaluate(
        listed, task="multilabel", label="tags", scores=SCORES, classes=classes, **kw
    )
    _same(by_tags, want)
    mapping = dict(zip(classes, SCORES, strict=True))
    by_flags = se.evaluate(listed, task="multilabel", label="flags", scores=mapping, **kw)
    _same(by_flags, want)
    arrays = listed.with_columns(pl.col("flags").list.to_array(3))
    _same(se.evaluate(arrays, task="multilabel", label="flags", scores=mapping, **kw), want)
    per_label = se.accumulate(listed, task="multilabel", label="tags", scores=mapping, **kw)
    assert per_label.per_class()["class"].to_list() == classes * 2


def test_a_scores_mapping_pairs_each_label_with_its_column(log):
    frame, _ = log
    shuffled = {"y_c": "p_c", "y_a": "p_a", "y_b": "p_b"}
    got = se.evaluate(frame, task="multilabel", label=LABELS, scores=shuffled)
    _same(got, se.evaluate(frame, **TASK))


def test_every_source_gives_the_same_table(log, tmp_path, monkeypatch):
    frame, root = log
    kw = {**TASK, "by": ["day", "seg"], "weight": "w"}
    want = se.evaluate(frame, **kw)
    single = tmp_path / "one.parquet"
    frame.write_parquet(single)
    sources = {
        "hive": root,
        "file": single,
        "glob": str(root / "*" / "*.parquet"),
        "LazyFrame": frame.lazy(),
        "Arrow": frame.to_arrow(),
    }
    for name, src in sources.items():
        columns = ["day", "seg"] if name != "glob" else ["seg"]
        got = se.evaluate(src, **(kw | {"by": columns}))
        expected = want if name != "glob" else se.evaluate(frame, **(kw | {"by": "seg"}))
        _same(got.with_columns(pl.col(columns[0]).cast(pl.String)), expected)
    monkeypatch.setattr(source, "SHARD_ROWS", 50)  # many shards of one file
    _same(se.evaluate(single, **kw), want)
    with kernel_path("off"):  # the Polars path: rows collected and summed alike
        _same(se.evaluate(single, **kw), want)


@settings(max_examples=25, deadline=None)
@given(ref.multilabel_frames(), st.integers(0, 2**31 - 1), st.sampled_from([3, "exact"]))
def test_rows_in_any_order_and_any_chunks_give_the_same_state(drawn, seed, precision):
    df, cuts, weighted, _ = drawn
    labels, scores = ref.label_columns(df)
    kw: dict[str, Any] = {"task": "multilabel", "label": labels, "scores": scores, "by": "g"}
    kw |= {"weight": "w" if weighted else None, "precision": precision}
    whole = se.accumulate(df, **kw)
    shuffled = se.accumulate(df.sample(fraction=1.0, shuffle=True, seed=seed), **kw)
    parts = se.merge([se.accumulate(df[a:b], **kw) for a, b in itertools.pairwise(cuts)])
    for other in (shuffled, parts):
        _same(other.metrics(), whole.metrics(), 1e-9)
        _same(other.per_class(), whole.per_class(), 1e-9)


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(max_examples=40, deadline=None)
@given(ref.multilabel_frames(), st.sampled_from([0, 5, "exact"]), st.booleans())
def test_evaluate_from_the_rows_equals_the_states_table(drawn, precision, keyed):
    """``se.evaluate`` sums the labels' metrics straight from the rows, with no state."""
    df, _, weighted, _ = drawn
    labels, scores = ref.label_columns(df)
    kw: dict[str, Any] = {"task": "multilabel", "label": labels, "scores": scores}
    kw |= {"weight": "w" if weighted else None, "precision": precision}
    kw["by"] = "g" if keyed else None
    state = se.accumulate(df, **kw)
    _same(se.evaluate(df, **kw), state.metrics(), 1e-9)
    for picked in (["f1_samples"], ["roc_auc_micro", "hamming_loss"], ["f1_macro"]):
        _same(se.evaluate(df, **kw, metrics=picked), state.metrics(metrics=picked), 1e-9)


def test_a_state_file_round_trips(log, tmp_path):
    frame, _ = log
    state = se.accumulate(frame, **TASK, by="seg", weight="w", thresholds=0.3)
    path = tmp_path / "state.parquet"
    state.write(path)
    back = se.read_state(path)
    assert back.spec == state.spec and back.spec.threshold == 0.3
    assert back.metrics().equals(state.metrics())
    assert back.per_class().equals(state.per_class())


def test_the_threshold_sets_the_predicted_labels(log):
    frame, _ = log
    state = se.accumulate(frame, **TASK, thresholds=0.3, precision=6)
    exact = se.accumulate(frame, **TASK, thresholds=0.3, precision="exact")
    y = frame.select(LABELS).to_numpy()
    p = (frame.select(SCORES).to_numpy() >= 0.3).astype(int)
    from sklearn.metrics import f1_score

    for st_ in (state, exact):  # 0.3 is no bucket edge at 6 bits: the buckets are cut there
        table = st_.metrics()
        assert table["threshold"].item() == 0.3
        assert table["f1_micro"].item() == pytest.approx(f1_score(y, p, average="micro"), rel=1e-12)
    assert state.metrics(0.3).equals(state.metrics())
    with pytest.raises(InputError, match="the threshold the multilabel state was accumulated"):
        state.metrics(0.5)


def test_intervals_by_bootstrap_by_jackknife_and_per_label(log):
    frame, _ = log
    boot = se.evaluate(frame, **TASK, by="seg", ci="bootstrap", bootstrap=20, seed=1)
    assert {"f1_samples_lo", "roc_auc_macro_hi", "hamming_loss_lo"} <= set(boot.columns)
    assert (boot["f1_samples_lo"] <= boot["f1_samples"]).all()
    jack = se.evaluate(frame, **TASK, by=["day"], ci="jackknife", jackknife="day")
    assert "subset_accuracy_lo" in jack.columns
    labels = se.accumulate(frame, **TASK, by="seg").per_class(ci="wilson")
    assert {"precision_lo", "recall_hi", "roc_auc_lo"} <= set(labels.columns)
    with pytest.raises(InputError, match="expected no ci= for a multilabel metric table"):
        se.evaluate(frame, **TASK, ci="wilson")


def test_a_label_without_both_classes_averages_as_scikit_learn():
    df = pl.DataFrame(
        {"y0": [1, 0, 1, 0], "y1": [0, 0, 0, 0], "p0": [0.9, 0.2, 0.6, 0.4],
         "p1": [0.3, 0.1, 0.8, 0.6]}
    )  # fmt: skip
    table = se.evaluate(df, task="multilabel", label=["y0", "y1"], scores=["p0", "p1"])
    labels = se.accumulate(df, task="multilabel", label=["y0", "y1"], scores=["p0", "p1"])
    assert labels.per_class()["roc_auc"].to_list() == [1.0, None]
    # (scikit-learn: the macro AUC is NaN, the weighted one leaves out the label without
    # support, and the label without a positive counts 0 in the average precision's macro)
    assert table["roc_auc_macro"].item() is None and table["roc_auc_weighted"].item() == 1.0
    assert table["average_precision_macro"].item() == 0.5
    want = ref.multilabel_reference(df.with_columns(g=pl.lit(0)))[0]
    for name, value in want.items():
        assert close(table[name].item(), value), name


MISTAKES = [
    ({"label": ["y_a", "y_b"]}, "expected one of the label columns per label"),
    ({"label": "seg"}, "as a list of label columns or one list column"),
    ({"scores": None}, "expected scores= naming a score column per label"),
    ({"thresholds": [0.3, 0.5]}, "expected one threshold for a multilabel task"),
    ({"task": "binary", "score": "p_a"}, "expected label= to name one column for task='binary'"),
    ({"scores": {"a": "p_a", "b": "p_b", "z": "p_c"}}, "are not labels"),
]


@pytest.mark.parametrize(("change", "message"), MISTAKES)
def test_mistakes_are_named(log, change, message):
    frame, _ = log
    with pytest.raises(InputError, match=message):
        se.accumulate(frame, **(TASK | {"classes": ["a", "b", "c"]} | change))


def test_bad_rows_are_named(log):
    frame, _ = log
    two = frame.with_columns(
        pl.when(pl.col("p_a") > 0.7).then(2).otherwise(pl.col("y_a")).alias("y_a")
    )
    with pytest.raises(InputError, match=r"expected 0/1 .* values in the label column 'y_a'"):
        se.accumulate(two, **TASK)
    nan = frame.with_columns(
        pl.when(pl.col("p_b") > 0.7).then(float("nan")).otherwise(pl.col("p_b")).alias("p_b")
    )
    with pytest.raises(InputError, match="finite values in the score column 'p_b'"):
        se.accumulate(nan, **TASK)
    tags = pl.DataFrame(
        {"tags": [["a"], ["x", "b"], None], "p": [0.1, 0.2, 0.3], "q": [0.5, 0.5, 0.5]}
    )
    kw = {"task": "multilabel", "label": "tags", "scores": ["p", "q"], "classes": ["a", "b"]}
    with pytest.raises(InputError, match="expected no nulls in the label column 'tags'"):
        se.accumulate(tags, **kw)
    with pytest.raises(InputError, match="hold only labels among the classes"):
        se.accumulate(tags.drop_nulls(), **kw)
    with pytest.raises(InputError, match=r"expected classes= .* naming the labels"):
        se.accumulate(tags.drop_nulls(), **(kw | {"classes": None}))
    flags = pl.DataFrame({"f": [[True, False], [True]], "p": [0.1, 0.2], "q": [0.5, 0.5]})
    with pytest.raises(InputError, match="to hold 2 booleans"):
        se.accumulate(flags, task="multilabel", label="f", scores={"a": "p", "b": "q"})


def test_integer_flags_are_not_taken_for_labels():
    flags = np.array([[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    scores = {"p0": [0.9, 0.1, 0.2], "p1": [0.2, 0.3, 0.8], "p2": [0.7, 0.1, 0.1]}
    df = pl.DataFrame({"y": flags, **scores})  # an Array(Int64, 3) column
    kw = {"task": "multilabel", "label": "y", "scores": list(scores)}
    with pytest.raises(InputError, match="could also be one 0/1 flag per label"):
        se.accumulate(df, **kw, classes=[0, 1, 2])
    with pytest.raises(InputError, match="each once"):
        se.accumulate(df, **kw, classes=[1, 2, 3])  # (rows [1, 0, 1] repeat a value)
    as_flags = df.with_columns(pl.col("y").cast(pl.List(pl.Boolean)))
    table = se.evaluate(as_flags, **kw, classes=["a", "b", "c"])
    assert table["subset_accuracy"].item() == 1.0 and table["hamming_loss"].item() == 0.0


def test_one_label_column_is_one_label(log):
    frame, _ = log
    one = se.evaluate(frame, task="multilabel", label="y_a", scores=["p_a"], by="seg")
    listed = se.evaluate(frame, task="multilabel", label=["y_a"], scores=["p_a"], by="seg")
    assert one.equals(listed)
    state = se.accumulate(frame, task="multilabel", label="y_a", scores=["p_a"])
    assert state.spec.labels == ("y_a",) and state.spec.classes == ("y_a",)


def test_the_classification_report_has_sklearns_multilabel_layout(log, capsys):
    from sklearn.metrics import classification_report

    frame, root = log
    part = frame.filter(pl.col("seg") == "a")
    state = se.accumulate(frame, **TASK, by="seg", weight="w")
    y = part.select(LABELS).to_numpy()
    p = (part.select(SCORES).to_numpy() >= 0.5).astype(int)
    want = classification_report(
        y, p, target_names=LABELS, sample_weight=part["w"].to_numpy(), zero_division=0
    )
    text = state.report_text()
    assert text.startswith("seg = a\n\n" + want)
    args = ["evaluate", str(root), "--task", "multilabel", "--label", "y_a,y_b,y_c"]
    args += ["--scores", "p_a,p_b,p_c"]
    capsys.readouterr()
    assert main([*args, "--table", "report"]) == 0
    unweighted = classification_report(
        frame.select(LABELS).to_numpy(),
        (frame.select(SCORES).to_numpy() >= 0.5).astype(int),
        target_names=LABELS,
        zero_division=0,
    )
    assert capsys.readouterr().out == unweighted
    assert main([*args, "--table", "per-class", "--output", "-"]) == 0
    assert pl.read_csv(io.StringIO(capsys.readouterr().out))["class"].to_list() == LABELS


def test_the_command_line_and_a_job(log, tmp_path, capsys):
    frame, root = log
    args = ["evaluate", str(root), "--task", "multilabel", "--label", "y_a,y_b", "--label", "y_c"]
    capsys.readouterr()
    assert main([*args, "--scores", "p_a,p_b,p_c", "--by", "seg", "--output", "-"]) == 0
    table = pl.read_csv(io.StringIO(capsys.readouterr().out))
    want = se.evaluate(frame, **TASK, by="seg")
    assert table["f1_samples"].to_list() == pytest.approx(want["f1_samples"].to_list(), rel=1e-12)
    assert main([*args, "--scores", "p_a,p_b"]) == 2
    assert "expected one of the score columns per label" in capsys.readouterr().err
    job = tmp_path / "job.toml"
    job.write_text(
        f'[source]\npaths = ["{root}"]\npartition_key = "day"\n\n'
        '[task]\nkind = "multilabel"\nlabel = ["y_a", "y_b", "y_c"]\n'
        'scores = ["p_a", "p_b", "p_c"]\nthreshold = [0.4]\nby = ["seg"]\n\n'
        '[store]\npath = "store"\n\n[[outputs]]\npath = "out/metrics"\nwindows = ["all"]\n'
    )
    result = cli("run", str(job))
    assert result.returncode == 0, result.stderr
    out = pl.read_parquet(tmp_path / "out" / "metrics" / "**" / "*.parquet")
    last = out.filter(pl.col("day") == out["day"].max()).sort("seg")
    want = se.evaluate(frame, **TASK, by="seg", threshold=0.4)
    assert last["f1_micro"].to_list() == pytest.approx(want["f1_micro"].to_list(), rel=1e-12)


def test_the_report_draws_the_labels_metrics(log, tmp_path):
    frame, _ = log
    state = se.accumulate(
        frame.with_columns(pl.col("day").str.to_date()), **TASK, by=["seg", "day"]
    )
    path = tmp_path / "report.html"
    groups, _ = write_report(state, path)
    text = path.read_text(encoding="utf-8")
    assert groups == 6
    assert 'data-kind="trend"' in text and "f1_samples" in text
