"""Benchmark bootstrap replicates against the plain pass.

Data (generated when missing): ``rows`` binary predictions in one Parquet file, an Int64
``id``, an Int32 ``segment`` (10 values), a 0/1 ``y`` and a float64 probability ``p``.

Contenders, each in a fresh child process (wall time of the work, peak RSS of the child):

plain
    ``se.accumulate`` of the scanned file, then ``metrics()``.
bootstrap-id, bootstrap-values
    ``se.accumulate(bootstrap=R)`` with ``row_id="id"`` / hashing the values read (which adds
    a pass counting distinct rows), then :func:`streameval.resample.bootstrap_intervals`.
bootstrap-id-8bits
    as bootstrap-id at ``precision=8``.

Usage::

    python benchmarks/bootstrap.py --rows 1_000_000 --replicates 200 --dir /tmp/se_boot
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

CONTENDERS = ("plain", "bootstrap-id", "bootstrap-values", "bootstrap-id-8bits")


def generate(path: Path, rows: int) -> None:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, rows)
    p = 1 / (1 + np.exp(-(rng.normal(size=rows) + 2.4 * (y - 0.5))))
    segment = rng.integers(0, 10, rows).astype(np.int32)
    pl.DataFrame({"id": np.arange(rows), "segment": segment, "y": y, "p": p}).write_parquet(path)


def child(path: str, contender: str, replicates: int) -> dict[str, object]:
    import polars as pl

    import streameval as se
    from streameval.resample import bootstrap_intervals

    source = pl.scan_parquet(path)
    kw: dict[str, object] = {"label": "y", "score": "p", "by": "segment"}
    if contender != "plain":
        kw["bootstrap"] = replicates
        kw["row_id"] = None if contender == "bootstrap-values" else "id"
        kw["precision"] = 8 if contender.endswith("8bits") else None
    start = time.perf_counter()
    state = se.accumulate(source, **kw)  # type: ignore[arg-type]
    accumulated = time.perf_counter() - start
    accumulate_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if contender == "plain":
        table = state.metrics()
    else:
        table = bootstrap_intervals(state, lambda s: s.metrics())
    total = time.perf_counter() - start
    return {
        "contender": contender,
        "accumulate_s": round(accumulated, 2),
        "total_s": round(total, 2),
        "state_rows": state.table.height,
        "accumulate_rss_mb": accumulate_rss,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "groups": table.height,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), default=1_000_000)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/se_boot"))
    parser.add_argument("--only", choices=CONTENDERS, action="append")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.replicates)))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"binary_{args.rows}.parquet"
    if not path.exists():
        generate(path, args.rows)
    print(
        "| contender | accumulate s | total s | state rows | RSS after accumulate MB"
        " | peak RSS MB |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for contender in args.only or CONTENDERS:
        cmd = [sys.executable, __file__, "--replicates", str(args.replicates)]
        out = subprocess.run(
            [*cmd, "--child", str(path), contender], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {contender} | {r['accumulate_s']} | {r['total_s']} | {r['state_rows']:,} "
            f"| {r['accumulate_rss_mb']:,} | {r['peak_rss_mb']:,} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
