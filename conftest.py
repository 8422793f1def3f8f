"""Collection settings for the package's doctests, and the documentation's code blocks as tests.

``README.md`` and the pages under ``docs/`` are collected by pytest-markdown-docs (their
```python blocks; ```python notest blocks are documentation only). Each block runs in a fresh
folder holding a small prediction log written by :func:`write_docs_data`
(``preds/day=…/part-0.parquet`` with the columns every example uses; ``clicks/`` and
``tagged/`` for the ranking and multilabel pages), the job file of the
jobs page as ``job.toml``, and a few names the examples use for "your data" (``source``,
``df``, ``resubstitution``, ``oob``). The ```bash blocks' ``streameval`` commands and the
```toml job files run in ``tests/test_readme.py``; ``tests/test_docs.py`` builds the site.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under ``CI=true`` a skipped test fails.

    Every skip here hides a real component (a browser, Spark, Delta, Iceberg, an optional
    library) that ``.ci/run`` installs: in CI it must run.
    """
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        if "+SKIP option" in str(reason):  # a doctest shown, not run: it hides no component
            return
        report.outcome = "failed"
        report.longrepr = f"CI=true, but this test skipped ({reason}); .ci/run installs it"


ROOT = Path(__file__).resolve().parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The griffe extension of the API reference is configuration, not a module to doctest.
collect_ignore_glob = ["docs/*.py"]
DAYS = [date(2026, 9, 29) + timedelta(days=d) for d in range(4)]  # 2026-10-01 among them
_GLOBALS: dict[str, Any] = {}


def doc_files() -> list[Path]:
    """The files whose code blocks are tests: the README and every page of the docs."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def doc_blocks(language: str) -> list[tuple[Path, int, str]]:
    """(file, line, body) of the documentation's fenced blocks of one language.

    The language is the fence's first word; ```LANGUAGE notest blocks are left out.
    """
    pattern = re.compile(rf"^```{language}[^\S\n]*([^\n]*)\n(.*?)^```$", re.M | re.S)
    found = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for m in pattern.finditer(text):
            if "notest" not in m.group(1):
                found.append((path, text.count("\n", 0, m.start()) + 1, m.group(2)))
    return found


def day_frame(day: int, rows: int = 120) -> pl.DataFrame:
    """One day of predictions with the columns of every example in the documentation."""
    rng = np.random.default_rng(day)
    label = rng.random(rows) < 0.4
    animals = np.array(["cat", "dog", "bird"])
    actual = rng.integers(0, 3, rows)
    p = rng.dirichlet([1, 1, 1], rows) + np.eye(3)[actual]
    p /= p.sum(axis=1, keepdims=True)
    y = rng.lognormal(2, 0.3, rows)
    return pl.DataFrame(
        {
            "id": np.arange(rows) + day * rows,
            "segment": rng.choice(["a", "b"], rows),
            "label": label.astype(np.int8),
            "score": np.round(rng.random(rows) * 0.6 + 0.4 * label, 3),
            "weight": rng.choice([0.5, 1.0, 2.0], rows),
            "model_a": np.round(rng.random(rows) * 0.5 + 0.5 * label, 3),
            "model_b": np.round(rng.random(rows) * 0.7 + 0.3 * label, 3),
            "animal": animals[actual],
            "guess": animals[p.argmax(axis=1)],
            **{f"p_{k}": p[:, i] for i, k in enumerate(animals)},
            "y": y,
            "y_hat": y * rng.lognormal(0, 0.1, rows),
        }
    )


def write_docs_data(folder: Path) -> dict[str, Any]:
    """Write the documentation's data into ``folder``; return the names its examples use."""
    frames = []
    for i, day in enumerate(DAYS):
        part = folder / "preds" / f"day={day.isoformat()}"
        part.mkdir(parents=True)
        frame = day_frame(i)
        frame.write_parquet(part / "part-0.parquet")
        frames.append(frame.with_columns(day=pl.lit(day)))
    df = pl.concat(frames)
    (folder / "oof").mkdir()
    folds = df.with_columns(fold=(pl.col("id") % 5).cast(pl.Int32))
    for k, rows in folds.partition_by("fold", as_dict=True).items():
        rows.write_parquet(folder / "oof" / f"fold-{k[0]}.parquet")
    oob = pl.concat(
        df.sample(fraction=0.4, seed=r).with_columns(replicate=pl.lit(r, pl.Int32))
        for r in range(5)
    )
    for i, day in enumerate(DAYS[:2]):  # the ranking page's log: queries of 8 items a day
        rng = np.random.default_rng(i)
        query = np.repeat(np.arange(i * 300, (i + 1) * 300), 8)
        clicks = pl.DataFrame(
            {
                "query_id": query,
                "segment": np.where(query % 3 == 0, "mobile", "web"),
                "relevance": rng.choice([0, 0, 0, 1, 2], query.size),
                "score": np.round(rng.random(query.size), 2),
            }
        )
        (folder / "clicks" / f"day={day.isoformat()}").mkdir(parents=True)
        clicks.write_parquet(folder / "clicks" / f"day={day.isoformat()}" / "part-0.parquet")
    tags = ["news", "sport", "tech"]
    for i, day in enumerate(DAYS[:2]):  # the multilabel page's log: three tags a row
        rng = np.random.default_rng(10 + i)
        truth = rng.random((400, 3)) < [0.4, 0.2, 0.05]
        scores = np.clip(truth * 0.35 + rng.random((400, 3)) * 0.7, 0, 1).round(3)
        tagged = pl.DataFrame(
            {
                "segment": rng.choice(["web", "app"], 400),
                **{f"is_{t}": truth[:, j].astype(np.int8) for j, t in enumerate(tags)},
                **{f"p_{t}": scores[:, j] for j, t in enumerate(tags)},
            }
        )
        (folder / "tagged" / f"day={day.isoformat()}").mkdir(parents=True)
        tagged.write_parquet(folder / "tagged" / f"day={day.isoformat()}" / "part-0.parquet")
    jobs = [body for _, _, body in doc_blocks("toml") if "[source]" in body]
    if jobs:
        (folder / "job.toml").write_text(jobs[0], encoding="utf-8")
    import streameval as se

    return {"se": se, "source": "preds/", "df": df, "resubstitution": df, "oob": oob}


@pytest.fixture
def docs_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with the documentation's data, made the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [sys.argv[0]])  # the cross-validation example reads argv
    monkeypatch.setenv("MPLBACKEND", "Agg")
    _GLOBALS.clear()
    _GLOBALS.update(write_docs_data(tmp_path))
    yield tmp_path
    _GLOBALS.clear()


@pytest.fixture
def docs_spark(docs_workdir: Path, spark_classic: Any) -> Any:
    """The Spark example's data: a catalog table ``ml.predictions`` and ``spark``."""
    spark_classic.sql("CREATE DATABASE IF NOT EXISTS ml")
    frame = spark_classic.read.parquet(str(docs_workdir / "preds"))
    frame.write.mode("overwrite").saveAsTable("ml.predictions")
    _GLOBALS["spark"] = spark_classic
    return spark_classic


def pytest_markdown_docs_globals() -> dict[str, Any]:
    """Names the documentation's Python blocks may use without defining them."""
    return dict(_GLOBALS)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect the documentation's Python blocks (not --markdown-docs: that takes every file)."""
    if file_path not in doc_files() or getattr(parent.config.option, "markdowndocs", False):
        return None
    from pytest_markdown_docs.plugin import MarkdownTextFile

    return MarkdownTextFile.from_parent(parent, path=file_path)  # type: ignore[no-any-return]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The documentation's blocks run in a folder holding its data (Spark's: with Spark)."""
    files = set(doc_files())
    for item in items:
        if item.path in files and hasattr(item, "code"):
            fixture = "docs_spark" if "spark.table(" in item.code else "docs_workdir"
            item.add_marker(pytest.mark.usefixtures(fixture))
            # set up before the plugin asks pytest_markdown_docs_globals for the block's names
            item.fixturenames = (*item.fixturenames, fixture)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def spark_classic() -> Iterator[Any]:
    """A real local Spark session (local[2]) for the whole test session, stopped at the end."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    port = _free_port()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("streameval-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="se-spark-warehouse-"))
        .config("spark.connect.grpc.binding.port", str(port))
        .config("spark.driver.extraJavaOptions", "-Dlog4j.rootLogger=ERROR")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("streameval.tests.connect.port", str(port))
    yield session
    session.stop()


os.environ.setdefault("MPLBACKEND", "Agg")
