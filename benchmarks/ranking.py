"""Benchmark the ranking task against a bare scan, Polars window functions and scikit-learn.

Data (generated when missing, ``--dir``), ``--queries`` queries by two generators:

graded
    ``--items`` items a query, Int64 query ids, graded labels 0–3 (60 % zeros), scores with
    two decimals (some ties), 10 segments; each query's rows together, as logs write them.
ragged
    1 … 2·``--items`` − 1 items a query (the same mean), String query ids, labels 0–4, scores with
    one decimal (many ties), 10 segments; the rows shuffled within each file, so the task
    must sort them by query first.

Each is written as one Parquet file and as a hive directory of 4 ``day=`` partitions (a
query's rows within one day). Per source (single file, hive directory, LazyFrame,
DataFrame), timed in this process after a warm-up (median of ``--repeat``):

streameval
    ``se.evaluate(source, task="ranking", by="segment", k=[5, 10])``: ndcg, dcg, precision,
    recall, hit rate, MRR and MAP at 5 and 10, ties averaged.
scan
    the bare scan of the same source: ``group_by("segment").agg(count, sum(label),
    sum(score))``.
polars windows
    NDCG@10 alone with Polars window functions (ordinal ranks: ties not averaged).
sklearn
    ``ndcg_score(…, k=10)`` per query over ``--sklearn-sample`` queries, scaled to all
    queries (a loop over a million queries takes minutes; the per-query cost is flat).

Peak memory: ``streameval`` once more in a fresh process (its peak RSS). Prints a Markdown
table with seconds and streameval's ratio to each baseline.

Usage::

    python benchmarks/ranking.py --queries 1000000 --items 20 --dir /tmp/se_ranking
"""

from __future__ import annotations

import argparse
import math
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

import streameval as se

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import median_seconds

DAYS = ("2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04")


def _frame(generator: str, queries: int, items: int, seed: int = 7) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    if generator == "graded":
        sizes = np.full(queries, items)
    else:
        sizes = rng.integers(1, 2 * items, queries)
    q = np.repeat(np.arange(queries), sizes)
    n = q.size
    if generator == "graded":
        y = rng.choice(np.array([0, 0, 0, 0, 0, 0, 1, 1, 2, 3], np.int8), n)
        s = np.round(0.3 * y + rng.normal(size=n), 2)
        ids: object = q
    else:
        y = rng.choice(np.array([0, 0, 0, 1, 2, 3, 4], np.int8), n)
        s = np.round(0.2 * y + rng.normal(size=n), 1)
        ids = np.char.add("q", q.astype(str))
    frame = pl.DataFrame(
        {
            "query_id": ids,
            "relevance": y,
            "score": s.astype(np.float32),
            "segment": np.repeat(rng.integers(0, 10, queries), sizes).astype(np.int32),
            "day": np.repeat(rng.choice(np.array(DAYS), queries), sizes),
        }
    )
    if generator == "ragged":
        frame = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    return frame


def _data(folder: Path, generator: str, queries: int, items: int) -> tuple[Path, Path]:
    root = folder / f"{generator}-{queries}x{items}"
    single, hive = root / "all.parquet", root / "hive"
    if not single.exists():
        frame = _frame(generator, queries, items)
        root.mkdir(parents=True, exist_ok=True)
        frame.drop("day").write_parquet(single)
        for (day,), part in frame.partition_by("day", as_dict=True).items():
            (hive / f"day={day}").mkdir(parents=True, exist_ok=True)
            part.drop("day").write_parquet(hive / f"day={day}" / "part-0.parquet")
    return single, hive


def _scan(lf: pl.LazyFrame) -> pl.DataFrame:
    aggs = [pl.len(), pl.col("relevance").sum(), pl.col("score").sum()]
    return lf.group_by("segment").agg(aggs).collect(engine="streaming")


def _windows(lf: pl.LazyFrame) -> pl.DataFrame:
    """NDCG@10 per segment with window functions (ordinal ranks: ties not averaged)."""
    q = ["segment", "query_id"]
    y = pl.col("relevance").cast(pl.Float64)
    pos = pl.col("score").rank("ordinal", descending=True).over(q)
    ideal = y.rank("ordinal", descending=True).over(q)

    def discount(p: pl.Expr) -> pl.Expr:
        return 1.0 / ((p + 1).cast(pl.Float64).log() / math.log(2.0))

    per_query = (
        lf.with_columns(pos.alias("_p"), ideal.alias("_i"))
        .group_by(q)
        .agg(
            (discount(pl.col("_p")) * y).filter(pl.col("_p") <= 10).sum().alias("dcg"),
            (discount(pl.col("_i")) * y).filter(pl.col("_i") <= 10).sum().alias("idcg"),
        )
    )
    ndcg = pl.when(pl.col("idcg") > 0).then(pl.col("dcg") / pl.col("idcg")).otherwise(0.0)
    return per_query.group_by("segment").agg(ndcg.mean()).collect(engine="streaming")


def _sklearn(frame: pl.DataFrame, sample: int) -> float:
    """Seconds of ``ndcg_score(k=10)`` per query over every query, from a sample."""
    from sklearn.metrics import ndcg_score

    ids = frame["query_id"].unique(maintain_order=True).head(sample)
    part = frame.filter(pl.col("query_id").is_in(ids.implode())).sort("query_id")
    queries = part.partition_by("query_id")
    start = time.perf_counter()
    for query in queries:
        if query.height > 1:  # (scikit-learn refuses a single item)
            ndcg_score([query["relevance"].to_numpy()], [query["score"].to_numpy()], k=10)
    per_query = (time.perf_counter() - start) / len(queries)
    return per_query * frame["query_id"].n_unique()


def _peak(source: str, generator: str) -> float:
    """Peak RSS (GiB) of the evaluation in a fresh process."""
    code = (
        "import streameval as se, resource;"
        f"se.evaluate({source!r}, task='ranking', label='relevance', score='score', "
        "query='query_id', by='segment', k=[5, 10]);"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/se_ranking"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sklearn-sample", type=int, default=20_000)
    parser.add_argument("--generators", default="graded,ragged")
    args = parser.parse_args(argv)
    rows = []
    for generator in args.generators.split(","):
        single, hive = _data(args.dir, generator, args.queries, args.items)
        frame = pl.read_parquet(single)
        sources: dict[str, Callable[[], object]] = {
            "single file": lambda s=single: str(s),
            "hive directory": lambda h=hive: str(h),
            "LazyFrame": lambda s=single: pl.scan_parquet(s),
            "DataFrame": lambda f=frame: f,
        }
        sk = _sklearn(frame, args.sklearn_sample)
        for name, source in sources.items():
            lf = (lambda f=frame: f.lazy()) if name == "DataFrame" else None

            def evaluate(source: Callable[[], object] = source) -> object:
                return se.evaluate(
                    source(), task="ranking", label="relevance", score="score",
                    query="query_id", by="segment", k=[5, 10],
                )  # fmt: skip

            def lazy(source: Callable[[], object] = source, lf: object = lf) -> pl.LazyFrame:
                if lf is not None:
                    return lf()  # type: ignore[operator]
                got = source()
                if isinstance(got, pl.LazyFrame):
                    return got
                return pl.scan_parquet(got, hive_partitioning=True)  # type: ignore[arg-type]

            ours = median_seconds(evaluate, args.repeat)
            scan = median_seconds(lambda lazy=lazy: _scan(lazy()), args.repeat)
            windows = median_seconds(lambda lazy=lazy: _windows(lazy()), args.repeat)
            peak = _peak(str(single if name != "hive directory" else hive), generator)
            rows.append((generator, name, frame.height, ours, scan, windows, sk, peak))
    print(
        "| generator | source | rows | streameval s | scan s | × scan | Polars windows s "
        "| × windows | sklearn loop s | × sklearn | peak GiB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for generator, name, n, ours, scan, windows, sk, peak in rows:
        print(
            f"| {generator} | {name} | {n:,} | {ours:.2f} | {scan:.2f} | {ours / scan:.1f} "
            f"| {windows:.2f} | {ours / windows:.2f} | {sk:.0f} | {ours / sk:.3f} "
            f"| {peak:.1f} |"
        )
    print(
        f"\n{platform.processor() or platform.machine()}, {resource.getpagesize()} B pages; "
        f"Python {platform.python_version()}, polars {pl.__version__}, streameval "
        f"{se.__version__}; {args.queries:,} queries of {args.items} items on average; "
        f"median of {args.repeat}; sklearn extrapolated from {args.sklearn_sample:,} queries."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
