"""Benchmark the Spark path (local[2]) against Spark's own bare scan, on the same Parquet log.

Data: ``generate.py``'s binary prediction log (default 5e7 rows, 100 segments × 30 days),
generated when missing (or ``spread.py``'s with ``--generator spread``: Int32 segments of
Zipf sizes, rare positives, scores over many binary exponents), and a copy whose segment key
is an Int32 (``<data>-int``). With ``--task multiclass`` or ``--task regression``,
``tasks.py``'s logs instead, 100 segments × 30 days: 10-class probabilities ``p0``…``p9``
(default 1e7 rows), or a gamma target ``y`` and its prediction ``f`` (5e7 rows). Contenders,
each in a fresh child process; the Spark session is started before the clock starts (its
start-up time is reported apart):

polars_floor
    Polars streaming scan, ``group_by(segment, day)`` with ``len`` and sums of every column
    the task reads.
polars, polars_exact
    ``se.evaluate(path, by=["segment", "day"])`` at the default precision / exact.
spark_floor, spark_floor_int
    Spark's bare scan: ``groupBy(segment, day).agg(count, sums of the same columns)``
    (String / Int32 segments).
spark, spark_exact, spark_coarse, spark_int
    ``streameval.spark.evaluate(spark.read.parquet(path), by=["segment", "day"])``: default
    precision, exact, 6 bits (a state Spark aggregates partially before its exchange), and
    Int32 segments.

Peak memory is the largest sum of the resident sets of the child and its descendants (the
JVM and Spark's Python workers), sampled every 50 ms. The metric tables of ``polars`` and
``spark`` (and of ``polars_exact`` and ``spark_exact``) are compared. With ``--readme``,
the table and the physical plan of an evaluation (``streameval.spark.explain``) are written
into the page. Usage::

    python benchmarks/spark.py --data /tmp/se_bench/spark50m --readme docs/spark.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import update_readme  # noqa: E402
from tasks import CHECKED as TASK_CHECKED  # noqa: E402
from tasks import CLASSES, arguments  # noqa: E402
from tasks import generate as generate_task  # noqa: E402

CONTENDERS = (
    "polars_floor", "polars", "polars_exact", "spark_floor", "spark", "spark_exact",
    "spark_coarse", "spark_floor_int", "spark_int",
)  # fmt: skip
#: The options of each evaluating contender beyond label, score and keys.
OPTIONS: dict[str, dict[str, Any]] = {
    "polars": {}, "polars_exact": {"precision": "exact"}, "spark": {},
    "spark_exact": {"precision": "exact"}, "spark_coarse": {"precision": 6}, "spark_int": {},
}  # fmt: skip
KEYS = ["segment", "day"]
#: Per task: the evaluation's columns, the columns the floors sum, the metrics cross-checked.
TASKS: dict[str, tuple[dict[str, Any], list[str], tuple[str, ...]]] = {
    "binary": (
        {"label": "label", "score": "score"},
        ["label", "score"],
        ("roc_auc", "average_precision", "log_loss", "accuracy", "f1"),
    ),
    "multiclass": (
        arguments("multiclass"),
        ["label", *(f"p{k}" for k in range(CLASSES))],
        tuple(TASK_CHECKED["multiclass"]),
    ),
    "regression": (arguments("regression"), ["y", "f"], tuple(TASK_CHECKED["regression"])),
}
#: Per task: the default data folder (under /tmp/se_bench) and rows.
DEFAULTS = {
    "binary": ("spark50m", 50_000_000),
    "multiclass": ("spark-mc10m", 10_000_000),
    "regression": ("spark-reg50m", 50_000_000),
}


def _tree_rss(root: int) -> int:
    """Resident bytes of a process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry), int(fields[1])
        children.setdefault(parent, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


class PeakTree:
    """Samples the process tree's resident memory in a thread; ``peak`` is the largest."""

    def __init__(self, every: float = 0.05) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)

    def _run(self, every: float) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(os.getpid()))
            time.sleep(every)

    def __enter__(self) -> PeakTree:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _session() -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def work(name: str, data: str, spark: Any, task: str = "binary") -> Any:
    """One contender's work; returns its table (None for the floors)."""
    import polars as pl

    import streameval as se

    evaluation, read, _ = TASKS[task]
    if name.endswith("_int"):
        data = f"{data}-int"
    if name == "polars_floor":
        lf = pl.scan_parquet(data, hive_partitioning=True)
        sums = [pl.len(), *(pl.col(c).sum() for c in read)]
        lf.group_by(KEYS).agg(sums).collect(engine="streaming")
        return None
    if name.startswith("polars"):
        return se.evaluate(data, by=KEYS, **evaluation, **OPTIONS[name])
    from pyspark.sql import functions as F

    df = spark.read.parquet(data)
    if name.startswith("spark_floor"):
        df.groupBy(*KEYS).agg(F.count("*"), *(F.sum(c) for c in read)).collect()
        return None
    import streameval.spark as ses

    if name == "plan":
        ses.explain(df, by=KEYS, **evaluation)
        return None
    return ses.evaluate(df, by=KEYS, **evaluation, **OPTIONS[name])


def integer_keys(data: str) -> None:
    """Write ``<data>-int``: the log with its segment key as an Int32 (once)."""
    import polars as pl

    out = Path(f"{data}-int")
    if out.exists():
        return
    for part in sorted(Path(data).glob("day=*")):
        (out / part.name).mkdir(parents=True)
        for file in sorted(part.glob("*.parquet")):
            frame = pl.read_parquet(file, hive_partitioning=False)
            segment = pl.col("segment").str.strip_prefix("seg_").cast(pl.Int32)
            frame.with_columns(segment).write_parquet(out / part.name / file.name)


def child(name: str, data: str, scratch: Path, task: str) -> None:
    """Run one contender in this process and write its measurements."""
    with PeakTree() as peak:
        t0 = time.perf_counter()
        spark = _session() if name.startswith("spark") or name == "plan" else None
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        result = work(name, data, spark, task)
        wall = time.perf_counter() - t1
    if result is not None:
        result.write_parquet(scratch / f"spark-bench-{name}.parquet")
    out = {"wall_s": wall, "startup_s": started, "peak_mb": peak.peak / 2**20}
    (scratch / f"spark-bench-{name}.json").write_text(json.dumps(out))
    if spark is not None:
        spark.stop()


def measure(name: str, data: str, scratch: Path, task: str) -> dict[str, Any]:
    """Run a contender in a fresh process."""
    cmd = [sys.executable, __file__, "--child", name, data, str(scratch), task]
    code = subprocess.call(cmd)
    if code != 0:
        return {"name": name, "error": f"exit status {code}"}
    return {"name": name, **json.loads((scratch / f"spark-bench-{name}.json").read_text())}


def cross_check(scratch: Path, task: str) -> str:
    """Largest relative differences between the Polars and Spark metric tables."""
    import polars as pl

    checked = TASKS[task][2]
    found = []
    for local, spark in (("polars", "spark"), ("polars_exact", "spark_exact")):
        paths = [scratch / f"spark-bench-{n}.parquet" for n in (local, spark)]
        if not all(p.exists() for p in paths):
            continue
        a, b = (pl.read_parquet(p).sort(KEYS) for p in paths)
        gap = max(
            float(((a[c] - b[c]).abs() / b[c].abs().clip(1e-300)).max() or 0.0) for c in checked
        )
        found.append(f"{spark} {gap:.1e}")
    if not found:
        return ""
    return f"largest relative difference of {', '.join(checked)} (Spark vs Polars): " + (
        ", ".join(found)
    )


def _floor_of(name: str) -> str | None:
    """The bare scan a contender is measured against: Polars' or Spark's of the same keys."""
    if name.startswith("spark") and not name.startswith("spark_floor"):
        return "spark_floor_int" if name.endswith("_int") else "spark_floor"
    return None


def table(rows: int, results: list[dict[str, Any]], check: str, task: str) -> str:
    """The Markdown table of the results."""
    walls = {r["name"]: r["wall_s"] for r in results if "wall_s" in r}
    floor = walls.get("polars_floor")
    lines = [
        "| contender | wall s | vs Polars floor | vs Spark floor | peak RSS MB (process tree) "
        "| session start s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['error']} | | | | |")
            continue
        ratio = f"{r['wall_s'] / floor:.1f}×" if floor else "—"
        spark_floor = walls.get(_floor_of(r["name"]) or "")
        versus = f"{r['wall_s'] / spark_floor:.1f}×" if spark_floor else "—"
        start = f"{r['startup_s']:.1f}" if r["name"].startswith("spark") else "—"
        lines.append(
            f"| {r['name']} | {r['wall_s']:.2f} | {ratio} | {versus} | {r['peak_mb']:,.0f} "
            f"| {start} |"
        )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    what = f"{rows:,} rows" + {"binary": "", "multiclass": f" ({task}, {CLASSES} classes)"}.get(
        task, f" ({task})"
    )
    return "\n".join([*lines, "", f"{what}, 3,000 segment-days; {check}; measured {stamp}."])


def physical_plan(data: str, scratch: Path, task: str) -> str:
    """The physical plan of ``spark``'s evaluation, as ``streameval.spark.explain`` prints it."""
    cmd = [sys.executable, __file__, "--child", "plan", data, str(scratch), task]
    printed = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    plan = printed[printed.index("== Physical Plan ==") :].strip()
    return "```text\n" + plan + "\n```"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=tuple(TASKS), default="binary")
    parser.add_argument("--data", help="default /tmp/se_bench/<DEFAULTS[task]>")
    parser.add_argument("--rows", type=int, help="default DEFAULTS[task]")
    parser.add_argument("--only", default=",".join(CONTENDERS))
    parser.add_argument(
        "--generator",
        choices=("generate", "spread"),
        default="generate",
        help="the data's generator when --data is missing (spread.py's has Int32 segments)",
    )
    parser.add_argument(
        "--readme",
        type=Path,
        help="write the table here (markers spark, or spark-TASK) and a binary task's plan",
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, data, scratch, task = args.child
        child(name, data, Path(scratch), task)
        return 0
    folder, rows = DEFAULTS[args.task]
    args.data, args.rows = args.data or f"/tmp/se_bench/{folder}", args.rows or rows
    other = args.task != "binary"
    if other:
        generate_task(args.task, Path(args.data), args.rows, days=30)
    elif not Path(args.data).exists():
        cmd = [sys.executable, str(HERE / f"{args.generator}.py"), "--rows", str(args.rows)]
        cmd += ["--segments", "100", "--days", "30", "--out", args.data, "--seed", "0"]
        subprocess.check_call(cmd)
    scratch = Path(args.data).parent / "spark-scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    for stale in scratch.glob("spark-bench-*"):
        stale.unlink()
    names = args.only.split(",")
    if other and any(n.endswith(("_int", "_coarse")) for n in names):
        names = [n for n in names if not n.endswith(("_int", "_coarse"))]  # (binary's)
    if args.generator == "spread" and any(n.endswith("_int") for n in names):
        parser.error("spread.py's segments are Int32 already: leave out the *_int contenders")
    if any(n.endswith("_int") for n in names):
        integer_keys(args.data)
    results = [measure(n, args.data, scratch, args.task) for n in names]
    text = table(args.rows, results, cross_check(scratch, args.task), args.task)
    print(text)
    if args.readme:
        if args.task == "binary":
            update_readme(args.readme, text, "spark")
            update_readme(args.readme, physical_plan(args.data, scratch, args.task), "spark-plan")
        else:
            update_readme(args.readme, text, f"spark-{args.task}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
