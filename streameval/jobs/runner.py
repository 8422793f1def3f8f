"""``streameval run``: bring a job's store and outputs up to date with its source.

A run lists the source partitions, computes and stores the state of each new or changed one
(the manifest is rewritten as they complete, at most every half second, so a killed run
resumes about where it stopped), drops the states of partitions that disappeared,
recomputes the rollups of the days whose windows changed, writes the outputs whose bytes
changed, and finally deletes the files the manifest no longer names. Every step only depends
on what the manifest records, so a run killed at any moment is completed by the next one,
with the same result as an uninterrupted run.

>>> import tempfile, os, polars as pl
>>> root = tempfile.mkdtemp()
>>> for day in ("2026-10-01", "2026-10-02"):
...     os.makedirs(f"{root}/preds/day={day}")
...     pl.DataFrame({"y": [0, 1, 1], "p": [0.2, 0.9, 0.4]}).write_parquet(
...         f"{root}/preds/day={day}/part-0.parquet")
>>> _ = open(f"{root}/job.toml", "w").write('''
... [source]
... paths = ["preds"]
... partition_key = "day"
... [task]
... label = "y"
... score = "p"
... [store]
... path = "store"
... [[outputs]]
... path = "metrics.csv"
... windows = ["1d", "all"]
... ''')
>>> report = run_job(f"{root}/job.toml", quiet=True)
>>> report.processed, run_job(f"{root}/job.toml", quiet=True).processed
(2, 0)
>>> for row in pl.read_csv(f"{root}/metrics.csv").select("window", "day", "n", "roc_auc").rows():
...     print(row)
('1d', '2026-10-01', 3, 1.0)
('all', '2026-10-01', 3, 1.0)
('1d', '2026-10-02', 3, 1.0)
('all', '2026-10-02', 6, 1.0)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, TextIO

import polars as pl

from ..accumulate import accumulate
from ..errors import StreamevalError
from ..spec import same_computation
from .checks import REJECTED, Checks
from .config import JobConfig, JobConfigError, load_job
from .discover import discover
from .lock import StoreLock
from .outputs import Published, publish
from .partitions import Partition, parse_day, safe_name
from .progress import Progress
from .rollup import Entry, Rollups, StateCache
from .store import DamagedStateError, Store, StoreError

SAVE_EVERY = 0.5  # seconds between manifest writes while partitions are computed


@dataclass
class RunReport:
    """What a run did (or, with ``dry_run``, would do).

    Returned by :func:`run_job`; a dry run fills in ``partitions``, ``new``, ``changed`` and
    ``dropped`` only.

    Parameters
    ----------
    partitions : int
        Source partitions found.
    processed : int
        Partitions whose state was computed and stored.
    new : list of str
        Partition values not in the store yet.
    changed : list of str
        Partition values whose files changed (or whose state file is gone).
    dropped : list of str
        Partition values in the store but no longer in the source (their states dropped).
    rows : int
        Rows read from the processed partitions.
    rollup_days : int
        Days whose window rollups were recomputed.
    written : int
        Output files written (their bytes changed).
    unchanged : int
        Output files left as they were.
    removed : int
        Output files removed (of days no longer in the source).
    seconds : float
        Duration of the run.
    judged : int
        Days whose checks were judged (again).
    checks_seconds : float
        Of ``seconds``, the time judging them (reading the stored states the run had not
        read already included), writing the checks table and answering for the failures.
        Not in it: the DeLong variances the rollups compute, in their own pass, for the
        windows whose aggregates the checks read again (:meth:`.Checks.read_windows`).
    failures : list of dict
        The check rows that failed or warned on the days the run answers for: the last
        day, and the days of the partitions it computed (see ``docs/checks.md``).
    checks_failed : int
        Of ``failures``, those of ``error`` checks (``streameval run`` then exits with 3).

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.demo import example_job
    >>> root = tempfile.mkdtemp()
    >>> job_file = example_job(root)  # a day of predictions, and job.toml
    >>> report = run_job(f"{root}/job.toml", quiet=True)
    >>> report.partitions, report.new, report.processed, report.rows, report.written
    (1, ['2026-10-01'], 1, 4, 1)

    """

    partitions: int = 0
    processed: int = 0
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    rows: int = 0
    rollup_days: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    seconds: float = 0.0
    judged: int = 0
    checks_seconds: float = 0.0
    failures: list[dict[str, Any]] = field(default_factory=list)
    checks_failed: int = 0


def plan(parts: list[Partition], manifest: dict[str, Any] | None, store: Store) -> RunReport:
    """Which partitions are new, changed (or whose state file is gone) and dropped."""
    known = (manifest or {}).get("partitions", {})
    report = RunReport(partitions=len(parts))
    for p in parts:
        entry = known.get(p.value)
        if entry is None:
            report.new.append(p.value)
        elif entry.get("digest") != p.digest or not os.path.exists(store.path(entry["state"])):
            report.changed.append(p.value)
    values = {p.value for p in parts}
    report.dropped = [v for v in known if v not in values]
    return report


def entries(job: JobConfig, manifest: dict[str, Any]) -> list[Entry]:
    """The stored partitions in day order."""
    key = job.source.partition_key
    items = [
        Entry(v, parse_day(v, key, v) if key else None, e["digest"], e["state"])
        for v, e in manifest["partitions"].items()
    ]
    return sorted(items, key=lambda e: (e.day or e.value, e.value))


def run_job(
    path: str | os.PathLike[str],
    *,
    dry_run: bool = False,
    full_refresh: bool = False,
    checks_only: bool = False,
    quiet: bool = False,
    stream: TextIO | None = None,
) -> RunReport:
    """Run a job file; see the module docstring. Returns what was done.

    Holds the store's lock for the run. Only new and changed partitions are read; a run
    killed at any moment is completed by the next one.

    Parameters
    ----------
    path : str or path-like
        The TOML job file (:func:`load_job`).
    dry_run : bool
        Only list the partitions that would be processed or dropped (printed to ``stream``,
        default stdout): no state is computed and nothing is written.
    full_refresh : bool
        Recompute every partition into a new generation of the store, which takes the old
        one's place when the run completes (needed after a change of the job's
        :meth:`JobConfig.identity`).
    checks_only : bool
        Read no source: judge every stored day again by the job's ``[[checks]]`` and write
        the checks table alone.
    quiet : bool
        No progress lines (they go to ``stream``, default stderr); warnings are still shown.
    stream : text file, optional
        Where progress (or a dry run's plan) is written.

    Returns
    -------
    RunReport
        What the run did (or would do).

    Raises
    ------
    JobConfigError
        The job file is missing or invalid.
    StoreLockedError
        Another run holds the store's lock.
    StoreError
        The store cannot be used as it is (another format version, computed by another job,
        a folder holding other files, a damaged state whose source is gone).
    InputError
        A source partition's data does not fit the task (the message names the partition).

    Examples
    --------
    >>> import os, tempfile, polars as pl
    >>> from streameval.demo import example_job
    >>> root = tempfile.mkdtemp()
    >>> job_file = example_job(root)  # a day of predictions, and job.toml
    >>> run_job(f"{root}/job.toml", dry_run=True).new
    would process 1 of 1 partition(s) (1 new, 0 changed): 1 file(s), 4 rows
      new      day=2026-10-01  1 file(s)  4 rows
    unchanged: 0 partition(s)
    ['2026-10-01']
    >>> run_job(f"{root}/job.toml", quiet=True).processed
    1
    >>> run_job(f"{root}/job.toml", quiet=True).processed  # nothing new: nothing read
    0
    >>> pl.read_csv(f"{root}/metrics.csv").select("window", "day", "n", "roc_auc").rows()
    [('1d', '2026-10-01', 4, 0.75), ('all', '2026-10-01', 4, 0.75)]

    """
    job = load_job(path)
    store = Store(job.store)
    out = sys.stderr if stream is None else stream
    command = f"streameval run {os.path.abspath(os.fspath(path))} on {socket.gethostname()}"
    if checks_only:
        if dry_run or full_refresh:
            raise JobConfigError(
                "expected --checks-only alone, not with --dry-run or --full-refresh"
            )
        with StoreLock(store.lock_path, command):
            return _judge_only(job, store, store.open(job.identity(), False), out, quiet)
    parts = discover(job.source, job.base)
    if dry_run:
        manifest = None if full_refresh else store.read_manifest()
        if manifest is not None:
            store.open(job.identity(), full_refresh=False)
        report = plan(parts, manifest, store)
        _print_plan(job, parts, report, sys.stdout if stream is None else stream)
        return report
    with StoreLock(store.lock_path, command) as lock:
        manifest = store.open(job.identity(), full_refresh)
        try:
            report = _run(job, store, manifest, parts, lock.took_over, out, quiet)
        except BaseException:
            store.abandon()  # a full refresh that failed leaves the old store as it was
            raise
    return report


def _run(
    job: JobConfig,
    store: Store,
    manifest: dict[str, Any],
    parts: list[Partition],
    took_over: str | None,
    out: TextIO,
    quiet: bool,
) -> RunReport:
    """The body of a run, holding the store's lock."""
    started = time.monotonic()
    report = plan(parts, manifest, store)
    todo = [p for p in parts if p.value in set(report.new) | set(report.changed)]
    progress = Progress(
        sum(p.files for p in todo), sum(p.rows for p in todo), stream=out, quiet=quiet
    )
    if took_over:
        progress.log(took_over, always=True)
    store.remove_temporaries()
    warned: set[str] = set()

    def warn(message: str) -> None:
        if message not in warned:
            warned.add(message)
            progress.log(f"warning: {message}", always=True)

    for value in report.dropped:
        del manifest["partitions"][value]
    store.save(manifest)
    saved = time.monotonic()
    for p in todo:
        _compute(job, store, manifest, p, progress, warn)
        report.processed += 1
        report.rows += p.rows
        if time.monotonic() - saved >= SAVE_EVERY:  # a killed run resumes from here
            store.save(manifest)
            saved = time.monotonic()
    store.save(manifest)
    progress.finish()
    rollups = Rollups(
        store, manifest, job.windows, job.source.partition_key,
        job.task.metric_kwargs(), job.task.by, warn,
    )  # fmt: skip
    checks = Checks(job, store, manifest, warn)

    def save() -> None:
        store.save(manifest)

    lengths = checks.next_windows() if job.outputs else frozenset()
    # the most days a pool reaches back from its day: a trailing window, a check's history
    reach = max([w.days for w in job.windows if not w.running] + [checks.reach()], default=0)
    if not lengths:  # (no window of the last day stored for the next run: their files go)
        manifest.pop("aggregates", None)
    for _ in range(len(parts) + 3):  # each repair recomputes a damaged file once
        stored = entries(job, manifest)
        # (each state read once; the rollups' aggregates kept for the checks, the last day's
        # windows the next run's checks read stored for it)
        records = manifest.setdefault("aggregates", {}) if lengths else None
        states = StateCache(
            store, stored, checks.read_windows(), records, manifest.get("spec"), lengths, reach,
            checks.drifts(),
        )  # fmt: skip
        rollups.states = checks.states = states
        try:
            report.rollup_days += rollups.run(stored, save)
            judging = time.monotonic()
            report.judged += len(checks.run(stored, save))
            report.checks_seconds += time.monotonic() - judging
            store.switch(manifest)  # a full refresh takes the store's place here
            names = list(dict.fromkeys(rollups.name(e) for e in stored)) if job.outputs else []
            judged = list(dict.fromkeys(checks.name(e) for e in stored)) if job.checks else []
            published = publish(job, store, manifest, names, save, judged)
            computed = {
                checks.name(e) for e in stored if e.value in set(report.new + report.changed)
            }
            answering = time.monotonic()
            _answer(job, checks, stored, computed, report)
            report.checks_seconds += published.checks_seconds + time.monotonic() - answering
            break
        except DamagedStateError as exc:
            _repair(job, store, manifest, parts, exc, progress, warn)
        finally:  # (its pools hold it in a cycle: the states go now, not at a collection)
            states.close()
    else:  # pragma: no cover - each repair replaces one damaged file
        raise StoreError(f"the store {store.root!r} keeps failing its checks")
    report.removed = published.removed
    return _finish(job, store, manifest, checks, stored, report, published, progress, started)


def _judge_only(
    job: JobConfig, store: Store, manifest: dict[str, Any], out: TextIO, quiet: bool
) -> RunReport:
    """``--checks-only``: judge every stored day again and write the checks table alone."""
    started = time.monotonic()
    progress = Progress(0, 0, stream=out, quiet=quiet)
    if not job.checks:
        raise JobConfigError(f"{job.file}: checks: missing; --checks-only needs [[checks]] tables")
    if not manifest.get("partitions"):
        raise StoreError(
            f"the store {store.root!r} holds no states yet; hint: run the job once without "
            "--checks-only"
        )
    report = RunReport(partitions=len(manifest["partitions"]))
    checks = Checks(job, store, manifest, lambda m: progress.log(f"warning: {m}", always=True))
    stored = entries(job, manifest)

    def save() -> None:
        store.save(manifest)

    try:
        judging = time.monotonic()
        report.judged = len(checks.run(stored, save, force=True))
        judged = list(dict.fromkeys(checks.name(e) for e in stored))
        published = publish(job, store, manifest, [], save, judged, metrics=False)
        _answer(job, checks, stored, set(), report)
        report.checks_seconds = time.monotonic() - judging
    except DamagedStateError as exc:
        raise StoreError(
            f"{exc}; hint: run the job without --checks-only to repair the store"
        ) from None
    return _finish(job, store, manifest, checks, stored, report, published, progress, started)


def _finish(
    job: JobConfig,
    store: Store,
    manifest: dict[str, Any],
    checks: Checks,
    stored: list[Entry],
    report: RunReport,
    published: Published,
    progress: Progress,
    started: float,
) -> RunReport:
    """A run's end: its manifest saved, the files it no longer names deleted, its summary.

    The verdicts are told (logged, given to ``on_failure``, put in the report) in between.
    """
    report.written, report.unchanged = published.written, published.unchanged
    store.save(manifest)
    store.remove_unreferenced(manifest)
    _tell(job, checks, stored, report, progress.log)
    report.seconds = time.monotonic() - started
    progress.log(_summary(report))
    return report


def _answer(
    job: JobConfig, checks: Checks, stored: list[Entry], computed: set[str], report: RunReport
) -> None:
    """The failed rows the run answers for: the last day's and those of the days computed."""
    if not job.checks or not stored:
        return
    days = [n for n in dict.fromkeys(checks.name(e) for e in stored) if n in computed]
    days.append(checks.name(stored[-1]))
    rows = [checks.rows(n) for n in dict.fromkeys(days)]
    failed = pl.concat(rows, how="vertical_relaxed").filter(pl.col("status").is_in(REJECTED))
    report.failures = failed.to_dicts()
    report.checks_failed = failed.filter(pl.col("status") == "fail").height


def _tell(job: JobConfig, checks: Checks, stored: list[Entry], report: RunReport, log: Any) -> None:
    """Log the failed rows, run ``on_failure`` with them, then write the checks report."""
    for row in report.failures[:20]:
        log(
            f"check {row['check']!r} {row['status']}: {_where(job, row)}{row['reason']}",
            always=True,
        )
    if len(report.failures) > 20:
        log(f"… and {len(report.failures) - 20} more failed check row(s)", always=True)
    if report.failures and job.checking.on_failure:
        notify(job, pl.DataFrame(report.failures), log)
    path = job.checking.report
    if path is not None and job.checks and stored and (report.judged or not os.path.exists(path)):
        try:
            checks.write_report(stored)
        except (StreamevalError, OSError) as exc:  # (the verdicts are out: the report can wait)
            log(f"warning: the checks report was not written: {exc}", always=True)


def _where(job: JobConfig, row: dict[str, Any]) -> str:
    keys = [k for k in (job.source.partition_key, *job.task.by, "threshold", "model", "k") if k]
    text = ", ".join(f"{k}={row[k]}" for k in keys if k in row)
    return f"{text}: " if text else ""


def notify(job: JobConfig, failed: pl.DataFrame, log: Any) -> None:
    """Run ``on_failure`` with the failed rows as a JSON array on its standard input."""
    command = list(job.checking.on_failure)
    try:
        done = subprocess.run(
            command,
            input=failed.write_json().encode(),
            cwd=job.base,
            timeout=job.checking.on_failure_timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log(
            f"warning: on_failure command {command!r} was stopped after "
            f"{job.checking.on_failure_timeout:g} s",
            always=True,
        )
        return
    except OSError as exc:
        log(f"warning: on_failure command {command!r} could not start ({exc})", always=True)
        return
    if done.returncode != 0:
        log(f"warning: on_failure command {command!r} exited with {done.returncode}", always=True)


def _compute(
    job: JobConfig,
    store: Store,
    manifest: dict[str, Any],
    p: Partition,
    progress: Progress,
    warn: Any,
) -> None:
    """Compute, store and record one partition's state."""
    key = job.source.partition_key
    label = f"{key}={p.value}" if key else p.value
    progress.begin(label)
    tick = time.monotonic()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            state = accumulate(p.open(), **job.task.accumulate_kwargs())
    except StreamevalError as exc:
        raise type(exc)(f"source partition {label}: {exc}") from None
    for w in caught:
        warn(str(w.message))
    spec = state.spec.to_json()
    stored = manifest.get("spec")
    if stored is not None and not same_computation(stored, spec):
        raise StreamevalError(
            f"source partition {label}: its state was computed differently from the states "
            "already in the store (another streameval version?); hint: run with --full-refresh"
        )
    if stored is None:  # (a store's older states keep its spec: merges are at their version)
        manifest["spec"] = spec
    rel = store.place(f"states/{safe_name(label)}.{p.digest}.parquet")
    size = store.write_state(state, rel)
    manifest["partitions"][p.value] = {
        "digest": p.digest,
        "fingerprint": p.fingerprint,
        "state": rel,
        "files": p.files,
        "rows": p.rows,
        "state_rows": state.table.height,
        "state_bytes": size,
        "seconds": round(time.monotonic() - tick, 3),
    }
    progress.done(label, files=p.files, rows=p.rows)


def _repair(
    job: JobConfig,
    store: Store,
    manifest: dict[str, Any],
    parts: list[Partition],
    exc: DamagedStateError,
    progress: Progress,
    warn: Any,
) -> None:
    """Recompute a damaged store file: a partition's state from its source, or a rollup."""
    if exc.partition is None:  # metric or check rows, a running window: from the states
        for table in ("rollups", "checks", "aggregates"):
            for name, entry in list(manifest.get(table, {}).items()):
                if entry.get("file") == exc.file:
                    del manifest[table][name]
        if exc.file in (manifest.get("running") or {}).get("files", {}).values():
            manifest["running"] = {}
        warn(f"{exc}; recomputing it")
        return
    source = {p.value: p for p in parts}.get(exc.partition)
    if source is None:
        raise StoreError(
            f"{exc}; its source files are no longer there, so it cannot be recomputed; hint: "
            "restore the state file from a backup, or drop the partition from the store with "
            "--full-refresh (which keeps the old store until it completes)"
        ) from None
    warn(f"{exc}; recomputing that partition from its source")
    manifest["partitions"].pop(exc.partition, None)
    _compute(job, store, manifest, source, progress, warn)
    store.save(manifest)


def _summary(r: RunReport) -> str:
    return (
        f"{r.partitions} partition(s): {r.processed} processed ({len(r.new)} new, "
        f"{len(r.changed)} changed), {r.partitions - r.processed} unchanged, {len(r.dropped)} "
        f"dropped; {r.rows:,} rows read; rollups of {r.rollup_days} day(s) recomputed; "
        f"outputs: {r.written} file(s) written, {r.unchanged} unchanged, {r.removed} removed; "
        f"{_checked(r)}{r.seconds:.2f} s"
    )


def _checked(r: RunReport) -> str:
    if not r.judged and not r.failures:
        return ""
    warned = len(r.failures) - r.checks_failed
    took = f" in {r.checks_seconds:.2f} s" if r.judged else ""
    return f"checks: {r.judged} day(s) judged{took}, {r.checks_failed} failed, {warned} warned; "


def _print_plan(job: JobConfig, parts: list[Partition], r: RunReport, out: TextIO) -> None:
    key = job.source.partition_key
    by_value = {p.value: p for p in parts}

    def label(v: str) -> str:
        return f"{key}={v}" if key else v

    todo = [(v, "new") for v in r.new] + [(v, "changed") for v in r.changed]
    todo.sort(key=lambda item: [p.value for p in parts].index(item[0]))
    files = sum(by_value[v].files for v, _ in todo)
    rows = sum(by_value[v].rows for v, _ in todo)
    print(
        f"would process {len(todo)} of {len(parts)} partition(s) ({len(r.new)} new, "
        f"{len(r.changed)} changed): {files} file(s), {rows:,} rows",
        file=out,
    )
    for v, why in todo:
        p = by_value[v]
        print(f"  {why:<8} {label(v)}  {p.files} file(s)  {p.rows:,} rows", file=out)
    if r.dropped:
        print(f"would drop {len(r.dropped)} partition(s) no longer in the source:", file=out)
        for v in r.dropped:
            print(f"  dropped  {label(v)}", file=out)
    print(f"unchanged: {len(parts) - len(todo)} partition(s)", file=out)
