"""Scheduled jobs: a TOML job file, an incremental state store, rollup windows, safe runs.

``streameval run job.toml`` computes the state of each new or changed source partition,
keeps one state file per partition in the store, and rebuilds the job's metric tables
(windows such as ``7d``, ``mtd`` and ``all`` ending at each day) by merging stored states.
"""

from __future__ import annotations

from .config import JobConfig, JobConfigError, load_job
from .lock import StoreLockedError
from .runner import RunReport, run_job
from .store import StoreError

__all__ = [
    "JobConfig",
    "JobConfigError",
    "RunReport",
    "StoreError",
    "StoreLockedError",
    "load_job",
    "run_job",
]
