"""Shared helpers of the job tests: prediction logs on disk, job files, file trees."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl

SRC = str(Path(__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": SRC}
START = date(2026, 9, 25)


def day_frame(task: str, day: int, rows: int, seed: int = 0) -> pl.DataFrame:
    """One day of predictions for a task; segments 'a', 'b', 'c'."""
    rng = np.random.default_rng([seed, day])
    seg = rng.choice(["a", "b", "c"], rows)
    frame = {"segment": seg, "weight": rng.choice([0.5, 1.0, 2.0], rows)}
    if task == "binary":
        y = rng.random(rows) < 0.4
        frame |= {
            "label": y.astype(np.int8),
            "score": np.round(rng.random(rows) * 0.6 + 0.4 * y, 3),
        }
    elif task == "multiclass":
        y = rng.integers(0, 3, rows)
        p = rng.dirichlet([1, 1, 1], rows) + np.eye(3)[y]
        p /= p.sum(axis=1, keepdims=True)
        frame |= {"animal": np.array(["cat", "dog", "bird"])[y]}
        frame |= {f"p_{k}": p[:, i] for i, k in enumerate(["cat", "dog", "bird"])}
        frame |= {"guess": np.array(["cat", "dog", "bird"])[p.argmax(axis=1)]}
    else:
        y = rng.lognormal(2, 0.3, rows)
        frame |= {"y": y, "y_hat": y * rng.lognormal(0, 0.1, rows)}
    return pl.DataFrame(frame)


def write_day(root: Path, task: str, day: int, rows: int, seed: int = 0, parts: int = 1) -> Path:
    """Write day ``day`` (counted from START) as ``root/day=YYYY-MM-DD/part-i.parquet``."""
    folder = root / f"day={(START + timedelta(days=day)).isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    frame = day_frame(task, day, rows, seed)
    for i, chunk in enumerate(np.array_split(np.arange(frame.height), parts)):
        frame[chunk.tolist()].write_parquet(folder / f"part-{i}.parquet")
    return folder


def write_log(root: Path, task: str = "binary", days: int = 10, rows: int = 200) -> Path:
    for d in range(days):
        write_day(root, task, d, rows)
    return root


TASKS = {
    "binary": (
        'kind = "binary"\nlabel = "label"\nscore = "score"\nthreshold = [0.3, 0.5]\n'
        'precision = "exact"'
    ),
    "multiclass": (
        'kind = "multiclass"\nlabel = "animal"\nprediction = "guess"\n'
        'scores = { cat = "p_cat", dog = "p_dog", bird = "p_bird" }'
    ),
    "regression": 'kind = "regression"\nlabel = "y"\nprediction = "y_hat"',
}


def write_job(
    folder: Path,
    source: Path,
    task: str = "binary",
    *,
    extra: str = "",
    windows: str = '["1d", "3d", "mtd", "all"]',
    outputs: str | None = None,
) -> Path:
    """A job file in ``folder`` reading ``source``; store and outputs inside ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    outputs = outputs or (
        f'[[outputs]]\npath = "out/metrics"\nwindows = {windows}\n\n'
        f'[[outputs]]\npath = "out/metrics.csv"\nwindows = {windows}\n'
    )
    text = (
        f'[source]\npaths = ["{source}"]\npartition_key = "day"\n\n'
        f'[task]\n{TASKS[task]}\nby = ["segment"]\n{extra}\n\n'
        f'[store]\npath = "store"\n\n{outputs}'
    )
    job = folder / "job.toml"
    job.write_text(text)
    return job


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streameval", *args],
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
        cwd=cwd,
    )


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path → bytes)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


@contextmanager
def holding(lock: Path) -> Iterator[int]:
    """A live process holding the store lock ``lock`` (SIGKILLed at the end); yields its pid."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    hold = (
        "import time\nfrom streameval.jobs.lock import StoreLock\n"
        f"StoreLock({str(lock)!r}, 'x').acquire()\nprint('held', flush=True)\ntime.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True, env=ENV
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder.pid
    finally:
        holder.kill()  # SIGKILL: the lock file stays, its flock goes with the process
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
