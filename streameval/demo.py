"""A small synthetic prediction log, for the demo and for trying things out.

>>> import tempfile, streameval as se
>>> out = generate_predictions(tempfile.mkdtemp(), rows=2_000, segments=2, days=2, seed=1)
>>> se.evaluate(out, label="label", score="score", by=["segment", "day"]).height
4
"""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl


def generate_predictions(
    out: str | os.PathLike[str],
    *,
    rows: int = 200_000,
    segments: int = 5,
    days: int = 7,
    seed: int = 0,
    start: date = date(2026, 10, 1),
) -> str:
    """Write a hive-partitioned log ``out/day=YYYY-MM-DD/part-0.parquet``; return ``out``.

    Columns: ``segment`` (string), ``label`` (0/1), ``score`` (probability), ``weight``.
    Each segment has its own prevalence and separation, so metrics differ by segment.
    """
    rng = np.random.default_rng(seed)
    prevalence = rng.uniform(0.03, 0.4, segments)
    separation = rng.uniform(0.6, 2.2, segments)
    per_day = np.full(days, rows // days)
    per_day[: rows % days] += 1
    root = Path(out)
    for d, n in enumerate(per_day):
        seg = rng.integers(0, segments, n)
        label = rng.random(n) < prevalence[seg]
        logit = np.log(prevalence[seg] / (1 - prevalence[seg])) + separation[seg] * (label - 0.5)
        score = 1.0 / (1.0 + np.exp(-(logit + rng.standard_normal(n))))
        frame = pl.DataFrame(
            {
                "segment": [f"seg_{s:02d}" for s in seg],
                "label": label.astype(np.int8),
                "score": score,
                "weight": rng.choice([0.5, 1.0, 2.0], n),
            }
        )
        folder = root / f"day={(start + timedelta(days=d)).isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(folder / "part-0.parquet")
    return str(root)


#: The job file :func:`example_job` writes: a day's predictions, its store, a metric table.
EXAMPLE_JOB = """\
[source]
paths = ["preds"]
partition_key = "day"
[task]
label = "y"
score = "p"
[store]
path = "store"
[[outputs]]
path = "metrics.csv"
windows = ["1d", "all"]
"""


def example_job(root: str | os.PathLike[str]) -> str:
    """Write a tiny job under ``root``: a day of predictions and ``job.toml``; its path.

    The predictions are ``preds/day=2026-10-01/part-0.parquet`` (columns ``y``, ``p``); the
    job file (:data:`EXAMPLE_JOB`) evaluates them into ``metrics.csv`` through ``store/``.
    The examples of :mod:`streameval.jobs` start from it.

    Parameters
    ----------
    root : str or path-like
        An existing folder (a fresh temporary one, say).

    Returns
    -------
    str
        The job file's path, ``root/job.toml``.

    Examples
    --------
    >>> import tempfile
    >>> from streameval.jobs import run_job
    >>> run_job(example_job(tempfile.mkdtemp()), quiet=True).written
    1

    """
    day = Path(root) / "preds" / "day=2026-10-01"
    day.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.2, 0.9, 0.4, 0.5]}).write_parquet(
        day / "part-0.parquet"
    )
    path = Path(root) / "job.toml"
    path.write_text(EXAMPLE_JOB)
    return str(path)
