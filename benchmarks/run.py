"""Benchmark per-segment ROC AUC on hive-partitioned Parquet prediction logs.

Every contender runs in a fresh child process (this script re-invoked with
``--worker``), so its peak resident set size is its own: the parent reaps the
child with :func:`os.wait4`, whose resource usage holds the child's
``ru_maxrss``. The child times only the work itself (after its imports) and
writes its per-group AUCs to a scratch directory, from which the parent
cross-checks the contenders against each other.

Contenders
----------
floor
    ``polars`` streaming scan with ``len``/``sum`` aggregations per group: the
    cost of reading the data and grouping, with no AUC at all.
default
    ``streameval.evaluate`` with the library's default precision.
exact
    ``streameval.evaluate(..., precision="exact")``.
sklearn
    Everything read into memory, ``partition_by`` the groups, then
    ``sklearn.metrics.roc_auc_score`` per group.
polars_ds
    ``polars_ds.query_roc_auc`` inside ``group_by(...).agg(...)`` on the lazy
    scan, collected with the streaming engine.

Usage::

    python benchmarks/run.py --data /tmp/se_bench/data --rows 100_000_000
    python benchmarks/run.py --data /tmp/se_bench/data --only floor,default \\
        --readme docs/performance.md
"""

from __future__ import annotations

import argparse
import glob
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

CONTENDERS: tuple[str, ...] = ("floor", "default", "exact", "sklearn", "polars_ds")
GROUP_BY: list[str] = ["segment", "day"]
MARKER = "bench"
HERE = Path(__file__).resolve().parent
REPO_SRC = HERE.parent / "src"
# Contenders whose AUCs serve as the reference for the cross-check, in order
# of preference.
REFERENCES: tuple[str, ...] = ("exact", "sklearn")

NOTES: dict[str, str] = {
    "floor": "streaming scan, len/sum per group, no AUC",
    "default": "se.evaluate, default precision",
    "exact": 'se.evaluate, precision="exact"',
    "sklearn": "read_parquet, partition_by, roc_auc_score per group",
    "polars_ds": (
        "query_roc_auc in group_by.agg on the lazy scan, streaming engine "
        "(the agg itself falls back to an in-memory node)"
    ),
}

# A contender is a function that does its imports and returns the timed work:
# a callable mapping the data path to per-group results (or None for floor)
# and a dict of extra facts.
Work = Callable[[str], "tuple[pl.DataFrame | None, dict[str, Any]]"]


# --------------------------------------------------------------------------
# Contenders (run inside the child process)
# --------------------------------------------------------------------------


def _tidy(df: pl.DataFrame) -> pl.DataFrame:
    """Keep the group keys and AUC columns, with keys cast to strings.

    Parameters
    ----------
    df : polars.DataFrame
        Per-group results of a contender.

    Returns
    -------
    polars.DataFrame
        Columns ``segment``, ``day`` (String), ``roc_auc`` (Float64) and, when
        present, ``roc_auc_error`` (Float64).
    """
    import polars as pl

    cols = [pl.col(k).cast(pl.String) for k in GROUP_BY]
    cols.append(pl.col("roc_auc").cast(pl.Float64))
    if "roc_auc_error" in df.columns:
        cols.append(pl.col("roc_auc_error").cast(pl.Float64))
    return df.select(cols)


def prepare_floor() -> Work:
    """Import polars; return the floor query (scan, group, len and sums)."""
    import polars as pl

    def work(data: str) -> tuple[pl.DataFrame | None, dict[str, Any]]:
        out = (
            pl.scan_parquet(data, hive_partitioning=True)
            .group_by("segment", "day")
            .agg(pl.len(), pl.col("label").sum(), pl.col("score").sum())
            .collect(engine="streaming")
        )
        return None, {"groups": out.height, "rows": int(out["len"].sum())}

    return work


def _prepare_streameval(precision: str | None) -> Work:
    """Import streameval; return a call of ``se.evaluate``.

    Parameters
    ----------
    precision : str or None
        Passed as ``precision=``; omitted when None (library default).

    Returns
    -------
    Work
        The timed work.
    """
    import polars as pl

    import streameval as se
    from streameval.kernels.compiled import loops
    from streameval.local import warm

    # numba's compiled loops (the ``fast`` extra) load once per process, like an import
    warmed = warm()
    kwargs: dict[str, Any] = {} if precision is None else {"precision": precision}

    def work(data: str) -> tuple[pl.DataFrame | None, dict[str, Any]]:
        out = se.evaluate(data, label="label", score="score", by=GROUP_BY, **kwargs)
        if isinstance(out, pl.LazyFrame):
            out = out.collect()
        info = {
            "streameval": getattr(se, "__version__", "?"),
            "streameval_path": str(Path(se.__file__).parent),
            "compiled": loops() is not None,
            "warm_up_s": round(warmed, 2),
        }
        return _tidy(out), info

    return work


def prepare_default() -> Work:
    """Import streameval; return ``se.evaluate`` with the default precision."""
    return _prepare_streameval(None)


def prepare_exact() -> Work:
    """Import streameval; return ``se.evaluate(..., precision="exact")``."""
    return _prepare_streameval("exact")


def prepare_sklearn() -> Work:
    """Import polars and scikit-learn; return the in-memory per-group loop."""
    import numpy as np
    import polars as pl
    from sklearn.metrics import roc_auc_score

    def auc(y: np.ndarray, s: np.ndarray) -> float:
        # roc_auc_score raises when a group holds a single class.
        if y.min() == y.max():
            return math.nan
        return float(roc_auc_score(y, s))

    def work(data: str) -> tuple[pl.DataFrame | None, dict[str, Any]]:
        df = pl.read_parquet(data, hive_partitioning=True)
        # partition_by beat a global sort + slicing and a numpy argsort on
        # the group id (10M rows, 3000 groups): ~10 s vs ~14 s and ~12 s.
        parts = df.partition_by(GROUP_BY, as_dict=True)
        del df
        keys: dict[str, list[Any]] = {k: [] for k in GROUP_BY}
        aucs: list[float] = []
        for key, part in parts.items():
            for name, value in zip(GROUP_BY, key, strict=True):
                keys[name].append(value)
            aucs.append(auc(part["label"].to_numpy(), part["score"].to_numpy()))
        out = pl.DataFrame({**keys, "roc_auc": aucs})
        return _tidy(out), {}

    return work


def prepare_polars_ds() -> Work:
    """Import polars-ds; return ``query_roc_auc`` in a streaming group-by."""
    import polars as pl
    import polars_ds as pds

    def work(data: str) -> tuple[pl.DataFrame | None, dict[str, Any]]:
        out = (
            pl.scan_parquet(data, hive_partitioning=True)
            .group_by("segment", "day")
            .agg(pds.query_roc_auc("label", "score").alias("roc_auc"))
            .collect(engine="streaming")
        )
        return _tidy(out), {"polars_ds": pds.__version__}

    return work


PREPARE: dict[str, Callable[[], Work]] = {
    "floor": prepare_floor,
    "default": prepare_default,
    "exact": prepare_exact,
    "sklearn": prepare_sklearn,
    "polars_ds": prepare_polars_ds,
}


def _maxrss_bytes(maxrss: int) -> int:
    """Convert ``ru_maxrss`` to bytes (KiB on Linux, bytes on macOS)."""
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def worker(name: str, data: str, scratch: Path) -> int:
    """Run one contender in this process and write its summary.

    Writes ``scratch/NAME.json`` (always) and ``scratch/NAME.parquet`` (the
    per-group AUCs, when the contender computes them).

    Parameters
    ----------
    name : str
        Contender name.
    data : str
        Data set root directory (or glob).
    scratch : Path
        Directory for the outputs.

    Returns
    -------
    int
        Exit code: 0 on success, 1 if the contender failed.
    """
    summary: dict[str, Any] = {"name": name}
    try:
        t0 = time.perf_counter()
        work = PREPARE[name]()
        summary["import_s"] = time.perf_counter() - t0
        usage = resource.getrusage(resource.RUSAGE_SELF)
        summary["import_rss_bytes"] = _maxrss_bytes(usage.ru_maxrss)
        t0 = time.perf_counter()
        result, info = work(data)
        summary["wall_s"] = time.perf_counter() - t0
        summary.update(info)
        if result is not None:
            result.write_parquet(scratch / f"{name}.parquet")
            summary["groups"] = result.height
        code = 0
    except Exception as exc:
        # Any failure is reported in the table rather than raised.
        traceback.print_exc()
        summary["error"] = f"{type(exc).__name__}: {exc}"
        code = 1
    (scratch / f"{name}.json").write_text(json.dumps(summary))
    return code


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------


@dataclass
class Outcome:
    """Measurements of one contender (best over repeats).

    Attributes
    ----------
    name : str
        Contender name.
    wall_s : float or None
        Timed work, measured in the child, excluding imports; the minimum
        over the repeats.
    process_s : float or None
        Wall time of the whole child process, including interpreter start
        and imports.
    peak_rss_bytes : int or None
        Peak RSS of the child (``ru_maxrss`` from ``os.wait4``); maximum over
        the repeats.
    import_rss_bytes : int or None
        Peak RSS of the child just after its imports.
    peak_anon_bytes, peak_file_bytes : int or None
        Largest ``RssAnon`` / ``RssFile`` seen when polling
        ``/proc/PID/status`` every few milliseconds (Linux only; may miss
        short spikes). File-backed pages are shared libraries and
        memory-mapped Parquet pages.
    parent_rss_bytes : int or None
        This process's own ``ru_maxrss`` when the child started. Linux starts
        a child's ``ru_maxrss`` from that value, so a peak at or below it is
        only an upper bound.
    error : str or None
        Why the contender failed, if it did.
    info : dict
        Extra facts reported by the child (row and group counts, versions).
    """

    name: str
    wall_s: float | None = None
    process_s: float | None = None
    peak_rss_bytes: int | None = None
    import_rss_bytes: int | None = None
    peak_anon_bytes: int | None = None
    peak_file_bytes: int | None = None
    parent_rss_bytes: int | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


def _proc_rss(pid: int) -> tuple[int, int]:
    """Return ``(RssAnon, RssFile)`` of a process in bytes, or zeros."""
    anon = file = 0
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
                elif line.startswith("RssFile:"):
                    file = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return anon, file


def _child_env() -> dict[str, str]:
    """Environment for the children.

    If ``streameval`` is not importable as installed, the repository's
    ``src`` directory is added to ``PYTHONPATH`` so the working tree is used.
    """
    env = dict(os.environ)
    if importlib.util.find_spec("streameval") is None and REPO_SRC.is_dir():
        parts = [str(REPO_SRC), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def run_child(name: str, data: str, scratch: Path, timeout: float, poll: float = 0.01) -> Outcome:
    """Run one contender once in a fresh child process.

    Parameters
    ----------
    name : str
        Contender name.
    data : str
        Data set root.
    scratch : Path
        Directory shared with the child for its outputs.
    timeout : float
        Seconds after which the child is killed.
    poll : float, default 0.01
        Seconds between two polls of the child's state and memory.

    Returns
    -------
    Outcome
        The measurements, or the error.
    """
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name]
    cmd += ["--data", data, "--scratch", str(scratch)]
    log = scratch / f"{name}.log"
    outcome = Outcome(name=name)
    outcome.parent_rss_bytes = _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_child_env())
        anon_max = file_max = 0
        timed_out = False
        while True:
            # Reap with wait4 ourselves: its rusage is this child's alone.
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            anon, file = _proc_rss(proc.pid)
            anon_max, file_max = max(anon_max, anon), max(file_max, file)
            if time.perf_counter() - t0 > timeout and not timed_out:
                os.kill(proc.pid, 9)
                timed_out = True
            time.sleep(poll)
        proc.returncode = os.waitstatus_to_exitcode(status)
    outcome.process_s = time.perf_counter() - t0
    outcome.peak_rss_bytes = _maxrss_bytes(usage.ru_maxrss)
    if anon_max:
        outcome.peak_anon_bytes, outcome.peak_file_bytes = anon_max, file_max
    summary_path = scratch / f"{name}.json"
    summary: dict[str, Any] = {}
    if summary_path.exists():
        summary = json.loads(summary_path.read_text())
        summary_path.unlink()
    if timed_out:
        outcome.error = f"timeout after {timeout:g} s"
    elif "error" in summary:
        outcome.error = summary["error"]
    elif proc.returncode != 0 or "wall_s" not in summary:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:]
        outcome.error = f"exit code {proc.returncode}" + (f": {tail[0]}" if tail else "")
    if outcome.error is None:
        outcome.wall_s = summary.pop("wall_s")
        outcome.import_rss_bytes = summary.pop("import_rss_bytes", None)
        summary.pop("name", None)
        outcome.info = summary
    return outcome


def run_contender(name: str, data: str, scratch: Path, repeat: int, timeout: float) -> Outcome:
    """Run a contender ``repeat`` times, each in a fresh process.

    Parameters
    ----------
    name : str
        Contender name.
    data : str
        Data set root.
    scratch : Path
        Scratch directory.
    repeat : int
        Number of runs.
    timeout : float
        Per-run timeout in seconds.

    Returns
    -------
    Outcome
        Minimum wall time and maximum peak RSS over the runs; the first error
        if any run failed.
    """
    best: Outcome | None = None
    for _ in range(repeat):
        out = run_child(name, data, scratch, timeout)
        if out.error is not None:
            return out
        if best is None:
            best = out
            continue
        if out.wall_s is not None and (best.wall_s is None or out.wall_s < best.wall_s):
            best.wall_s, best.process_s = out.wall_s, out.process_s
        for attr in (
            "parent_rss_bytes",
            "peak_rss_bytes",
            "import_rss_bytes",
            "peak_anon_bytes",
            "peak_file_bytes",
        ):
            values = [v for v in (getattr(best, attr), getattr(out, attr)) if v]
            setattr(best, attr, max(values) if values else None)
    assert best is not None
    return best


@dataclass
class Check:
    """Cross-check of one contender's AUCs.

    Attributes
    ----------
    groups : int or None
        Number of groups in its result.
    mean_auc : float or None
        Mean AUC over the groups with a finite AUC.
    max_diff : float or None
        Largest ``|AUC - reference AUC|`` over the groups where both are
        finite.
    reference : str or None
        Name of the reference contender.
    max_error : float or None
        Largest reported ``roc_auc_error``.
    problems : list of str
        Mismatches: missing groups, NaN in one result but not the other,
        differences from the reference larger than the reported
        ``roc_auc_error``.
    """

    groups: int | None = None
    mean_auc: float | None = None
    max_diff: float | None = None
    reference: str | None = None
    max_error: float | None = None
    problems: list[str] = field(default_factory=list)


def cross_check(outcomes: list[Outcome], scratch: Path) -> dict[str, Check]:
    """Compare the contenders' per-group AUCs.

    Each contender is compared with the first successful contender of
    :data:`REFERENCES` other than itself.

    Parameters
    ----------
    outcomes : list of Outcome
        Results of the runs.
    scratch : Path
        Directory holding ``NAME.parquet`` per-group results.

    Returns
    -------
    dict of str to Check
        One entry per contender that produced AUCs.
    """
    import polars as pl

    frames: dict[str, pl.DataFrame] = {}
    for out in outcomes:
        path = scratch / f"{out.name}.parquet"
        if out.error is None and path.exists():
            frames[out.name] = pl.read_parquet(path)
    checks: dict[str, Check] = {}
    for name, df in frames.items():
        auc = df["roc_auc"]
        finite = auc.filter(auc.is_finite())
        check = Check(groups=df.height)
        check.mean_auc = float(finite.mean()) if len(finite) else None  # type: ignore[arg-type]
        if "roc_auc_error" in df.columns:
            err = df["roc_auc_error"].drop_nulls().drop_nans()
            check.max_error = float(err.max()) if len(err) else None  # type: ignore[arg-type]
        ref = next((r for r in REFERENCES if r != name and r in frames), None)
        if ref is not None:
            check.reference = ref
            joined = df.join(
                frames[ref].select(*GROUP_BY, pl.col("roc_auc").alias("ref")),
                on=GROUP_BY,
                how="full",
                coalesce=True,
            )
            missing = joined.filter(pl.col("roc_auc").is_null()).height
            extra = joined.filter(pl.col("ref").is_null()).height
            both = joined.drop_nulls(["roc_auc", "ref"])
            a_nan = both["roc_auc"].is_nan()
            r_nan = both["ref"].is_nan()
            nan_mismatch = int((a_nan != r_nan).sum())
            ok = both.filter(~a_nan & ~r_nan)
            if ok.height:
                diff = (ok["roc_auc"] - ok["ref"]).abs()
                check.max_diff = float(diff.max())  # type: ignore[arg-type]
                if "roc_auc_error" in ok.columns:
                    # Tolerate float rounding of the AUCs themselves.
                    bound = ok["roc_auc_error"] + 1e-12
                    over = int((diff > bound).sum())
                    if over:
                        check.problems.append(
                            f"{over} groups off by more than roc_auc_error vs {ref}"
                        )
            if missing:
                check.problems.append(f"{missing} groups missing vs {ref}")
            if extra:
                check.problems.append(f"{extra} extra groups vs {ref}")
            if nan_mismatch:
                check.problems.append(f"{nan_mismatch} NaN mismatches vs {ref}")
        checks[name] = check
    return checks


def _mb(value: int | None, bound: int | None = None) -> str:
    if value is None:
        return "—"
    # At or below the parent's high-water mark, the value may be inherited.
    prefix = "≤" if bound is not None and value <= bound else ""
    return f"{prefix}{value / 2**20:,.0f}"


def _g(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def markdown_table(outcomes: list[Outcome], checks: dict[str, Check]) -> str:
    """Render the results as a Markdown table.

    Parameters
    ----------
    outcomes : list of Outcome
        Results of the runs, in display order.
    checks : dict of str to Check
        Cross-checks by contender name.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    floor = next((o for o in outcomes if o.name == "floor" and o.wall_s), None)
    header = [
        "contender",
        "wall s",
        "vs floor",
        "peak RSS MB",
        "peak anon MB",
        "after imports MB",
        "groups",
        "mean AUC",
        "max \\|ΔAUC\\|",
        "max roc_auc_error",
        "notes",
    ]
    rows = [header, ["---"] + ["---:"] * (len(header) - 2) + ["---"]]
    for out in outcomes:
        if out.error is not None:
            error = out.error.replace("|", "\\|").replace("\n", " ")
            if len(error) > 160:
                error = error[:157] + "..."
            rows.append([out.name, f"error: {error}"] + [""] * (len(header) - 2))
            continue
        check = checks.get(out.name, Check())
        ratio = (
            f"{out.wall_s / floor.wall_s:.1f}"
            if floor is not None and floor.wall_s and out.wall_s is not None
            else "—"
        )
        notes = [NOTES[out.name]]
        if out.name == "floor" and "rows" in out.info:
            notes.append(f"{out.info['rows']:,} rows")
        if "compiled" in out.info:
            notes.append(
                f"compiled loops loaded before timing ({out.info['warm_up_s']:.2f} s)"
                if out.info["compiled"]
                else "NumPy only (numba not installed)"
            )
        notes += check.problems
        diff = "—"
        if check.max_diff is not None:
            diff = f"{check.max_diff:.1e} (vs {check.reference})"
        groups = check.groups if check.groups is not None else out.info.get("groups")
        rows.append(
            [
                out.name,
                _g(out.wall_s, ".2f"),
                ratio,
                _mb(out.peak_rss_bytes, out.parent_rss_bytes),
                _mb(out.peak_anon_bytes),
                _mb(out.import_rss_bytes, out.parent_rss_bytes),
                "—" if groups is None else str(groups),
                _g(check.mean_auc, ".6f"),
                diff,
                _g(check.max_error, ".1e"),
                "; ".join(notes),
            ]
        )
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return pages / 2**30


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def describe_setup(
    data: str, rows: int, files: list[Path], repeat: int, outcomes: list[Outcome]
) -> str:
    """One line describing the machine, the data and the date.

    Parameters
    ----------
    data : str
        Data set root.
    rows : int
        Number of rows in the data set.
    files : list of Path
        Parquet files of the data set.
    repeat : int
        Runs per contender.
    outcomes : list of Outcome
        Results, used to find the streameval version actually loaded.

    Returns
    -------
    str
        The description.
    """
    size = sum(f.stat().st_size for f in files)
    se_version = next(
        (o.info["streameval"] for o in outcomes if "streameval" in o.info),
        _version("streameval"),
    )
    ram = _ram_gib()
    machine = f"{_cpu_model()}, {os.cpu_count()} cores"
    if ram is not None:
        machine += f", {ram:.0f} GiB RAM"
    versions = (
        f"Python {platform.python_version()}, polars {_version('polars')}, "
        f"streameval {se_version}, scikit-learn {_version('scikit-learn')}, "
        f"polars-ds {_version('polars_ds')}"
    )
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{rows:,} rows in {len(files)} Parquet files ({size / 2**20:,.0f} MiB); "
        f"{machine}; {platform.system()} {platform.release()}; {versions}; "
        f"best wall of {repeat} run(s), each in a fresh process; {when}."
    )


def update_readme(path: Path, text: str, marker: str = MARKER) -> bool:
    """Replace the text between the benchmark markers of a file.

    Parameters
    ----------
    path : Path
        File holding ``<!-- {marker}:start -->`` and ``<!-- {marker}:end -->``.
    text : str
        New text to put between them.
    marker : str
        Marker name, ``bench`` by default.

    Returns
    -------
    bool
        True if the file was updated; False (with a warning on stderr) if the
        file or the markers are missing.
    """
    if not path.is_file():
        print(f"warning: {path} not found; not updated", file=sys.stderr)
        return False
    mark_start, mark_end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    content = path.read_text(encoding="utf-8")
    start = content.find(mark_start)
    end = content.find(mark_end, start + len(mark_start)) if start >= 0 else -1
    if start < 0 or end < 0:
        print(
            f"warning: {path} lacks {mark_start} ... {mark_end}; not updated",
            file=sys.stderr,
        )
        return False
    head = content[: start + len(mark_start)]
    path.write_text(f"{head}\n{text}\n{content[end:]}", encoding="utf-8")
    return True


def _parquet_files(data: str) -> list[Path]:
    root = Path(data)
    if root.is_dir():
        return sorted(root.rglob("*.parquet"))
    return sorted(Path(p) for p in glob.glob(data, recursive=True))


def _warm_cache(files: list[Path]) -> None:
    """Read every file once so all contenders see a warm page cache."""
    for path in files:
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass


def _generate(args: argparse.Namespace) -> int:
    """Generate the data set by running ``generate.py`` in a child process.

    A child keeps the generator's memory out of this process: on Linux a
    process's ``ru_maxrss`` starts from its parent's high-water mark at
    fork, so a heavy parent would inflate every contender's peak RSS.
    """
    cmd = [sys.executable, str(HERE / "generate.py"), "--out", args.data]
    cmd += ["--rows", str(args.rows), "--segments", str(args.segments)]
    cmd += ["--days", str(args.days), "--seed", str(args.seed)]
    return subprocess.run(cmd, check=False).returncode


def _parse_only(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = sorted(set(names) - set(CONTENDERS))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown contender(s) {', '.join(unknown)}; choose from {', '.join(CONTENDERS)}"
        )
    # Keep the canonical order: floor first, so ratios are always available.
    return [c for c in CONTENDERS if c in names]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark per-segment ROC AUC contenders on Parquet logs."
    )
    parser.add_argument("--data", required=True, help="data set root (or glob)")
    parser.add_argument(
        "--rows", type=int, help="generate this many rows into --data if it is empty"
    )
    parser.add_argument("--segments", type=int, default=100, help="when generating")
    parser.add_argument("--days", type=int, default=30, help="when generating")
    parser.add_argument("--seed", type=int, default=0, help="when generating")
    parser.add_argument(
        "--only",
        type=_parse_only,
        default=list(CONTENDERS),
        help=f"comma-separated subset of {','.join(CONTENDERS)}",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per contender (best wall kept)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run before kill")
    parser.add_argument("--readme", type=Path, help="file whose bench markers receive the table")
    parser.add_argument("--json", type=Path, help="also write raw results as JSON")
    parser.add_argument("--no-warm", action="store_true", help="do not pre-read the files")
    parser.add_argument("--worker", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
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
        Process exit code (0 even when contenders failed: they are reported).
    """
    args = _parse_args(argv)
    if args.worker is not None:
        return worker(args.worker, args.data, args.scratch)

    # Until every contender has run, this process stays light (standard
    # library only, no polars): see `_generate` on inherited ru_maxrss.
    files = _parquet_files(args.data)
    if not files:
        if args.rows is None:
            print(f"error: no Parquet files under {args.data}; pass --rows N")
            return 2
        print(f"generating {args.rows:,} rows into {args.data} ...", flush=True)
        if _generate(args) != 0:
            return 2
        files = _parquet_files(args.data)
    if not args.no_warm:
        _warm_cache(files)

    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="se_bench_") as tmp:
        scratch = Path(tmp)
        for name in args.only:
            print(f"running {name} ...", flush=True)
            out = run_contender(name, args.data, scratch, args.repeat, args.timeout)
            status = out.error or f"{out.wall_s:.2f} s"
            print(f"  {name}: {status}", flush=True)
            outcomes.append(out)
        checks = cross_check(outcomes, scratch)

    import polars as pl

    rows = pl.scan_parquet(args.data, hive_partitioning=True).select(pl.len())
    n_rows = int(rows.collect().item())
    table = markdown_table(outcomes, checks)
    setup = describe_setup(args.data, n_rows, files, args.repeat, outcomes)
    print()
    print(table)
    print()
    print(setup)
    if args.readme is not None and update_readme(args.readme, f"{table}\n\n{setup}"):
        print(f"updated {args.readme}")
    if args.json is not None:
        payload = {
            "setup": setup,
            "rows": n_rows,
            "outcomes": [asdict(o) for o in outcomes],
            "checks": {k: asdict(v) for k, v in checks.items()},
        }
        args.json.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
