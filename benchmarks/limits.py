"""Limits: memory at high cardinality, exact-mode memory per distinct score, content hashing.

Three measurements for the README's limits, on data this script generates itself (Parquet
written with polars from a fixed numpy seed) into a temporary folder:

cardinality
    1e7 rows, 1e6 distinct segments (10 rows each; Int64 ``segment`` and String ``"s{i}"``),
    int8 ``label`` with about 10 % prevalence, uniform float64 ``score``.
    ``se.evaluate(path, label="label", score="score", by=["segment"])`` at the default
    precision against the bare Polars baseline ``pl.scan_parquet(path).group_by("segment")
    .agg(pl.len(), pl.col("label").sum(), pl.col("score").sum()).collect()``.
exact
    ``se.evaluate(path, label="label", score="score", precision="exact")`` (no ``by``) on
    1e6, 4e6 and 1.6e7 rows of distinct random float64 scores, and the same at the default
    precision. The slope of peak RSS against rows is the memory per distinct score.
hash
    ``streameval.jobs.partitions.content_hash`` (what ``fingerprint = "content"`` costs per
    source file) over 8 Parquet files of about 256 MB of random float64 columns, with a warm
    page cache and a cold one (``echo 3 > /proc/sys/vm/drop_caches``; when that is refused,
    ``posix_fadvise(DONTNEED)`` on each file), against a plain read in the same 1 MiB blocks.

Every evaluation and baseline runs in a fresh child process (this script re-invoked with
``--worker``); its peak RSS is the child's ``ru_maxrss`` from :func:`os.wait4`, as in
``run.py``. The parent imports nothing heavy and generates the data in children too, since a
child's ``ru_maxrss`` starts from its parent's high-water mark.

Usage::

    python benchmarks/limits.py
    python benchmarks/limits.py --only exact,hash --data /tmp/se_limits --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import (  # noqa: E402
    _child_env,
    _cpu_model,
    _maxrss_bytes,
    _mb,
    _proc_rss,
    _ram_gib,
    _version,
)

SECTIONS: tuple[str, ...] = ("cardinality", "exact", "hash")
SEED = 0
BLOCK = 1 << 20  # content_hash reads 1 MiB blocks; the plain read does the same
CARD_ROWS = 10_000_000
CARD_SEGMENTS = 1_000_000
EXACT_ROWS: tuple[int, ...] = (1_000_000, 4_000_000, 16_000_000)
HASH_FILES = 8
HASH_ROWS = 8_388_608  # 4 float64 columns: 256 MiB of values per file
HASH_PASSES = 3
PREVALENCE = 0.1
ROW_GROUP_SIZE = 1_000_000


# --------------------------------------------------------------------------
# Workers (run inside the child process); each returns a dict printed as JSON
# --------------------------------------------------------------------------


def _rss_now() -> int:
    return _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _write(df: Any, path: Path) -> int:
    """Write a frame as zstd Parquet through a temporary name; return its size."""
    tmp = path.with_suffix(".parquet.tmp")
    df.write_parquet(tmp, compression="zstd", row_group_size=ROW_GROUP_SIZE)
    tmp.replace(path)
    return path.stat().st_size


def gen_cardinality(p: dict[str, Any]) -> dict[str, Any]:
    """Write ``card_int.parquet`` and ``card_str.parquet`` (same rows, two key types)."""
    import numpy as np
    import polars as pl

    rows, segments = p["rows"], p["segments"]
    rng = np.random.default_rng([SEED, 1])
    # Exactly `segments` distinct keys, rows // segments rows each, in random order.
    segment = rng.permutation(np.arange(rows, dtype=np.int64) % segments)
    label = (rng.random(rows) < PREVALENCE).astype(np.int8)
    score = rng.random(rows)
    df = pl.DataFrame({"segment": segment, "label": label, "score": score})
    sizes = {"int": _write(df, Path(p["int"]))}
    df = df.with_columns(pl.format("s{}", pl.col("segment")).alias("segment"))
    sizes["str"] = _write(df, Path(p["str"]))
    return {"sizes": sizes, "distinct": int(df["segment"].n_unique())}


def gen_exact(p: dict[str, Any]) -> dict[str, Any]:
    """Write one file per row count with distinct random float64 scores."""
    import numpy as np
    import polars as pl

    distinct = {}
    for rows, path in zip(p["rows"], p["paths"], strict=True):
        rng = np.random.default_rng([SEED, 2, rows])
        label = (rng.random(rows) < PREVALENCE).astype(np.int8)
        score = rng.random(rows)
        df = pl.DataFrame({"label": label, "score": score})
        _write(df, Path(path))
        distinct[str(rows)] = int(df["score"].n_unique())
        del df, label, score
    return {"distinct": distinct}


def gen_hash(p: dict[str, Any]) -> dict[str, Any]:
    """Write files of random float64 columns (which zstd barely compresses)."""
    import numpy as np
    import polars as pl

    sizes = []
    for i, path in enumerate(p["paths"]):
        rng = np.random.default_rng([SEED, 3, i])
        df = pl.DataFrame({f"x{j}": rng.random(p["rows"]) for j in range(4)})
        sizes.append(_write(df, Path(path)))
        del df
    return {"sizes": sizes}


def work_evaluate(p: dict[str, Any]) -> dict[str, Any]:
    """Time ``se.evaluate`` (after its imports and numba's warm-up)."""
    import polars as pl

    import streameval as se
    from streameval.kernels.compiled import loops
    from streameval.local import warm

    warmed = warm()
    info: dict[str, Any] = {"import_rss_bytes": _rss_now(), "warm_up_s": warmed}
    kwargs: dict[str, Any] = {}
    if p.get("by"):
        kwargs["by"] = p["by"]
    if p.get("precision") is not None:
        kwargs["precision"] = p["precision"]
    t0 = time.perf_counter()
    out = se.evaluate(p["path"], label="label", score="score", **kwargs)
    if isinstance(out, pl.LazyFrame):
        out = out.collect()
    info["wall_s"] = time.perf_counter() - t0
    info["groups"] = out.height
    info["compiled"] = loops() is not None
    info["streameval"] = getattr(se, "__version__", "?")
    return info


def work_baseline(p: dict[str, Any]) -> dict[str, Any]:
    """Time the bare Polars group-by (reading and grouping, no AUC)."""
    import polars as pl

    info: dict[str, Any] = {"import_rss_bytes": _rss_now()}
    t0 = time.perf_counter()
    out = (
        pl.scan_parquet(p["path"])
        .group_by("segment")
        .agg(pl.len(), pl.col("label").sum(), pl.col("score").sum())
        .collect()
    )
    info["wall_s"] = time.perf_counter() - t0
    info["groups"] = out.height
    info["rows"] = int(out["len"].sum())
    return info


def _read_all(files: list[str]) -> int:
    """Read the files in 1 MiB blocks, as ``content_hash`` does, without hashing."""
    total = 0
    for path in files:
        with open(path, "rb") as f:
            while block := f.read(BLOCK):
                total += len(block)
    return total


def work_hash(p: dict[str, Any]) -> dict[str, Any]:
    """Time passes of a plain read and of ``content_hash`` over the files.

    ``p["kinds"]`` lists the passes in order (``read``, ``hash``, ``memory``); ``p["warm"]``
    reads every file once, untimed, first.
    """
    import hashlib

    from streameval.jobs.partitions import content_hash

    files: list[str] = p["files"]
    size = sum(os.path.getsize(f) for f in files)
    if p["warm"]:
        _read_all(files)
    times: dict[str, list[float]] = {}
    digests: list[str] = []
    for kind in p["kinds"]:
        t0 = time.perf_counter()
        if kind == "read":
            n = _read_all(files)
            assert n == size, (n, size)
        elif kind == "hash":
            digests = [content_hash(f) for f in files]
        else:
            # SHA-256 alone: one 1 MiB block (in the CPU cache) hashed as often as the files
            # hold blocks, so no I/O or memory copy at all.
            block = os.urandom(BLOCK)
            t0 = time.perf_counter()
            h = hashlib.sha256()
            for _ in range(size // BLOCK):
                h.update(block)
        times.setdefault(kind, []).append(time.perf_counter() - t0)
    return {
        "bytes": size,
        "memory_bytes": size // BLOCK * BLOCK,
        "times": times,
        "digest0": digests[:1],
    }


WORKERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "gen_cardinality": gen_cardinality,
    "gen_exact": gen_exact,
    "gen_hash": gen_hash,
    "evaluate": work_evaluate,
    "baseline": work_baseline,
    "hash": work_hash,
}


def worker(name: str, params: str) -> int:
    """Run one worker and print its result as the last line of stdout."""
    try:
        result = WORKERS[name](json.loads(params))
        code = 0
    except Exception as exc:
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"}
        code = 1
    print(json.dumps(result), flush=True)
    return code


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------


@dataclass
class Run:
    """One child process: its result and its memory.

    Attributes
    ----------
    result : dict
        What the worker printed (``error`` when it failed).
    process_s : float
        Wall time of the whole child, interpreter start and imports included.
    peak_rss_bytes : int or None
        ``ru_maxrss`` of the child from ``os.wait4``.
    peak_anon_bytes : int or None
        Largest ``RssAnon`` seen polling ``/proc/PID/status`` every 10 ms.
    parent_rss_bytes : int
        This process's ``ru_maxrss`` when the child started (a child's peak at or below it
        may be inherited, and is printed as ``≤N``).
    """

    result: dict[str, Any] = field(default_factory=dict)
    process_s: float = 0.0
    peak_rss_bytes: int | None = None
    peak_anon_bytes: int | None = None
    parent_rss_bytes: int = 0

    @property
    def error(self) -> str | None:
        """Why the child failed, if it did."""
        return self.result.get("error")


def spawn(name: str, params: dict[str, Any], log: Path, timeout: float) -> Run:
    """Run a worker in a fresh child process, reaped with ``os.wait4``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name]
    cmd += ["--params", json.dumps(params)]
    run = Run(parent_rss_bytes=_rss_now())
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_child_env())
        anon_max = 0
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            anon_max = max(anon_max, _proc_rss(proc.pid)[0])
            if time.perf_counter() - t0 > timeout and not killed:
                os.kill(proc.pid, 9)
                killed = True
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
    run.process_s = time.perf_counter() - t0
    run.peak_rss_bytes = _maxrss_bytes(usage.ru_maxrss)
    run.peak_anon_bytes = anon_max or None
    lines = log.read_text(errors="replace").strip().splitlines()
    last = lines[-1] if lines else ""
    try:
        run.result = json.loads(last)
    except json.JSONDecodeError:
        run.result = {"error": f"exit code {proc.returncode}: {last[:200]}"}
    if killed:
        run.result = {"error": f"timeout after {timeout:g} s"}
    return run


def loadavg() -> str:
    """The 1-, 5- and 15-minute load averages."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "?"


def machine() -> str:
    """CPU model, ``nproc``, RAM, kernel and versions, for the footers."""
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    ram = _ram_gib()
    text = f"{_cpu_model()}, nproc {nproc}"
    if ram is not None:
        text += f", {ram:.0f} GiB RAM"
    return (
        f"{text}; {platform.system()} {platform.release()}; Python {platform.python_version()}, "
        f"polars {_version('polars')}, numpy {_version('numpy')}, "
        f"streameval {_version('streameval')}"
    )


def drop_caches(files: list[str]) -> str:
    """Evict the files from the page cache; return how (or why not)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as fh:
            fh.write("3\n")
        return "drop_caches"
    except OSError as exc:
        refused = f"{type(exc).__name__}: {exc.strerror}"
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return f"posix_fadvise DONTNEED (drop_caches refused: {refused})"


def resident_bytes(files: list[str]) -> int | None:
    """Bytes of the files in the page cache, from ``fincore`` (None without it)."""
    if shutil.which("fincore") is None:
        return None
    cmd = ["fincore", "--bytes", "--noheadings", "--output", "RES", *files]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    return sum(int(v) for v in out.stdout.split())


class Bench:
    """Runs the sections and collects their tables."""

    def __init__(self, data: Path, scratch: Path, repeat: int, timeout: float) -> None:
        self.data, self.scratch = data, scratch
        self.repeat, self.timeout = repeat, timeout
        self.count = 0

    def child(self, name: str, params: dict[str, Any]) -> Run:
        """Run one worker; on failure print its log's tail."""
        self.count += 1
        log = self.scratch / f"{self.count:03d}-{name}.log"
        run = spawn(name, params, log, self.timeout)
        if run.error:
            tail = log.read_text(errors="replace").strip().splitlines()[-15:]
            print(f"  {name} failed: {run.error}\n    " + "\n    ".join(tail), flush=True)
        return run

    def best(self, name: str, params: dict[str, Any]) -> Run:
        """Run a worker ``repeat`` times: best wall time, largest peak RSS."""
        best: Run | None = None
        for _ in range(self.repeat):
            run = self.child(name, params)
            if run.error:
                return run
            if best is None:
                best = run
                continue
            if run.result["wall_s"] < best.result["wall_s"]:
                best.result["wall_s"] = run.result["wall_s"]
            for attr in ("peak_rss_bytes", "peak_anon_bytes", "parent_rss_bytes"):
                values = [v for v in (getattr(best, attr), getattr(run, attr)) if v]
                setattr(best, attr, max(values) if values else None)
        assert best is not None
        return best

    def generate(self, name: str, params: dict[str, Any], paths: list[Path]) -> dict[str, Any]:
        """Generate files in a child unless they all exist already."""
        if all(p.exists() for p in paths):
            return {}
        print(f"  generating {', '.join(p.name for p in paths)} ...", flush=True)
        t0 = time.perf_counter()
        run = self.child(name, params)
        if run.error:
            raise RuntimeError(f"{name}: {run.error}")
        print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
        return run.result

    # -- section 1 ---------------------------------------------------------

    def cardinality(self) -> str:
        """High cardinality: 1e6 segments over 1e7 rows, Int64 and String keys."""
        paths = {"int": self.data / "card_int.parquet", "str": self.data / "card_str.parquet"}
        params = {"rows": CARD_ROWS, "segments": CARD_SEGMENTS}
        params |= {k: str(v) for k, v in paths.items()}
        self.generate("gen_cardinality", params, list(paths.values()))
        header = [
            "segment",
            "contender",
            "wall s",
            "vs baseline",
            "peak RSS MB",
            "vs baseline",
            "peak anon MB",
            "after imports MB",
            "groups",
        ]
        rows = [header, ["---", "---"] + ["---:"] * (len(header) - 2)]
        for key, dtype in (("int", "Int64"), ("str", "String")):
            path = str(paths[key])
            base: Run | None = None
            for label, name, p in (
                ("Polars baseline", "baseline", {"path": path}),
                ("se.evaluate", "evaluate", {"path": path, "by": ["segment"]}),
            ):
                print(f"  {dtype} {label} ...", flush=True)
                run = self.best(name, p)
                if run.error:
                    rows.append([dtype, label, f"error: {run.error[:150]}"] + [""] * 6)
                    continue
                r = run.result
                wall_ratio = rss_ratio = "—"
                if name == "baseline":
                    base = run
                elif base is not None:
                    wall_ratio = f"{r['wall_s'] / base.result['wall_s']:.1f}×"
                    if run.peak_rss_bytes and base.peak_rss_bytes:
                        rss_ratio = f"{run.peak_rss_bytes / base.peak_rss_bytes:.1f}×"
                print(f"    {r['wall_s']:.2f} s, {_mb(run.peak_rss_bytes)} MB", flush=True)
                rows.append(
                    [
                        dtype,
                        label,
                        f"{r['wall_s']:.2f}",
                        wall_ratio,
                        _mb(run.peak_rss_bytes, run.parent_rss_bytes),
                        rss_ratio,
                        _mb(run.peak_anon_bytes),
                        _mb(r.get("import_rss_bytes"), run.parent_rss_bytes),
                        f"{r['groups']:,}",
                    ]
                )
        table = "\n".join("| " + " | ".join(r) + " |" for r in rows)
        sizes = ", ".join(f"{k} {v.stat().st_size / 2**20:,.0f} MiB" for k, v in paths.items())
        note = (
            f"{CARD_ROWS:,} rows, {CARD_SEGMENTS:,} segments of {CARD_ROWS // CARD_SEGMENTS} "
            f"rows, label prevalence {PREVALENCE:.0%}, uniform float64 scores; one Parquet "
            f"file per key type (zstd, {ROW_GROUP_SIZE:,}-row groups: {sizes}). "
            '`se.evaluate(path, label="label", score="score", by=["segment"])` at the '
            'default precision; baseline `pl.scan_parquet(path).group_by("segment")'
            '.agg(pl.len(), pl.col("label").sum(), pl.col("score").sum()).collect()`. '
            f"Wall time of the work alone (after imports; best of {self.repeat}), peak RSS "
            "the child's ru_maxrss (largest of the runs), each run in a fresh process, "
            "warm page cache."
        )
        return f"{table}\n\n{note}"

    # -- section 2 ---------------------------------------------------------

    def exact(self) -> str:
        """Exact-mode memory per distinct score: peak RSS against rows."""
        paths = [self.data / f"exact_{n}.parquet" for n in EXACT_ROWS]
        params = {"rows": list(EXACT_ROWS), "paths": [str(p) for p in paths]}
        gen = self.generate("gen_exact", params, paths)
        header = [
            "precision",
            "rows",
            "distinct scores",
            "wall s",
            "peak RSS MB",
            "peak anon MB",
            "after imports MB",
            "exact / default RSS",
        ]
        rows = [header, ["---"] + ["---:"] * (len(header) - 1)]
        peaks: dict[str, list[int | None]] = {}
        for precision in ("exact", None):
            shown = "exact" if precision else "default"
            peaks[shown] = []
            for n, path in zip(EXACT_ROWS, paths, strict=True):
                print(f"  {shown} {n:,} rows ...", flush=True)
                run = self.best("evaluate", {"path": str(path), "precision": precision})
                peaks[shown].append(None if run.error else run.peak_rss_bytes)
                distinct = gen.get("distinct", {}).get(str(n))
                distinct_s = "—" if distinct is None else f"{distinct:,}"
                if run.error:
                    rows.append([shown, f"{n:,}", distinct_s, f"error: {run.error[:150]}"])
                    rows[-1] += [""] * (len(header) - len(rows[-1]))
                    continue
                r = run.result
                print(f"    {r['wall_s']:.2f} s, {_mb(run.peak_rss_bytes)} MB", flush=True)
                rows.append(
                    [
                        shown,
                        f"{n:,}",
                        distinct_s,
                        f"{r['wall_s']:.2f}",
                        _mb(run.peak_rss_bytes, run.parent_rss_bytes),
                        _mb(run.peak_anon_bytes),
                        _mb(r.get("import_rss_bytes"), run.parent_rss_bytes),
                        "",
                    ]
                )
        # Ratios exact / default per row count, filled once both are known.
        for i in range(len(EXACT_ROWS)):
            e, d = peaks["exact"][i], peaks["default"][i]
            if e and d:
                rows[2 + i][-1] = f"{e / d:.1f}×"
        table = "\n".join("| " + " | ".join(r) + " |" for r in rows)

        def slope(values: list[int | None], i: int, j: int) -> str:
            a, b = values[i], values[j]
            if a is None or b is None:
                return "—"
            return f"{(b - a) / (EXACT_ROWS[j] - EXACT_ROWS[i]):.0f}"

        spans = [(0, 2), (0, 1), (1, 2)]
        lines = [
            "| precision | "
            + " | ".join(f"{_sci(EXACT_ROWS[i])} → {_sci(EXACT_ROWS[j])}" for i, j in spans)
            + " |"
        ]
        lines.append("| --- |" + " ---: |" * len(spans))
        for shown, values in peaks.items():
            cells = [f"{slope(values, i, j)} B" for i, j in spans]
            lines.append(f"| {shown} | " + " | ".join(cells) + " |")
        slopes = "\n".join(lines)
        note = (
            "Slope of peak RSS against rows, in bytes per distinct score "
            "(difference of peak RSS divided by the difference of row counts):\n\n"
            f"{slopes}\n\n"
            '`se.evaluate(path, label="label", score="score", precision=...)` with no `by`, one '
            f"Parquet file per row count (zstd), label prevalence {PREVALENCE:.0%}, uniform "
            "float64 scores (rng.random, all distinct: see the column). Wall time of the work "
            f"alone (best of {self.repeat}), peak RSS the child's ru_maxrss (largest of the "
            "runs), each run in a fresh process."
        )
        return f"{table}\n\n{note}"

    # -- section 3 ---------------------------------------------------------

    def hash(self) -> str:
        """Cost of ``content_hash`` per GB, warm and cold page cache."""
        paths = [self.data / f"hash_{i}.parquet" for i in range(HASH_FILES)]
        params = {"rows": HASH_ROWS, "paths": [str(p) for p in paths]}
        self.generate("gen_hash", params, paths)
        files = [str(p) for p in paths]
        size = sum(p.stat().st_size for p in paths)
        gb = size / 1e9

        print("  warm ...", flush=True)
        kinds = ["read", "hash", "memory"] * HASH_PASSES
        warm = self.child("hash", {"files": files, "warm": True, "kinds": kinds})
        cold: dict[str, list[float]] = {"read": [], "hash": []}
        methods: set[str] = set()
        resident: list[int] = []
        cold_error = None
        for _ in range(HASH_PASSES):
            for kind in ("hash", "read"):
                print(f"  cold {kind} ...", flush=True)
                methods.add(drop_caches(files))
                res = resident_bytes(files)
                if res is not None:
                    resident.append(res)
                run = self.child("hash", {"files": files, "warm": False, "kinds": [kind]})
                if run.error:
                    cold_error = run.error
                    break
                cold[kind] += run.result["times"][kind]

        header = ["pass", "page cache", "GB", "s (best)", "s (worst)", "s per GB", "GB/s"]
        header.append("vs plain read")
        rows = [header, ["---", "---"] + ["---:"] * (len(header) - 2)]

        def add(label: str, cache: str, times: list[float], nbytes: int, base: float | None):
            if not times:
                rows.append([label, cache, "—", "—", "—", "—", "—", "—"])
                return None
            t = min(times)
            g = nbytes / 1e9
            ratio = "—" if base is None else f"{t / base:.2f}×"
            cells = [f"{g:.2f}", f"{t:.2f}", f"{max(times):.2f}", f"{t / g:.3f}", f"{g / t:.2f}"]
            rows.append([label, cache, *cells, ratio])
            return t

        if warm.error:
            rows.append(["warm passes", "warm", f"error: {warm.error[:150]}"] + [""] * 5)
        else:
            wt = warm.result["times"]
            base = add("plain read, 1 MiB blocks", "warm", wt["read"], size, None)
            add("content_hash", "warm", wt["hash"], size, base)
            add(
                "hashlib.sha256 alone (1 MiB block in cache)",
                "—",
                wt["memory"],
                warm.result["memory_bytes"],
                None,
            )
        base = add("plain read, 1 MiB blocks", "cold", cold["read"], size, None)
        add("content_hash", "cold", cold["hash"], size, base)
        table = "\n".join("| " + " | ".join(r) + " |" for r in rows)
        how = "; ".join(sorted(methods)) or "—"
        res = (
            "not checked (no fincore)"
            if not resident
            else f"at most {max(resident) / 2**20:,.1f} MiB of the files resident before a "
            "cold pass (fincore)"
        )
        note = (
            f"`streameval.jobs.partitions.content_hash(path)` over {HASH_FILES} Parquet files "
            f"of 4 random float64 columns × {HASH_ROWS:,} rows (zstd), {gb:.2f} GB in all "
            f"({size / HASH_FILES / 1e6:.0f} MB a file); the plain read uses the same 1 MiB "
            f"blocks without hashing. Best and worst of {HASH_PASSES} passes; s per GB from "
            "the best. Warm: files read once before, all passes in one process. Cold: "
            f"evicted before each pass with {how}, {res}; each pass in a fresh process. "
            "The disk is a virtual one (/dev/vda): a cold read in the guest may still be "
            "served from the host's cache."
        )
        if cold_error:
            note += f" Cold passes stopped: {cold_error}."
        return f"{table}\n\n{note}"


def _sci(n: int) -> str:
    """``16_000_000`` as ``1.6e7``."""
    e = len(str(n)) - 1
    return f"{n / 10**e:g}e{e}"


def _parse_only(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}"
        )
    return [s for s in SECTIONS if s in names]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        type=_parse_only,
        default=list(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)}",
    )
    parser.add_argument(
        "--data", type=Path, help="keep the generated data here (default: a temporary folder)"
    )
    parser.add_argument("--repeat", type=int, default=2, help="runs per evaluation (best wall)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per child")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--params", default="{}", help=argparse.SUPPRESS)
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
        Process exit code (0 even when a measurement failed: it is reported).
    """
    args = _parse_args(argv)
    if args.worker is not None:
        return worker(args.worker, args.params)

    rel = os.path.relpath(Path(__file__).resolve(), Path.cwd())
    command = shlex.join(["python", rel, *(sys.argv[1:] if argv is None else argv)])
    load_start = loadavg()
    print(f"load average at start: {load_start}", flush=True)
    results: list[tuple[str, str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="se_limits_") as tmp:
        data = args.data if args.data is not None else Path(tmp) / "data"
        data.mkdir(parents=True, exist_ok=True)
        scratch = Path(tmp) / "logs"
        scratch.mkdir()
        bench = Bench(data, scratch, args.repeat, args.timeout)
        for section in args.only:
            print(f"{section} ...", flush=True)
            before = loadavg()
            start = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            text = getattr(bench, section)()
            results.append((section, text, start, before, loadavg()))
    load_end = loadavg()
    titles = {
        "cardinality": "Memory at high cardinality",
        "exact": "Exact-mode memory per distinct score",
        "hash": 'Cost of fingerprint = "content" (content_hash)',
    }
    where = machine()
    for section, text, start, before, after in results:
        print()
        print(f"**{titles[section]}**")
        print()
        print(text)
        print()
        print(
            f"Command: `{command}`; measured {start}; {where}; load average (1, 5, 15 min) "
            f"{before} before this section, {after} after (whole run: {load_start} at the "
            f"start, {load_end} at the end)."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
