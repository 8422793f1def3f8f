"""Generate synthetic, hive-partitioned prediction logs for the benchmarks.

The layout is ``OUT/day=YYYY-MM-DD/part-K.parquet`` with columns

* ``segment`` -- string such as ``"seg_007"``,
* ``label`` -- ``int8`` 0/1, prevalence between about 2 % and 30 % per segment,
* ``score`` -- ``float64`` probability in (0, 1).

Scores are ``sigmoid(offset + separation * label + noise)`` with standard
normal noise, so the ROC AUC of a segment is ``Phi(separation / sqrt(2))``;
separations are drawn so that this lies between about 0.70 and 0.90. Scores are
continuous, hence essentially all distinct. Segment sizes vary (log-normal
weights), as in real traffic.

Data are generated and written one file at a time, so memory use is bounded by
``rows_per_file`` whatever the total number of rows. The output depends only on
the arguments (not on the machine or on timing).

Usage::

    python benchmarks/generate.py --rows 100_000_000 --segments 100 \\
        --days 30 --out /tmp/se_bench/data --seed 0
"""

from __future__ import annotations

import argparse
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

DEFAULT_START = date(2026, 10, 1)
DEFAULT_ROWS_PER_FILE = 4_000_000
DEFAULT_ROW_GROUP_SIZE = 1_000_000
_PART = re.compile(r"part-\d+\.parquet(\.tmp)?")  # the files this generator writes

# Tags mixed into the seed so that each random stream is independent.
_PARAMS_STREAM = 0
_DATA_STREAM = 1


@dataclass
class GenerateResult:
    """Summary of a generated data set.

    Attributes
    ----------
    out : Path
        Root directory of the hive-partitioned data set.
    rows : int
        Total number of rows written.
    files : list of Path
        Parquet files written, in order.
    total_bytes : int
        Sum of the sizes of the files written.
    seconds : float
        Wall time taken.
    """

    out: Path
    rows: int
    files: list[Path] = field(default_factory=list)
    total_bytes: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class SegmentParams:
    """Per-segment parameters of the synthetic model.

    Attributes
    ----------
    names : list of str
        Segment names, e.g. ``"seg_007"``.
    weights : numpy.ndarray
        Probability of a row belonging to each segment (sums to 1).
    prevalence : numpy.ndarray
        Probability of ``label == 1`` in each segment.
    separation : numpy.ndarray
        Shift of the positive class on the logit scale.
    offset : numpy.ndarray
        Logit-scale intercept of each segment.
    """

    names: list[str]
    weights: np.ndarray
    prevalence: np.ndarray
    separation: np.ndarray
    offset: np.ndarray

    @property
    def expected_auc(self) -> np.ndarray:
        """Population ROC AUC of each segment, ``Phi(separation / sqrt(2))``."""
        erf = np.vectorize(math.erf)
        return 0.5 * (1.0 + erf(self.separation / 2.0))


def segment_params(segments: int, seed: int) -> SegmentParams:
    """Draw the per-segment parameters for a seed.

    Parameters
    ----------
    segments : int
        Number of segments.
    seed : int
        Random seed.

    Returns
    -------
    SegmentParams
        The parameters, identical for identical arguments.
    """
    rng = np.random.default_rng([seed, _PARAMS_STREAM])
    width = max(3, len(str(segments - 1)))
    names = [f"seg_{i:0{width}d}" for i in range(segments)]
    weights = rng.lognormal(mean=0.0, sigma=0.5, size=segments)
    weights /= weights.sum()
    prevalence = rng.uniform(0.02, 0.30, size=segments)
    # AUC = Phi(d / sqrt(2)): d in [0.75, 1.8] gives AUC in about [0.70, 0.90].
    separation = rng.uniform(0.75, 1.8, size=segments)
    # Centre the scores roughly on the prevalence so they look like probabilities.
    offset = np.log(prevalence / (1.0 - prevalence)) - separation * prevalence
    return SegmentParams(names, weights, prevalence, separation, offset)


def split_evenly(total: int, parts: int) -> list[int]:
    """Split ``total`` into ``parts`` non-negative integers differing by at most 1.

    Parameters
    ----------
    total : int
        Number to split.
    parts : int
        Number of parts.

    Returns
    -------
    list of int
        The parts, larger ones first; they sum to ``total``.
    """
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def make_chunk(params: SegmentParams, n: int, seed: int, day_index: int, part: int) -> pl.DataFrame:
    """Generate the rows of one file.

    Parameters
    ----------
    params : SegmentParams
        Per-segment parameters.
    n : int
        Number of rows.
    seed : int
        Random seed of the data set.
    day_index : int
        Index of the day (0 for the first day).
    part : int
        Index of the file within the day.

    Returns
    -------
    polars.DataFrame
        Columns ``segment`` (String), ``label`` (Int8) and ``score`` (Float64).
    """
    rng = np.random.default_rng([seed, _DATA_STREAM, day_index, part])
    seg = rng.choice(len(params.names), size=n, p=params.weights)
    label = rng.random(n) < params.prevalence[seg]
    logit = params.offset[seg] + params.separation[seg] * label
    logit += rng.standard_normal(n)
    score = 1.0 / (1.0 + np.exp(-logit))
    names = pl.Series("segment", params.names, dtype=pl.String)
    return pl.DataFrame(
        [
            names.gather(seg),
            pl.Series("label", label.astype(np.int8)),
            pl.Series("score", score),
        ]
    )


def _clear_partitions(out: Path) -> None:
    """Remove the files a previous run wrote (``day=*/part-K.parquet``), and nothing else.

    A ``day=*`` directory holding anything else raises :class:`FileExistsError` before
    anything is removed; a directory left empty is removed.
    """
    days = [d for d in out.glob("day=*") if d.is_dir()]
    ours = [f for d in days for f in d.iterdir() if _PART.fullmatch(f.name)]
    others = [f for d in days for f in d.iterdir() if not _PART.fullmatch(f.name)]
    if others:
        raise FileExistsError(
            f"{out} holds files this generator did not write, such as {others[0]}; "
            "remove them or choose another output directory"
        )
    for path in ours:
        path.unlink()
    for folder in days:
        folder.rmdir()


def write_partitions(
    chunk: Callable[[Any, int, int, int, int], pl.DataFrame],
    params_of: Callable[[int, int], Any],
    out: str | os.PathLike[str],
    rows: int,
    segments: int,
    days: int,
    seed: int,
    *,
    start: date,
    rows_per_file: int,
    row_group_size: int,
    overwrite: bool,
) -> GenerateResult:
    """Write ``out/day=YYYY-MM-DD/part-K.parquet``, one file at a time.

    ``params_of(segments, seed)`` gives the segments' parameters and ``chunk(params, n,
    seed, day_index, part)`` a file's ``n`` rows. The rows are spread evenly over ``days``
    days, and a day's over files of at most ``rows_per_file`` rows; each file is written
    under a temporary name and then renamed. Existing partitions raise
    :class:`FileExistsError` unless ``overwrite`` (then :func:`_clear_partitions`).
    """
    if rows < 1 or segments < 1 or days < 1 or rows_per_file < 1:
        raise ValueError("rows, segments, days and rows_per_file must be >= 1")
    t0 = time.perf_counter()
    root = Path(out)
    if any(root.glob("day=*")):
        if not overwrite:
            raise FileExistsError(f"{root} already holds day=* partitions")
        _clear_partitions(root)
    params = params_of(segments, seed)
    result = GenerateResult(out=root, rows=rows)
    for day_index, day_rows in enumerate(split_evenly(rows, days)):
        day_dir = root / f"day={(start + timedelta(days=day_index)).isoformat()}"
        day_dir.mkdir(parents=True, exist_ok=True)
        n_parts = max(1, math.ceil(day_rows / rows_per_file))
        for part, n in enumerate(split_evenly(day_rows, n_parts)):
            frame = chunk(params, n, seed, day_index, part)
            path = day_dir / f"part-{part}.parquet"
            tmp = path.with_suffix(".parquet.tmp")
            frame.write_parquet(tmp, compression="zstd", row_group_size=row_group_size)
            tmp.replace(path)
            result.files.append(path)
            result.total_bytes += path.stat().st_size
            del frame
    result.seconds = time.perf_counter() - t0
    return result


def generate(
    out: str | os.PathLike[str],
    rows: int,
    segments: int = 100,
    days: int = 30,
    seed: int = 0,
    *,
    start: date = DEFAULT_START,
    rows_per_file: int = DEFAULT_ROWS_PER_FILE,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    overwrite: bool = False,
) -> GenerateResult:
    """Write a hive-partitioned data set of synthetic predictions.

    Parameters
    ----------
    out : str or os.PathLike
        Root directory; files go to ``out/day=YYYY-MM-DD/part-K.parquet``.
    rows : int
        Total number of rows, spread evenly over the days.
    segments : int, default 100
        Number of distinct segments.
    days : int, default 30
        Number of days (hive partitions), starting at `start`.
    seed : int, default 0
        Random seed; identical arguments give identical files' contents.
    start : datetime.date, default 2026-10-01
        First day.
    rows_per_file : int, default 4_000_000
        Maximum number of rows per file (and so the memory bound). A day with
        more rows is split into several files of nearly equal size.
    row_group_size : int, default 1_000_000
        Parquet row-group size.
    overwrite : bool, default False
        Remove the files of an earlier run under `out` first (only ``day=*/part-K.parquet``:
        a partition holding other files raises :class:`FileExistsError`). Otherwise an
        existing partition raises :class:`FileExistsError`.

    Returns
    -------
    GenerateResult
        Files written, total rows and bytes, wall time.

    Raises
    ------
    ValueError
        If a size argument is not positive.
    FileExistsError
        If `out` already holds ``day=*`` partitions and `overwrite` is false.
    """
    return write_partitions(
        make_chunk, segment_params, out, rows, segments, days, seed, start=start,
        rows_per_file=rows_per_file, row_group_size=row_group_size, overwrite=overwrite,
    )  # fmt: skip


def _parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Write synthetic hive-partitioned prediction logs (Parquet)."
    )
    parser.add_argument("--rows", type=int, required=True, help="total rows")
    parser.add_argument("--segments", type=int, default=100)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=date.fromisoformat, default=DEFAULT_START, help="first day")
    parser.add_argument("--rows-per-file", type=int, default=DEFAULT_ROWS_PER_FILE)
    parser.add_argument("--row-group-size", type=int, default=DEFAULT_ROW_GROUP_SIZE)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing day=* partitions under --out",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the command-line interface.

    Parameters
    ----------
    argv : list of str, optional
        Arguments; ``sys.argv[1:]`` when omitted.

    Returns
    -------
    int
        Process exit code.
    """
    args = _parse_args(argv)
    try:
        res = generate(
            args.out,
            args.rows,
            args.segments,
            args.days,
            args.seed,
            start=args.start,
            rows_per_file=args.rows_per_file,
            row_group_size=args.row_group_size,
            overwrite=args.overwrite,
        )
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    print(
        f"wrote {res.rows:,} rows in {len(res.files)} files to {res.out}: "
        f"{res.total_bytes:,} bytes ({res.total_bytes / 2**20:.1f} MiB) "
        f"in {res.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
