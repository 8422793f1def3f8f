"""The ranking task: parity on chunked, weighted, tied queries; whole queries; its errors.

The registry-driven laws (``test_metric_laws``) hold the table to the brute-force reference
(every order of tied items) and to scikit-learn's ``dcg_score``, ``ndcg_score`` and
``label_ranking_average_precision_score``; here the cutoffs vary, the parts are merged, a
query split across parts is refused, and the task runs from every entry point.
"""

from __future__ import annotations

import io
import re

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs_support import cli

import streameval as se
from reference import assert_tables_match, chunks
from reference_ranking import ranking_frames, ranking_reference
from streameval.cli import main
from streameval.errors import InputError
from streameval.report import write_report

RANKING = {"task": "ranking", "label": "y", "score": "s", "query": "q"}
CUTOFFS = st.lists(st.none() | st.integers(1, 7), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None)
@given(ranking_frames(), CUTOFFS)
def test_merged_chunks_match_the_reference_at_any_cutoffs(data, ks):
    df, cuts, weighted = data
    kw = RANKING | {"by": "g", "k": ks, "weight": "w" if weighted else None}
    merged = se.merge([se.accumulate(c, **kw) for c in chunks(df, cuts)])
    assert_tables_match(merged.metrics(), ranking_reference(df, tuple(set(ks))))
    assert_tables_match(se.evaluate(df, **kw), ranking_reference(df, tuple(set(ks))))


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """Queries over two days as a hive directory; query 25 has items on both days."""
    rng = np.random.default_rng(5)
    q = np.repeat(np.arange(40), 6)
    first_day = (q < 20) | ((q == 25) & (np.arange(q.size) % 2 == 0))
    frame = pl.DataFrame(
        {
            "q": q,
            "seg": np.where(q % 2 == 0, "a", "b"),
            "y": rng.choice([0, 0, 1, 2], q.size),
            "s": np.round(rng.random(q.size), 1),
            "day": np.where(first_day, "2026-10-01", "2026-10-02"),
        }
    )
    root = tmp_path_factory.mktemp("ranking")
    for (day,), part in frame.partition_by("day", as_dict=True).items():
        (root / f"day={day}").mkdir()
        part.drop("day").write_parquet(root / f"day={day}" / "part-0.parquet")
    return frame, root


def test_every_source_gives_the_same_table(log):
    frame, root = log
    want = se.evaluate(frame, **RANKING, by="seg", k=[3, None])
    sources = [
        root,
        str(root / "**" / "*.parquet"),
        frame.lazy(),
        frame.to_arrow(),
        pa.Table.from_pandas(frame.to_pandas()),
    ]
    for source in sources:
        got = se.evaluate(source, **RANKING, by="seg", k=[3, None])
        assert got.select(want.columns).equals(want), source


def test_a_query_read_whole_across_partitions_is_one_query(log):
    # one call reads the source in one pass: query 25's items on two days meet
    frame, root = log
    table = se.evaluate(root, **RANKING, k=None)
    assert table["queries"].item() == 40
    assert table.equals(se.evaluate(frame.drop("day"), **RANKING, k=None))


def test_a_query_in_two_groups_is_refused(log):
    _, root = log
    with pytest.raises(InputError, match=r"1 queries have rows in several groups of day"):
        se.evaluate(root, **RANKING, by="day")


def test_a_query_in_two_merged_states_is_refused(log):
    frame, _ = log
    days = [p.drop("day") for p in frame.partition_by("day", maintain_order=True)]
    parts = [se.accumulate(p, **RANKING) for p in days]
    with pytest.raises(InputError, match=r"but 1 queries appear in two of the states merged"):
        se.merge(parts)
    keyed = [se.accumulate(p.with_columns(day=pl.lit(i)), **RANKING, by="day")
             for i, p in enumerate(days)]  # fmt: skip
    with pytest.raises(InputError, match="query=\\['day', 'q'\\]"):
        se.merge(keyed)
    whole = [p.filter(pl.col("q") != 25) for p in days]
    merged = se.merge([se.accumulate(p, **RANKING) for p in whole])
    assert merged.metrics()["queries"].item() == 39
    # the same state merged with itself counts its queries twice: refused as well
    with pytest.raises(InputError, match="appear in two of the states"):
        se.merge([parts[0], parts[0]])


def test_a_state_file_keeps_its_queries(log, tmp_path):
    frame, _ = log
    state = se.accumulate(frame, **RANKING, by="seg", k=[1, 5])
    state.write(tmp_path / "s.parquet")
    back = se.read_state(tmp_path / "s.parquet")
    assert back.spec.query == ("q",) and back.spec.cutoffs == (1, 5)
    assert back.metrics().equals(state.metrics())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"query": None}, "expected query= naming the query column"),
        ({"by": "q"}, "expected group keys other than the columns read"),
        ({"k": 0}, "expected k to be a positive integer"),
        ({"k": [5, "10"]}, "expected k= to be a cutoff"),
        ({"bootstrap": 20, "row_id": "q"}, "expected no bootstrap for a ranking task"),
        ({"score": None}, "expected score= naming the score column of a ranking task"),
    ],
)
def test_mistakes_are_named(log, change, message):
    frame, _ = log
    with pytest.raises(InputError, match=message):
        se.accumulate(frame, **(RANKING | change))


def test_bad_rows_are_named(log):
    frame, _ = log
    negative = frame.with_columns(y=pl.when(pl.col("q") == 3).then(-1).otherwise(pl.col("y")))
    with pytest.raises(InputError, match=r"expected relevance labels ≥ 0 in 'y', found 6"):
        se.evaluate(negative, **RANKING)
    weights = frame.with_columns(w=pl.int_range(pl.len()).cast(pl.Float64))
    with pytest.raises(InputError, match=r"one weight per query in 'w', but 40 queries"):
        se.evaluate(weights, **RANKING, weight="w")
    state = se.accumulate(frame, **RANKING)
    with pytest.raises(InputError, match="no ci= for a ranking state"):
        state.metrics(ci="wilson")
    with pytest.raises(InputError, match="no threshold for a ranking state"):
        state.metrics(0.5)


def test_jackknife_intervals_over_days(log):
    frame, _ = log
    clean = frame.filter(pl.col("q") != 25)
    table = se.evaluate(clean, **RANKING, by="day", ci="jackknife", jackknife="day")
    assert {"ndcg_lo", "ndcg_hi", "mrr_lo"} <= set(table.columns)


def test_the_command_line_evaluates_queries(log, capsys):
    _, root = log
    args = ["evaluate", str(root), "--task", "ranking", "--label", "y", "--score", "s"]
    capsys.readouterr()
    assert main([*args, "--query", "q", "--k", "3", "--k", "all", "--output", "-"]) == 0
    table = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert table["k"].to_list() == [None, 3]
    assert main([*args, "--k", "3"]) == 2
    assert "expected query= naming the query column" in capsys.readouterr().err
    binary = ["evaluate", str(root), "--label", "y", "--score", "s", "--query", "q"]
    assert main(binary) == 2
    assert "--query only with --task ranking" in capsys.readouterr().err


def test_a_job_refuses_a_query_split_across_days(log, tmp_path):
    frame, root = log
    job = tmp_path / "job.toml"
    job.write_text(
        f'[source]\npaths = ["{root}"]\npartition_key = "day"\n\n'
        '[task]\nkind = "ranking"\nlabel = "y"\nscore = "s"\nquery = "q"\nk = [3, "all"]\n'
        'by = ["seg"]\n\n[store]\npath = "store"\n\n'
        '[[outputs]]\npath = "out/metrics"\nwindows = ["1d", "all"]\n'
    )
    result = cli("run", str(job))
    assert result.returncode == 2, result.stderr
    assert "appear in two of the states merged" in result.stderr
    clean = tmp_path / "clean"
    for (day,), part in frame.filter(pl.col("q") != 25).partition_by("day", as_dict=True).items():
        (clean / f"day={day}").mkdir(parents=True)
        part.drop("day").write_parquet(clean / f"day={day}" / "part-0.parquet")
    job.write_text(job.read_text().replace(str(root), str(clean)))
    result = cli("run", str(job))
    assert result.returncode == 0, result.stderr
    out = pl.read_parquet(tmp_path / "out" / "metrics" / "**" / "*.parquet")
    last = out.filter((pl.col("window") == "all") & (pl.col("day") == out["day"].max()))
    want = se.evaluate(frame.filter(pl.col("q") != 25), **RANKING, by="seg", k=[3, None])
    assert last.sort("seg", "k", nulls_last=False)["ndcg"].to_list() == pytest.approx(
        want["ndcg"].to_list(), rel=1e-12
    )


def test_the_report_draws_a_line_per_group_and_cutoff(log, tmp_path):
    frame, _ = log
    clean = frame.filter(pl.col("q") != 25).with_columns(pl.col("day").str.to_date())
    state = se.accumulate(clean, **RANKING, by=["seg", "day"], k=[3, None])
    path = tmp_path / "report.html"
    groups, _ = write_report(state, path)
    text = path.read_text(encoding="utf-8")
    assert groups == 4
    labels = re.findall(r'class="label">([^<]*)<', text)
    assert sorted(set(labels)) == ["a k=3", "a k=all", "b k=3", "b k=all"]
    assert 'data-kind="trend"' in text and "ndcg" in text


@settings(max_examples=40, deadline=None)
@given(ranking_frames(), st.integers(0, 2**31 - 1))
def test_rows_in_any_order_give_the_same_bits(data, seed):
    # each query's items are ordered by (score, label) and the queries summed in (group,
    # query) order: the sums are the same floats whatever the rows' order
    df, _, weighted = data
    kw = RANKING | {"by": "g", "k": [None, 2], "weight": "w" if weighted else None}
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed)
    assert se.evaluate(shuffled, **kw).equals(se.evaluate(df, **kw))
