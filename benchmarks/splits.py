"""How close stratified splits keep class shares, and what the rank pass costs.

Usage::

    python benchmarks/splits.py [--rows 10_000,1_000_000,10_000_000] [--readme docs/crossval.md]

For each size, a frame with an integer id, a class column of skewed shares (70 %, 25 %, 4 %,
1 %) and groups of 1–9 rows is split into 5 folds (and 50/25/25 hold-out parts): hash only,
stratified by rows (rank pass), and stratified by groups — with a class drawn per row (a
group's stratum is then its most frequent class) or per group (as a patient's diagnosis).
Reported per method: the largest deviation, over classes and folds, of a fold's class count
from its expected count (rows), the largest deviation of a fold's class share from the whole's
(percentage points), and the wall time of assigning and collecting.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl
from run import update_readme

import streameval as se

SHARES = [0.70, 0.25, 0.04, 0.01]


def frame(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 10, n // 4 + 1)
    groups = np.repeat(np.arange(sizes.size), sizes)[:n]
    per_group = rng.choice(len(SHARES), sizes.size, p=SHARES)
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "g": groups,
            "y": rng.choice(len(SHARES), n, p=SHARES),
            "y_g": per_group[groups],
        }
    )


def deviation(df: pl.DataFrame, part: str, y: str) -> tuple[float, float]:
    """(largest |count − expected| in rows, largest share deviation in percentage points)."""
    df = df.rename({y: "_y"}) if y != "y" else df
    df = df.drop("y", strict=False).rename({"_y": "y"}) if y != "y" else df
    whole = df.group_by("y").len().rename({"len": "n_y"})
    parts = df.group_by(part).len().rename({"len": "n_part"})
    cells = (
        df.group_by(part, "y")
        .len()
        .join(whole, on="y")
        .join(parts, on=part)
        .with_columns(
            expected=pl.col("n_y").cast(pl.Float64) * pl.col("n_part") / df.height,
            share=pl.col("len") / pl.col("n_part") - pl.col("n_y") / df.height,
        )
    )
    rows = (cells["len"] - cells["expected"]).abs().max()
    return float(rows), float(cells["share"].abs().max() * 100)  # type: ignore[arg-type]


def measure(n: int) -> list[str]:
    df = frame(n)
    lines = []
    methods = {
        "hash only": {"by": "id"},
        "stratified (rows)": {"by": "id", "stratify": "y"},
        "stratified (groups; class per row)": {"group": "g", "stratify": "y"},
        "stratified (groups; class per group)": {"group": "g", "stratify": "y_g"},
    }
    for name, kw in methods.items():
        y = str(kw.get("stratify", "y"))
        start = time.perf_counter()
        folds = se.split.kfold(df.lazy(), 5, seed=1, **kw).collect()
        seconds = time.perf_counter() - start
        rows, points = deviation(folds, "fold", y)
        held = se.split.holdout(df, (0.5, 0.25, 0.25), seed=1, **kw)
        # hold-out parts differ in size: deviation from the share of each part
        hrows, hpoints = deviation(held, "split", y)
        lines.append(
            f"| {n:,} | {name} | {rows:.1f} | {points:.3f} | {hrows:.1f} | {hpoints:.3f} "
            f"| {seconds:.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10_000,1_000_000,10_000_000")
    parser.add_argument("--readme", help="update the splits table of this file (docs/crossval.md)")
    args = parser.parse_args()
    lines = [
        "| rows | method | 5-fold: max \\|count − expected\\| (rows) | 5-fold: max share "
        "deviation (pp) | hold-out 50/25/25: max \\|count − expected\\| | hold-out: max share "
        "deviation (pp) | 5-fold wall s |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in (int(v) for v in args.rows.split(",")):
        lines += measure(n)
    table = "\n".join(lines)
    print(table)
    if args.readme:
        update_readme(Path(args.readme), table, "splits")


if __name__ == "__main__":
    main()
