"""Generate a second kind of synthetic prediction logs, unlike ``generate.py``'s.

The layout is the same, ``OUT/day=YYYY-MM-DD/part-K.parquet``, and so is the call
(:func:`generate` takes the arguments of ``generate.generate``), but the data differ
on every point a kernel could have been tuned on:

* ``segment`` -- ``int32`` segment number (not a string); segment sizes follow a
  Zipf law (a few large segments, a long tail of small ones);
* ``label`` -- ``int8`` 0/1 with a low prevalence, 0.1 % to 2 % per segment
  (log-uniform), so many small groups hold few or no positives;
* ``score`` -- ``float64`` in (0, 1], spread over many binary exponents. Each row
  draws one of three shapes (mixture weights vary by segment), all increasing in a
  latent ``z = offset + separation * label + N(0, 1)``:

  - ``decades``: ``10 ** (-12 * (1 - Phi(z)))``, log-uniform-ish over (1e-12, 1);
  - ``tail``: ``exp(-E * 10 ** -z)`` with ``E`` exponential, clipped to
    ``[exp(-700), exp(-1e-15)]``: scores pile up just below 1 and far below 1e-12;
  - ``rounded``: the ``decades`` score rounded to 3 significant digits, so that
    ties are common.

Random streams come from :class:`numpy.random.SeedSequence` with a ``spawn_key``
per (kind, day, file), a scheme unrelated to ``generate.py``'s. The output depends
only on the arguments.

:func:`generate_multiclass` and :func:`generate_regression` write multiclass and
regression logs in the same spirit (integer segments, skewed classes, values over
many exponents).

Usage::

    python benchmarks/spread.py --rows 20_000_000 --out /tmp/se_spread/data --seed 0
    python benchmarks/spread.py --kind multiclass --rows 10_000_000 --days 10 \\
        --out /tmp/se_spread/multiclass
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
from scipy.special import ndtr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import (  # noqa: E402
    DEFAULT_ROW_GROUP_SIZE,
    DEFAULT_ROWS_PER_FILE,
    DEFAULT_START,
    GenerateResult,
    write_partitions,
)

KINDS: tuple[str, ...] = ("binary", "multiclass", "regression")
CLASSES = 10
# First element of every spawn key: one independent family of streams per kind.
_STREAMS: dict[str, int] = {"params": 7, "binary": 11, "multiclass": 13, "regression": 17}
# Decades covered by the ``decades`` score shape.
_DECADES = 12.0
# Bounds of ``-log(score)`` for the ``tail`` shape: scores in [exp(-700), exp(-1e-15)].
_TAIL_MIN, _TAIL_MAX = 1e-15, 700.0

# A chunk maker: (segment parameters, rows, seed, day index, file index) -> rows of one file.
Chunk = Callable[["SpreadParams", int, int, int, int], pl.DataFrame]


def _rng(seed: int, kind: str, *key: int) -> np.random.Generator:
    """A random generator for one (kind, key...) stream of a seed."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_STREAMS[kind], *key)))


@dataclass(frozen=True)
class SpreadParams:
    """Per-segment parameters.

    Attributes
    ----------
    weights : numpy.ndarray
        Probability of a row belonging to each segment (Zipf, shuffled).
    prevalence : numpy.ndarray
        Probability of ``label == 1`` (binary).
    separation : numpy.ndarray
        Shift of the positives' latent score (binary); of the true class's logit
        (multiclass).
    offset : numpy.ndarray
        Latent intercept (binary); log-scale level of the target (regression).
    mixture : numpy.ndarray
        ``(segments, 3)`` probabilities of the score shapes ``decades``, ``tail``
        and ``rounded`` (binary).
    class_prior : numpy.ndarray
        ``(segments, CLASSES)`` class probabilities (multiclass).
    temperature : numpy.ndarray
        Logit scale (multiclass): larger values push probabilities over more
        exponents.
    """

    weights: np.ndarray
    prevalence: np.ndarray
    separation: np.ndarray
    offset: np.ndarray
    mixture: np.ndarray
    class_prior: np.ndarray
    temperature: np.ndarray


def spread_params(segments: int, seed: int) -> SpreadParams:
    """Draw the per-segment parameters for a seed.

    Parameters
    ----------
    segments : int
        Number of segments.
    seed : int
        Random seed.

    Returns
    -------
    SpreadParams
        The parameters, identical for identical arguments.
    """
    rng = _rng(seed, "params")
    weights = 1.0 / np.arange(1, segments + 1) ** 1.1
    weights = rng.permutation(weights / weights.sum())
    prevalence = np.exp(rng.uniform(math.log(0.001), math.log(0.02), segments))
    separation = rng.uniform(0.8, 2.4, segments)
    offset = rng.normal(0.0, 0.5, segments)
    mixture = rng.dirichlet([2.0, 1.0, 1.0], segments)
    # Half a skewed common prior, half a per-segment Dirichlet draw: every class
    # keeps at least about 1 % of a segment's rows.
    common = 1.0 / np.arange(1, CLASSES + 1) ** 1.2
    prior = 0.5 * common / common.sum() + 0.5 * rng.dirichlet(np.full(CLASSES, 0.7), segments)
    temperature = rng.uniform(2.0, 6.0, segments)
    return SpreadParams(weights, prevalence, separation, offset, mixture, prior, temperature)


def _segments(params: SpreadParams, rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice(len(params.weights), size=n, p=params.weights)


def score_shapes(z: np.ndarray, shape: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Map a latent score to a probability with one of three shapes per row.

    Parameters
    ----------
    z : numpy.ndarray
        Latent scores.
    shape : numpy.ndarray
        0 (``decades``), 1 (``tail``) or 2 (``rounded``) per row.
    rng : numpy.random.Generator
        Source of the ``tail`` shape's exponential noise.

    Returns
    -------
    numpy.ndarray
        Scores in (0, 1], increasing in ``z`` within a shape.
    """
    decades = 10.0 ** (-_DECADES * (1.0 - ndtr(z)))
    tail = np.exp(-np.clip(rng.exponential(1.0, z.size) * 10.0 ** (-z), _TAIL_MIN, _TAIL_MAX))
    # 3 significant digits, so many rows of a group share a score.
    digits = 2 - np.floor(np.log10(decades))
    rounded = np.round(decades * 10.0**digits) / 10.0**digits
    return np.select([shape == 0, shape == 1], [decades, tail], rounded)


def binary_chunk(
    params: SpreadParams, n: int, seed: int, day_index: int, part: int
) -> pl.DataFrame:
    """Rows of one binary file: ``segment`` (Int32), ``label`` (Int8), ``score`` (Float64)."""
    rng = _rng(seed, "binary", day_index, part)
    seg = _segments(params, rng, n)
    label = rng.random(n) < params.prevalence[seg]
    z = params.offset[seg] + params.separation[seg] * label + rng.standard_normal(n)
    cumulative = params.mixture.cumsum(axis=1)[seg]
    shape = (rng.random(n)[:, None] > cumulative[:, :2]).sum(axis=1)
    return pl.DataFrame(
        [
            pl.Series("segment", seg.astype(np.int32)),
            pl.Series("label", label.astype(np.int8)),
            pl.Series("score", score_shapes(z, shape, rng)),
        ]
    )


def multiclass_chunk(
    params: SpreadParams, n: int, seed: int, day_index: int, part: int
) -> pl.DataFrame:
    """Rows of one multiclass file.

    Columns ``segment`` (Int32), ``label`` (Int8), ``p0`` ... ``p9`` (Float64
    probabilities summing to 1, down to about 1e-30) and ``pred`` (Int8, the
    arg max of the probabilities except for 5 % of rows, which hold another class).
    """
    rng = _rng(seed, "multiclass", day_index, part)
    seg = _segments(params, rng, n)
    cumulative = params.class_prior.cumsum(axis=1)[seg]
    label = (rng.random(n)[:, None] > cumulative[:, :-1]).sum(axis=1)
    logits = rng.standard_normal((n, CLASSES))
    logits[np.arange(n), label] += params.separation[seg]
    logits *= params.temperature[seg, None]
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    pred = p.argmax(axis=1)
    other = rng.random(n) < 0.05
    pred[other] = (pred[other] + rng.integers(1, CLASSES, int(other.sum()))) % CLASSES
    columns = [
        pl.Series("segment", seg.astype(np.int32)),
        pl.Series("label", label.astype(np.int8)),
        *[pl.Series(f"p{k}", p[:, k]) for k in range(CLASSES)],
        pl.Series("pred", pred.astype(np.int8)),
    ]
    return pl.DataFrame(columns)


def regression_chunk(
    params: SpreadParams, n: int, seed: int, day_index: int, part: int
) -> pl.DataFrame:
    """Rows of one regression file.

    Columns ``segment`` (Int32), ``y`` (Float64, log-normal with sigma 2, so over
    about 20 binary exponents) and ``f`` (Float64, ``y`` times a log-normal error).
    """
    rng = _rng(seed, "regression", day_index, part)
    seg = _segments(params, rng, n)
    y = np.exp(2.0 * params.offset[seg] + 2.0 * rng.standard_normal(n))
    f = y * np.exp(rng.normal(0.0, 0.2 + 0.2 * params.separation[seg]))
    return pl.DataFrame(
        [
            pl.Series("segment", seg.astype(np.int32)),
            pl.Series("y", y),
            pl.Series("f", f),
        ]
    )


CHUNKS: dict[str, Chunk] = {
    "binary": binary_chunk,
    "multiclass": multiclass_chunk,
    "regression": regression_chunk,
}


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
    """Write a hive-partitioned binary data set (same arguments as ``generate.generate``).

    Parameters
    ----------
    out : str or os.PathLike
        Root directory; files go to ``out/day=YYYY-MM-DD/part-K.parquet``.
    rows : int
        Total number of rows, spread evenly over the days.
    segments : int, default 100
        Number of segments (``0 .. segments - 1``).
    days : int, default 30
        Number of days (hive partitions), starting at `start`.
    seed : int, default 0
        Random seed.
    start : datetime.date, default 2026-10-01
        First day.
    rows_per_file : int, default 4_000_000
        Maximum number of rows per file (and so the memory bound).
    row_group_size : int, default 1_000_000
        Parquet row-group size.
    overwrite : bool, default False
        Remove existing ``day=*`` directories under `out` first; otherwise they
        raise :class:`FileExistsError`.

    Returns
    -------
    GenerateResult
        Files written, total rows and bytes, wall time.
    """
    return write_partitions(
        binary_chunk, spread_params, out, rows, segments, days, seed, start=start,
        rows_per_file=rows_per_file, row_group_size=row_group_size, overwrite=overwrite,
    )  # fmt: skip


def generate_multiclass(
    out: str | os.PathLike[str],
    rows: int,
    segments: int = 100,
    days: int = 10,
    seed: int = 0,
    *,
    start: date = DEFAULT_START,
    rows_per_file: int = DEFAULT_ROWS_PER_FILE // 4,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    overwrite: bool = False,
) -> GenerateResult:
    """Write a multiclass data set (see :func:`multiclass_chunk`); arguments as :func:`generate`.

    Files are smaller by default (1M rows), since a row holds 10 probabilities.
    """
    return write_partitions(
        multiclass_chunk, spread_params, out, rows, segments, days, seed, start=start,
        rows_per_file=rows_per_file, row_group_size=row_group_size, overwrite=overwrite,
    )  # fmt: skip


def generate_regression(
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
    """Write a regression data set (see :func:`regression_chunk`); arguments as :func:`generate`."""
    return write_partitions(
        regression_chunk, spread_params, out, rows, segments, days, seed, start=start,
        rows_per_file=rows_per_file, row_group_size=row_group_size, overwrite=overwrite,
    )  # fmt: skip


GENERATE: dict[str, Callable[..., GenerateResult]] = {
    "binary": generate,
    "multiclass": generate_multiclass,
    "regression": generate_regression,
}


def _parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Write spread-out synthetic prediction logs (hive-partitioned Parquet)."
    )
    parser.add_argument("--kind", choices=KINDS, default="binary")
    parser.add_argument("--rows", type=int, required=True, help="total rows")
    parser.add_argument("--segments", type=int, default=100)
    parser.add_argument("--days", type=int, help="default 30 (10 for multiclass)")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=date.fromisoformat, default=DEFAULT_START, help="first day")
    parser.add_argument("--overwrite", action="store_true", help="replace existing partitions")
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
    days = args.days or (10 if args.kind == "multiclass" else 30)
    try:
        res = GENERATE[args.kind](
            args.out,
            args.rows,
            args.segments,
            days,
            args.seed,
            start=args.start,
            overwrite=args.overwrite,
        )
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    print(
        f"wrote {res.rows:,} {args.kind} rows in {len(res.files)} files to {res.out}: "
        f"{res.total_bytes / 2**20:.1f} MiB in {res.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
