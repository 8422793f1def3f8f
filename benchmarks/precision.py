"""Precision sweep: time, state size and the reported AUC error bound per mantissa-bit setting.

Usage::

    python benchmarks/precision.py --data /tmp/se_bench/data [--bits 8,9,10,11,12] \
        [--readme docs/performance.md]

Each setting runs ``se.evaluate`` over the same data in a fresh process (so caches and
allocator state do not carry over) and reports its wall time and peak RSS, the number of
state rows (from a separate ``se.accumulate``), and the largest and median ``roc_auc_error``
over the groups. This is the measurement the default precision was chosen from.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from run import update_readme

WORKER = """
import json, resource, sys, time
import streameval as se
from streameval.local import warm
warm()  # the compiled loops (the fast extra) load once per process, like an import
data, bits = sys.argv[1], sys.argv[2]
precision = "exact" if bits == "exact" else int(bits)
args = dict(label="label", score="score", by=["segment", "day"], precision=precision)
t0 = time.perf_counter()
table = se.evaluate(data, **args)
t1 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
rows = se.accumulate(data, **args).table.height
err = table["roc_auc_error"]
print(json.dumps({"bits": bits, "evaluate": t1 - t0, "rss": rss, "state_rows": rows,
                  "max_error": err.max(), "median_error": err.median()}))
"""


def run_setting(data: str, bits: str) -> dict[str, float | str]:
    """Run one precision setting in a fresh interpreter and return its measurements."""
    out = subprocess.run(
        [sys.executable, "-c", WORKER, data, bits], capture_output=True, text=True, check=True
    )
    result: dict[str, float | str] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def floor_seconds(data: str) -> float:
    """Wall time of the bare grouped scan, measured in a fresh interpreter."""
    code = (
        "import time, polars as pl, sys; t = time.perf_counter(); "
        "pl.scan_parquet(sys.argv[1], hive_partitioning=True).group_by('segment', 'day')"
        ".agg(pl.len(), pl.col('label').sum(), pl.col('score').sum())"
        ".collect(engine='streaming'); print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code, data], capture_output=True, text=True)
    return float(out.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    """Run the sweep and print (and optionally store) a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--bits", default="8,9,10,11,12")
    parser.add_argument("--readme", type=Path)
    args = parser.parse_args(argv)
    floor = floor_seconds(args.data)
    lines = [
        "| precision (bits) | evaluate s | vs floor | peak RSS MB | state rows "
        "| max roc_auc_error | median roc_auc_error |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for bits in args.bits.split(","):
        r = run_setting(args.data, bits.strip())
        seconds = float(r["evaluate"])
        lines.append(
            f"| {r['bits']} | {seconds:.1f} | {seconds / floor:.1f}× | "
            f"{float(r['rss']) / 2**20:,.0f} | {int(r['state_rows']):,} | "
            f"{float(r['max_error']):.1e} | {float(r['median_error']):.1e} |"
        )
        print(lines[-1], flush=True)
    stamp = time.strftime("%Y-%m-%d")
    text = "\n".join([*lines, "", f"Floor (bare grouped scan): {floor:.2f} s; measured {stamp}."])
    print(text)
    if args.readme:
        update_readme(args.readme, text, marker="precision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
