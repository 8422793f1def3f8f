"""What a job's checks cost: the same job run with and without ``[[checks]]``.

Writes ``--days`` days of ``--segments`` segments (``generate.py``'s data) and runs two job
files on it, each into a fresh store: the plain job (metric outputs ``1d``, ``7d``, ``28d``)
and the same job with checks (an AUC floor, a significant AUC drop against the previous
day, against the segment's 28 days of accepted history, and a recall drop), with score
drift checks (the PSI against the previous day, the KS statistic against 28 days of
history). Two runs of each are timed: the first run (every day computed and judged) and a
nightly run (one new day). Prints a Markdown table with each run's time and the time its
checks took within it (``RunReport.checks_seconds``: judging, writing the checks table and
answering for the failures; what they added to the run, measured inside it rather than as
the difference of two runs, which on this 2-core machine differ by several seconds from
round to round), and their share of the run.
``--checks-only`` instead times one plain first run and each check set judging the stored
days alone (``streameval run --checks-only``): the checks' own cost, measured apart from the
noise of whole runs.

    python benchmarks/checks.py --rows 30_000_000 --segments 3000 --days 30
    python benchmarks/checks.py --checks-only
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generate import generate

from streameval.jobs import run_job

CHECKS = """
[checking]
output = "checks"

[[checks]]
name = "auc floor"
metric = "roc_auc"
min = 0.6
min_n = 200

[[checks]]
name = "auc vs yesterday"
metric = "roc_auc"
max_drop = 0.02
baseline = "previous"
significance = 0.05
min_n = 200

[[checks]]
name = "auc vs history"
metric = "roc_auc"
max_drop = 0.02
baseline = "history"
days = 28
significance = 0.05
min_n = 200

[[checks]]
name = "recall vs yesterday"
metric = "recall"
max_relative_drop = 0.05
baseline = "previous"
significance = 0.05
severity = "warn"
"""


#: Score drift checks: the PSI against the previous day, the KS statistic against the
#: segment's 28 days of accepted history.
DRIFT = """
[[checks]]
name = "psi vs yesterday"
metric = "psi"
max = 0.2
baseline = "previous"
min_n = 200

[[checks]]
name = "ks vs history"
metric = "ks_statistic"
max = 0.1
baseline = "history"
days = 28
min_n = 200
"""

#: The configurations timed: no checks, the checks but the history one, all four, and the
#: drift checks alone and beside the three.
THREE = (
    CHECKS.split('[[checks]]\nname = "auc vs history"')[0]
    + "[[checks]]"
    + CHECKS.split("[[checks]]")[-1]
)
CONFIGS = {
    "no checks": "",
    "3 checks (floor, previous day ×2)": THREE,
    "4 checks (+ 28-day history)": CHECKS,
    "2 drift checks (PSI vs previous day, KS vs 28-day history)": (
        '\n[checking]\noutput = "checks"\n' + DRIFT
    ),
    "3 checks + PSI vs previous day": THREE + DRIFT.split('[[checks]]\nname = "ks')[0],
}


def job_text(data: Path, checks: str) -> str:
    return (
        f'[source]\npaths = ["{data}"]\npartition_key = "day"\n\n'
        '[task]\nlabel = "label"\nscore = "score"\nby = ["segment"]\n\n'
        '[store]\npath = "store"\n\n'
        '[[outputs]]\npath = "metrics"\nwindows = ["1d", "7d", "28d"]\n' + checks
    )


def timed_runs(
    root: Path, data: Path, last: Path, checks: str
) -> tuple[float, float, float, float]:
    """Seconds of the first run (without the last day) and of the nightly run adding it,
    and of their checks."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "job.toml").write_text(job_text(data, checks))
    hidden = data.parent / f"held_back_{last.name}"
    last.rename(hidden)  # (out of the source until the nightly run)
    try:
        start = time.perf_counter()
        judged = run_job(root / "job.toml", quiet=True).checks_seconds
        first = time.perf_counter() - start
    finally:
        hidden.rename(last)
    start = time.perf_counter()
    report = run_job(root / "job.toml", quiet=True)
    nightly = time.perf_counter() - start
    assert report.processed == 1
    return first, nightly, judged, report.checks_seconds


def judged_only(root: Path, data: Path) -> dict[str, float]:
    """The plain job's first run, then each check set's ``--checks-only`` run on its store.

    A checks-only run reads the stored states and judges every day: what the checks add to
    a first run, less the state reads a real run shares with its rollups.
    """
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "job.toml").write_text(job_text(data, ""))
    start = time.perf_counter()
    run_job(root / "job.toml", quiet=True)
    out = {"no checks": time.perf_counter() - start}
    for name, checks in list(CONFIGS.items())[1:]:
        (root / "job.toml").write_text(job_text(data, checks))
        start = time.perf_counter()
        run_job(root / "job.toml", quiet=True, checks_only=True)
        out[name] = time.perf_counter() - start
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000_000)
    parser.add_argument("--segments", type=int, default=3000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--root", default="/tmp/se_checks")
    parser.add_argument("--repeat", type=int, default=1, help="alternating rounds")
    parser.add_argument(
        "--checks-only",
        action="store_true",
        help="time one plain first run, then each check set judging its stored days alone",
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    data = root / f"data_{args.rows}_{args.segments}_{args.days}"
    if not data.exists():
        generate(data, args.rows, args.segments, args.days, seed=0)
    if args.checks_only:
        times = judged_only(root / "job_judged", data)
        plain = times["no checks"]
        print(f"{args.rows:,} rows, {args.segments:,} segments, {args.days} days")
        print("| job | first run without checks (s) | judging every day (s) | share |")
        print("| --- | --- | --- | --- |")
        for name, t in times.items():
            if name != "no checks":
                print(f"| {name} | {plain:.1f} | {t:.1f} | {t / plain:.1%} |")
        return 0
    last = sorted(data.glob("day=*"))[-1]
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in CONFIGS}
    for _ in range(args.repeat):
        for n, (name, checks) in enumerate(CONFIGS.items()):
            results[name].append(timed_runs(root / f"job_{n}", data, last, checks))
    print(f"{args.rows:,} rows, {args.segments:,} segments, {args.days} days")
    print(
        "| job | first run (s) | its checks (s) | share | nightly run, one new day (s) "
        "| its checks (s) | share |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in CONFIGS:
        cells = []
        for run, judged in ((0, 2), (1, 3)):
            best = min(results[name], key=lambda r: r[run])  # (the fastest round of each)
            share = f"{best[judged] / best[run]:.1%}" if name != "no checks" else ""
            cells += [f"{best[run]:.1f}", f"{best[judged]:.1f}", share]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
