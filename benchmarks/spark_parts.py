"""Where a Spark evaluation's time goes: the bare scan, the state alone, the whole evaluation.

On one warm local[2] session and ``spark.py``'s data (the same generators and defaults:
``--task binary|multiclass|regression``, ``--rows``), times three things in turn:

bare scan
    Spark's ``groupBy(segment, day).agg(count, sums of the columns the task reads)``,
    collected (``spark.py``'s floor).
state
    The state rows Spark builds for the evaluation (:func:`streameval.spark.rows`: bucket
    keys as SQL expressions, Spark's own aggregation), written to Spark's ``noop`` sink: the
    aggregation by itself, before any finalize. Their number is printed.
evaluate
    ``streameval.spark.evaluate`` of the same rows: the state, handed to the finalizing
    Python workers and finalized there, metric rows collected.

The session's first query (a scan) warms it before the clock. Prints each time and its
ratio to the bare scan::

    python benchmarks/spark_parts.py --task multiclass --rows 2_000_000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from spark import DEFAULTS, KEYS, TASKS, _session  # noqa: E402
from tasks import generate as generate_task  # noqa: E402


def timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=tuple(TASKS), default="binary")
    parser.add_argument("--rows", type=int, help="default spark.py's DEFAULTS[task]")
    parser.add_argument("--data", help="default /tmp/se_bench/parts-<task>-<rows>")
    args = parser.parse_args(argv)
    rows = args.rows or DEFAULTS[args.task][1]
    data = Path(args.data or f"/tmp/se_bench/parts-{args.task}-{rows}")
    if args.task != "binary":
        generate_task(args.task, data, rows, days=30)
    elif not data.exists():
        cmd = [sys.executable, str(HERE / "generate.py"), "--rows", str(rows)]
        cmd += ["--segments", "100", "--days", "30", "--out", str(data), "--seed", "0"]
        subprocess.check_call(cmd)

    import streameval.spark as ses
    from streameval.options import Evaluation
    from streameval.spark import _arguments, _evaluation, _state_rows

    spark = _session()
    from pyspark.sql import functions as F

    evaluation, read, _ = TASKS[args.task]
    df = spark.read.parquet(str(data))

    def scan() -> None:  # (a new query each time: a collected one would reuse its shuffle)
        df.groupBy(*KEYS).agg(F.count("*"), *(F.sum(c) for c in read)).collect()

    scan()  # (warms the session)
    options = Evaluation(**_arguments(Evaluation, dict(by=KEYS, **evaluation)))
    state = _state_rows(_evaluation(df, options, 1_000_000).planned, KEYS)
    times = {
        "bare scan": timed(scan),
        "state (noop sink)": timed(lambda: state.write.format("noop").mode("overwrite").save()),
        "evaluate": timed(lambda: ses.evaluate(df, by=KEYS, **evaluation)),
    }
    print(f"{rows:,} rows ({args.task}), 3,000 segment-days, {state.count():,} state rows")
    print("| part | s | vs bare scan |\n| --- | ---: | ---: |")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.1f} | {seconds / times['bare scan']:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
