"""Worst-slice discovery against the scan floor: ``se.find_slices`` over many features.

Generates (once, into ``--out``) two prediction logs of ``--rows`` rows and ``--features``
categorical features, written as Parquet files of a million rows:

- ``strings``: String features of 2 to 50 values with Zipf-skewed frequencies, a 0/1 label
  (15% positive), a logistic score, a weight, and two planted weak slices (one value, one
  pair of values) whose AUC is lower;
- ``ints``: Int16 features of 3 to 40 equally frequent values, a label of 40% positives
  and Beta-distributed scores in a few hundred distinct values (ties), nothing planted.

Then times each configuration in a fresh process, with its floor measured in the same run:
one streaming read of the same columns from the same source (label and score summed, each
feature's largest value: every value decoded). Prints the wall time, the ratio to the
floor, the peak memory (``ru_maxrss``) and the top slices.

Usage::

    python benchmarks/slices.py --rows 20_000_000 --features 20 --out /tmp/se_slices
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

CARDINALITIES = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 3, 5, 7, 9, 11, 13)
ROWS_PER_FILE = 1_000_000
#: The planted weak slices of the ``strings`` log: (feature index, value) tuples.
WEAK = (((2, 1),), ((4, 2), (6, 3)))
#: name: (log, source kind, find_slices options)
CONFIGS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "strings, files, depth 1": ("strings", "glob", {"depth": 1}),
    "strings, files, depth 2": ("strings", "glob", {"depth": 2}),
    "strings, files, depth 2, weighted": ("strings", "glob", {"depth": 2, "weight": "w"}),
    "strings, files, depth 2, recall at 0.3": (
        "strings", "glob", {"depth": 2, "metric": "recall", "threshold": 0.3},
    ),
    "strings, DataFrame, depth 2": ("strings", "dataframe", {"depth": 2}),
    "ints, files, depth 2": ("ints", "glob", {"depth": 2}),
    "ints, LazyFrame, depth 2": ("ints", "lazyframe", {"depth": 2}),
    "ints as Int64, LazyFrame, depth 2": ("ints", "lazyframe-int64", {"depth": 2}),
    "ints, Arrow table, depth 2": ("ints", "arrow", {"depth": 2}),
}  # fmt: skip


def feature_names(features: int) -> list[str]:
    """The feature columns: ``f00``, ``f01``, …"""
    return [f"f{i:02d}" for i in range(features)]


def strings_file(rows: int, features: int, seed: int) -> pl.DataFrame:
    """One file of the ``strings`` log: the separation drops in the weak slices."""
    rng = np.random.default_rng(seed)
    cards = [CARDINALITIES[i % len(CARDINALITIES)] for i in range(features)]
    codes = [rng.zipf(1.6, rows) % c for c in cards]
    separation = np.full(rows, 1.6)
    for weak in WEAK:
        inside = np.ones(rows, bool)
        for f, v in weak:
            inside &= codes[f % features] == v
        separation[inside] = 0.6
    label = (rng.random(rows) < 0.15).astype(np.int8)
    score = 1 / (1 + np.exp(-(-2.0 + separation * label + rng.standard_normal(rows))))
    columns = {
        name: pl.Series(name, codes[i].astype(np.int64))
        .cast(pl.String)
        .str.replace(r"^", f"{name}_")
        for i, name in enumerate(feature_names(features))
    }
    weight = rng.choice([0.5, 1.0, 2.0], rows)
    return pl.DataFrame({**columns, "label": label, "score": score, "w": weight})


def ints_file(rows: int, features: int, seed: int) -> pl.DataFrame:
    """One file of the ``ints`` log: uniform features, tied Beta scores, no weak slice."""
    rng = np.random.default_rng(10_000 + seed)
    label = (rng.random(rows) < 0.4).astype(np.int8)
    score = np.where(label == 1, rng.beta(3, 2, rows), rng.beta(2, 3, rows)).round(3)
    columns = {
        name: rng.integers(0, 3 + (7 * i) % 38, rows).astype(np.int16)
        for i, name in enumerate(feature_names(features))
    }
    return pl.DataFrame({**columns, "label": label, "score": score})


def generate(out: Path, rows: int, features: int) -> None:
    """Write ``out/<log>/part-K.parquet`` (skipped when already written for these sizes)."""
    for log, make in (("strings", strings_file), ("ints", ints_file)):
        folder = out / log
        marker = folder / f".rows-{rows}-features-{features}"
        if marker.exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("part-*.parquet"):
            old.unlink()
        for k in range(-(-rows // ROWS_PER_FILE)):
            n = min(ROWS_PER_FILE, rows - k * ROWS_PER_FILE)
            make(n, features, seed=k).write_parquet(folder / f"part-{k:04d}.parquet")
        marker.touch()


def source(folder: str, kind: str) -> Any:
    """The log as the configuration reads it (a DataFrame or Arrow table is loaded before the
    clock; ``lazyframe-int64``: the features cast to Int64 as they are read)."""
    files = f"{folder}/*.parquet"
    if kind == "dataframe":
        return pl.read_parquet(files)
    if kind == "arrow":
        return pl.read_parquet(files).to_arrow()
    if kind == "lazyframe":
        return pl.scan_parquet(files)
    if kind == "lazyframe-int64":
        return pl.scan_parquet(files).with_columns(pl.col(r"^f\d+$").cast(pl.Int64))
    return files


def floor(data: Any, features: int, weighted: bool = False) -> None:
    """One streaming read of the columns the discovery reads."""
    if isinstance(data, str):
        lf = pl.scan_parquet(data)
    else:
        lf = data.lazy() if isinstance(data, pl.DataFrame | pl.LazyFrame) else pl.from_arrow(data)
        lf = lf.lazy()
    sums = [pl.col("label").sum(), pl.col("score").sum()]
    sums += [pl.col("w").sum()] if weighted else []
    lf.select(pl.len(), *sums, *[pl.col(f).max() for f in feature_names(features)]).collect(
        engine="streaming"
    )


def discover(data: Any, features: int, options: dict[str, Any]) -> pl.DataFrame:
    """``se.find_slices`` over every feature."""
    import streameval as se

    return se.find_slices(
        data, label="label", score="score", features=feature_names(features), **options
    )


def timed(
    folder: str, kind: str, features: int, options: dict[str, Any] | None, weighted: bool = False
) -> dict[str, Any]:
    """Time the floor (``options`` None; ``weighted``: reading the weight too) or a
    discovery in a fresh process."""
    code = (
        "import json, resource, sys, time\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "import slices\n"
        "from streameval.local import warm\n"
        "warm()\n"
        f"data = slices.source({folder!r}, {kind!r})\n"
        f"options = {options!r}\n"
        "t = time.perf_counter()\n"
        "if options is None:\n"
        f"    out = slices.floor(data, {features}, {weighted})\n"
        "else:\n"
        f"    out = slices.discover(data, {features}, options)\n"
        "wall = time.perf_counter() - t\n"
        "top = '' if out is None else ' · '.join(out['slice'].head(3).to_list())\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps({'wall': wall, 'rss_mb': rss, 'top': top}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), default=20_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--out", default="/tmp/se_slices")
    parser.add_argument("--only", nargs="*", help="configurations whose name contains these")
    args = parser.parse_args(argv)
    out = Path(args.out)
    generate(out, args.rows, args.features)
    print(f"{args.rows:,} rows, {args.features} features\n")
    print("| configuration | floor (s) | find_slices (s) | × floor | peak RSS (MB) | top slices |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, (log, kind, options) in CONFIGS.items():
        if args.only and not any(word in name for word in args.only):
            continue
        folder = str(out / log)
        base = timed(folder, kind, args.features, None, "weight" in options)
        got = timed(folder, kind, args.features, options)
        ratio = got["wall"] / base["wall"]
        print(
            f"| {name} | {base['wall']:.1f} | {got['wall']:.1f} | {ratio:.1f}× | "
            f"{got['rss_mb']:,.0f} | {got['top']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
