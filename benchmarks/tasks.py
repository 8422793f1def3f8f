"""Benchmark multiclass and regression evaluation against the bare scan and scikit-learn.

Data (generated when missing, hive-partitioned ``day=…/part-0.parquet``, 100 segments):

- ``multiclass``: 10-class float64 probabilities ``p0``…``p9`` and an int8 ``label``
  (default 1e7 rows over 10 days);
- ``regression``: float64 ``y`` and ``f`` (default 1e8 rows over 30 days).

Contenders, each in a fresh child process (wall time of the work, peak RSS from ``wait4``):

floor
    streaming scan, ``group_by(segment, day)`` with ``len`` and sums of every column read.
default, exact
    ``se.evaluate(task=...)`` at the default precision and exact.
sklearn
    ``read_parquet`` + ``partition_by`` + per group: multiclass ``accuracy_score``,
    ``f1_score(macro)``, ``log_loss`` and ``roc_auc_score(ovr)``; regression
    ``mean_squared_error``, ``mean_absolute_error``, ``median_absolute_error`` and ``r2_score``.

The largest difference between ``exact`` and ``sklearn`` on those metrics is printed as a
cross-check. Usage::

    python benchmarks/tasks.py --dir /tmp/se_bench --readme README.md
    python benchmarks/tasks.py --task regression --rows 10_000_000 --dir /tmp/se_small
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import _maxrss_bytes, update_readme  # noqa: E402

TASKS = {"multiclass": (10_000_000, 10), "regression": (100_000_000, 30)}
CONTENDERS = ("floor", "default", "exact", "sklearn")
KEYS = ["segment", "day"]
CLASSES = 10
CHECKED = {
    "multiclass": ["accuracy", "f1_macro", "log_loss", "roc_auc_ovr_macro"],
    "regression": ["mse", "mae", "median_ae", "r2"],
}


def generate(task: str, out: Path, rows: int, days: int, seed: int = 0) -> None:
    """Write the task's prediction log, one file per day (skipped when it exists)."""
    import numpy as np
    import polars as pl

    if any(out.glob("day=*/*.parquet")):
        return
    rng = np.random.default_rng(seed)
    per_day = rows // days
    for d in range(days):
        segment = rng.integers(0, 100, per_day)
        data: dict[str, Any] = {"segment": pl.Series(segment).cast(pl.String)}
        if task == "multiclass":
            label = rng.integers(0, CLASSES, per_day)
            logits = rng.normal(size=(per_day, CLASSES)) + 1.5 * np.eye(CLASSES)[label]
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            data["label"] = label.astype(np.int8)
            data |= {f"p{k}": p[:, k] for k in range(CLASSES)}
        else:
            y = rng.gamma(2.0, 50.0, per_day) * (1 + segment / 100)
            data |= {"y": y, "f": y * rng.lognormal(0.0, 0.25, per_day)}
        folder = out / f"day=2026-10-{d + 1:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(data).write_parquet(folder / "part-0.parquet")


def arguments(task: str) -> dict[str, Any]:
    if task == "multiclass":
        return {"task": task, "label": "label", "scores": [f"p{k}" for k in range(CLASSES)]}
    return {"task": task, "label": "y", "prediction": "f"}


def work(task: str, name: str, data: str) -> Any:
    """The timed work of one contender (run in the child)."""
    import polars as pl

    columns = ["label", *[f"p{k}" for k in range(CLASSES)]] if task == "multiclass" else ["y", "f"]
    if name == "floor":
        return (
            pl.scan_parquet(data, hive_partitioning=True)
            .group_by(KEYS)
            .agg(pl.len(), *[pl.col(c).sum() for c in columns])
            .collect(engine="streaming")
        )
    if name in ("default", "exact"):
        import streameval as se

        precision = "exact" if name == "exact" else None
        table = se.evaluate(data, by=KEYS, precision=precision, **arguments(task))
        return table.select(*KEYS, *CHECKED[task])
    from sklearn import metrics as skm

    df = pl.read_parquet(data, hive_partitioning=True)
    rows = []
    for key, part in df.partition_by(KEYS, as_dict=True).items():
        if task == "multiclass":
            y = part["label"].to_numpy()
            p = part.select(columns[1:]).to_numpy()
            pred = p.argmax(axis=1)
            labels = list(range(CLASSES))
            values = [
                skm.accuracy_score(y, pred),
                skm.f1_score(y, pred, average="macro", zero_division=0),
                skm.log_loss(y, p, labels=labels),
                skm.roc_auc_score(y, p, multi_class="ovr", labels=labels),
            ]
        else:
            y, f = part["y"].to_numpy(), part["f"].to_numpy()
            values = [
                skm.mean_squared_error(y, f),
                skm.mean_absolute_error(y, f),
                skm.median_absolute_error(y, f),
                skm.r2_score(y, f),
            ]
        named = dict(zip(CHECKED[task], values, strict=True))
        rows.append({**dict(zip(KEYS, key, strict=True)), **named})
    del df
    return pl.DataFrame(rows).with_columns(pl.col("day").cast(pl.Date))


def child(task: str, name: str, data: str, scratch: Path) -> None:
    """Run one contender and write its time and result."""
    t0 = time.perf_counter()
    result = work(task, name, data)
    wall = time.perf_counter() - t0
    if name != "floor":
        result.write_parquet(scratch / f"{task}-{name}.parquet")
    (scratch / f"{task}-{name}.json").write_text(json.dumps({"wall_s": wall}))


def measure(task: str, name: str, data: str, scratch: Path) -> dict[str, Any]:
    """Run a contender in a fresh process: wall time of its work and its peak RSS."""
    cmd = [sys.executable, __file__, "--child", task, name, data, str(scratch)]
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return {"name": name, "error": f"exit status {os.waitstatus_to_exitcode(status)}"}
    wall = json.loads((scratch / f"{task}-{name}.json").read_text())["wall_s"]
    return {"name": name, "wall_s": wall, "rss_mb": _maxrss_bytes(usage.ru_maxrss) / 2**20}


def cross_check(task: str, scratch: Path) -> str:
    """Largest |exact − sklearn| over the checked metrics, and the default's largest gap."""
    import polars as pl

    def load(name: str) -> pl.DataFrame | None:
        path = scratch / f"{task}-{name}.parquet"
        return pl.read_parquet(path).sort(KEYS) if path.exists() else None

    exact, sk, default = load("exact"), load("sklearn"), load("default")
    notes = []
    for label, a, b in [("exact vs sklearn", exact, sk), ("default vs exact", default, exact)]:
        if a is not None and b is not None:
            gap = max(
                float(((a[c] - b[c]).abs() / b[c].abs().clip(1e-300)).max() or 0.0)
                for c in CHECKED[task]
            )
            notes.append(f"largest relative difference, {label}: {gap:.1e}")
    return "; ".join(notes)


def table(task: str, rows: int, results: list[dict[str, Any]], check: str) -> str:
    """A Markdown table of one task's results."""
    floor = next((r["wall_s"] for r in results if r["name"] == "floor" and "wall_s" in r), None)
    days = TASKS[task][1]
    lines = [
        f"**{task}**: {rows:,} rows, 100 segments × {days} days = {100 * days:,} groups; "
        f"cross-checked metrics: {', '.join(CHECKED[task])}",
        "",
        "| contender | wall s | vs floor | peak RSS MB |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['error']} | | |")
            continue
        ratio = f"{r['wall_s'] / floor:.1f}×" if floor else "—"
        lines.append(f"| {r['name']} | {r['wall_s']:.2f} | {ratio} | {r['rss_mb']:,.0f} |")
    return "\n".join([*lines, "", check])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=[*TASKS, "all"], default="all")
    parser.add_argument("--rows", type=int, help="rows (default: 1e7 multiclass, 1e8 regression)")
    parser.add_argument("--dir", default="/tmp/se_bench", help="where the data sets live")
    parser.add_argument("--only", default=",".join(CONTENDERS))
    parser.add_argument("--readme", type=Path, help="put the tables between tasks markers")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        task, name, data, scratch = args.child
        child(task, name, data, Path(scratch))
        return 0
    scratch = Path(args.dir) / "tasks-scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    texts = []
    for task in TASKS if args.task == "all" else [args.task]:
        rows = args.rows or TASKS[task][0]
        data = Path(args.dir) / f"{task}-{rows}"
        generate(task, data, rows, TASKS[task][1])
        results = [measure(task, n, str(data), scratch) for n in args.only.split(",")]
        text = table(task, rows, results, cross_check(task, scratch))
        print(text + "\n", flush=True)
        texts.append(text)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if args.readme:
        update_readme(args.readme, "\n\n".join(texts) + f"\n\nMeasured {stamp}.", "tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
