"""Benchmark the HTML report against evaluating the same source.

Data (generated when missing): both generators (``generate.py``: String segments, and
``spread.py``: Int32 Zipf segments, scores over many exponents), hive ``day=`` partitions,
``segments × days`` groups. Each configuration runs in this process after one warm-up:

evaluate
    ``se.evaluate(source, by=["segment", "day"])``: the baseline.
report
    ``accumulate`` then :func:`streameval.report.write_report` (metric table, trend panels
    with DeLong's test of each day against the day before, ROC/PR/cost/calibration curves).
render
    :func:`streameval.report.build_report` of the state already accumulated.

The whole command (``streameval report …`` in a fresh process, import included) is timed
once per configuration. Prints seconds (median of ``--repeat``) and report / evaluate.

Usage::

    python benchmarks/report.py --rows 2_000_000 --dir /tmp/se_report
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import median_seconds

CONFIGS = [  # (generator, segments, days): groups = segments × days
    ("generate", 10, 10),
    ("spread", 10, 10),
    ("generate", 100, 10),
    ("spread", 50, 20),
]


def _data(folder: Path, generator: str, rows: int, segments: int, days: int) -> Path:
    out = folder / f"{generator}-{rows}-{segments}x{days}"
    if not out.exists():
        import generate
        import spread

        make = generate.generate if generator == "generate" else spread.generate
        make(out, rows, segments, days, seed=3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), default=2_000_000)
    parser.add_argument("--dir", default="/tmp/se_report")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import streameval as se
    from streameval.report import build_report, write_report

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    print("| data | groups | evaluate s | report s | render s | report / evaluate | command s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for generator, segments, days in CONFIGS:
        source = _data(folder, generator, args.rows, segments, days)
        cols = {"label": "label", "score": "score", "by": ["segment", "day"]}
        html = folder / "report.html"
        evaluate = median_seconds(lambda: se.evaluate(source, **cols), args.repeat)  # noqa: B023
        state = se.accumulate(source, **cols)
        groups = state.table.select("segment", "day").n_unique()
        report = median_seconds(
            lambda: write_report(se.accumulate(source, **cols), html),  # noqa: B023
            args.repeat,
        )
        render = median_seconds(lambda: build_report(state), args.repeat)  # noqa: B023
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "streameval", "report", str(source), "--label", "label",
             "--score", "score", "--by", "segment", "--by", "day", "--output", str(html)],
            check=True, capture_output=True,
        )  # fmt: skip
        command = time.perf_counter() - start
        print(
            f"| {generator} | {groups:,} | {evaluate:.2f} | {report:.2f} | {render:.2f} | "
            f"{report / evaluate:.1f}× | {command:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
