"""Crash safety: runs killed with SIGKILL at random moments, then completed by a normal run.

Every completed run must leave exactly the outputs of an uninterrupted run — its metric
tables byte for byte (the job is exact-mode binary, so every sum is an integer and any
double-counted or lost partition would show), its checks table with the same rows and
statuses (their standard errors to 1e-12) — a store holding only the files its manifest
names, no temporary files and no lock.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from jobs_support import ENV, tree, write_day, write_job
from polars.testing import assert_frame_equal

from streameval.jobs import run_job


def stage(store: Path, days: int) -> str:
    """Where a killed run stopped, read from what it left in its store."""
    try:
        manifest = json.loads((store / "manifest.json").read_text())
    except FileNotFoundError:
        return "before the first state"
    done = len(manifest["partitions"])
    if done < days:
        return "states" if done else "before the first state"
    if len(manifest["rollups"]) < days or not manifest.get("running"):
        return "rollups"
    if len(manifest.get("checks", {})) < days:
        return "checks"
    if len(manifest.get("outputs", {})) < 3:
        return "outputs"
    return "cleanup or finished"


def leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


def start(job: Path, *flags: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "streameval", "run", str(job), "--quiet", *flags],
        env=ENV,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill(proc: subprocess.Popen[bytes], delay: float) -> bool:
    """SIGKILL the run's process group after ``delay`` s; False if it had already finished."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def check_store(store: Path) -> None:
    manifest = json.loads((store / "manifest.json").read_text())
    named = {e["state"] for e in manifest["partitions"].values()}
    named |= {e["file"] for e in manifest["rollups"].values()}
    named |= {e["file"] for e in manifest["checks"].values()}
    named |= set(manifest["running"]["files"].values())
    named |= {e["file"] for e in manifest.get("aggregates", {}).values()}
    files = {str(p.relative_to(store)) for p in store.rglob("*.parquet")}
    assert files == named, "orphaned or missing store files"
    assert not (store / "LOCK").exists()


WEIGHTED = ('precision = "exact"', 'weight = "weight"')  # default precision, float sums


#: Checks the killed runs judge too: their rows are an output, their files in the store.
CHECKS = (
    '\n[checking]\noutput = "out/checks"\n\n[[checks]]\nmetric = "roc_auc"\nmin = 0.2\n'
    'max_drop = 0.3\nbaseline = "history"\ndays = 3\nsignificance = 0.05\nseverity = "warn"\n'
)


def job_in(folder: Path, source: Path, edit: tuple[str, str] | None = None) -> Path:
    job = write_job(folder, source)
    job.write_text(job.read_text() + CHECKS)
    if edit:
        job.write_text(job.read_text().replace(*edit))
    return job


def same_outputs(got: dict[str, bytes], expected: dict[str, bytes], exact: bool) -> None:
    """Outputs equal byte for byte, or (float sums) as tables to 1e-9.

    The checks table is compared as a table even in exact mode: its standard errors are
    DeLong's variances, floating-point sums whose last bits Polars' parallel sums may
    change between two computations (its statuses and every count are compared exactly).
    """
    assert sorted(got) == sorted(expected), "output files differ"
    if exact:
        metrics = [n for n in expected if not n.startswith("checks/")]
        assert {n: got[n] for n in metrics} == {n: expected[n] for n in metrics}, "outputs differ"
        for name in [n for n in expected if n.startswith("checks/")]:
            ours, theirs = pl.read_parquet(got[name]), pl.read_parquet(expected[name])
            assert_frame_equal(ours, theirs, rel_tol=1e-12, abs_tol=1e-15)
            assert ours["status"].to_list() == theirs["status"].to_list()
        return
    for name, data in expected.items():
        read = pl.read_csv if name.endswith(".csv") else pl.read_parquet
        assert_frame_equal(read(got[name]), read(data), rel_tol=1e-9, abs_tol=1e-12)


def reference(
    root: Path, days: int, edit: tuple[str, str] | None = None
) -> tuple[Path, dict[str, bytes], float, float]:
    """An uninterrupted run: its outputs, when it first wrote its store, when it finished."""
    source = root / "preds"
    for d in range(days):
        write_day(source, "binary", d, 40, parts=2 if d % 5 == 0 else 1)
    job = job_in(root / "reference", source, edit)
    tick = time.monotonic()
    proc, first = start(job), None
    while proc.poll() is None:
        if first is None and (root / "reference" / "store" / "manifest.json").exists():
            first = time.monotonic() - tick
        time.sleep(0.01)
    assert proc.returncode == 0
    duration = time.monotonic() - tick
    return source, tree(root / "reference" / "out"), first or duration / 2, duration


def kill_loop(root: Path, trials: int, days: int, edit: tuple[str, str] | None = None) -> None:
    """``trials`` runs killed at moments spread over a run, each then completed and checked."""
    source, expected, first, duration = reference(root, days, edit)
    rng = random.Random(20261001)
    stages: Counter[str] = Counter()
    killed = attempt = 0
    while killed < trials and attempt < 3 * trials:
        folder = root / f"trial-{attempt}"
        job = job_in(folder, source, edit)
        for again in range(2 if attempt % 6 == 5 else 1):  # some are killed twice, then completed
            # spread the kill times from just before the first store write to the run's end
            begin = 0.8 * first
            delay = begin + (duration - begin) * (killed + rng.random()) / trials
            tick = time.monotonic()
            if kill(start(job), delay):
                killed += 1
                stages[stage(folder / "store", days)] += 1
                if leftovers(folder):
                    stages["temporary files left"] += 1
            else:
                if not again:  # a whole run was faster than the reference: aim earlier
                    duration = time.monotonic() - tick
                stages["finished before the kill"] += 1
        run_job(job, quiet=True)
        same_outputs(tree(folder / "out"), expected, exact=edit is None)
        assert not leftovers(folder), f"attempt {attempt}: temporary files left"
        check_store(folder / "store")
        attempt += 1
    print(f"kill stages over {attempt} attempts (run of {duration:.1f} s): {dict(stages)}")
    assert killed >= trials
    hit = {
        "before the first state",
        "states",
        "rollups",
        "checks",
        "outputs",
        "cleanup or finished",
    }
    assert len(hit & set(stages)) >= 2, stages


def test_runs_killed_at_random_moments_converge_to_the_uninterrupted_result(tmp_path):
    kill_loop(tmp_path, trials=8, days=16)  # (the slow test below kills 60 times)


@pytest.mark.slow
def test_many_more_kills_on_a_longer_job(tmp_path):
    kill_loop(tmp_path, trials=60, days=48)


def test_a_weighted_default_precision_job_killed_at_random_moments_converges(tmp_path):
    kill_loop(tmp_path, trials=4, days=10, edit=WEIGHTED)


def store_files(store: Path) -> dict[str, bytes]:
    """The manifest and every file it names (what a reader of the store sees)."""
    manifest = json.loads((store / "manifest.json").read_text())
    named = {e["state"] for e in manifest["partitions"].values()}
    named |= {e["file"] for e in manifest["rollups"].values()}
    named |= {e["file"] for e in manifest.get("checks", {}).values()}
    named |= set(manifest["running"]["files"].values())
    named |= {e["file"] for e in manifest.get("aggregates", {}).values()}
    return {n: (store / n).read_bytes() for n in sorted(named | {"manifest.json"})}


def test_a_full_refresh_killed_at_random_moments_leaves_the_old_store_or_the_new(tmp_path):
    """A refresh to another precision, killed anywhere: the store is the old one or the new."""
    days, trials = 10, 8
    source, new_outputs, _first, duration = reference(tmp_path, days, WEIGHTED)
    base = job_in(tmp_path / "base", source)  # the store as it was: exact, unweighted
    run_job(base, quiet=True)
    old_store, old_outputs = store_files(base.parent / "store"), tree(base.parent / "out")
    rng = random.Random(20261124)
    seen: Counter[str] = Counter()
    for trial in range(trials):
        folder = tmp_path / f"trial-{trial}"
        shutil.copytree(base.parent, folder)
        job = job_in(folder, source, WEIGHTED)
        delay = duration * (trial + rng.random()) / trials
        killed = kill(start(job, "--full-refresh"), delay)
        identity = json.loads((folder / "store" / "manifest.json").read_text())["identity"]
        if identity["accumulate"].get("weight") is None:  # not switched over: the old store
            seen["old"] += 1
            assert killed
            assert store_files(folder / "store") == old_store
            assert tree(folder / "out") == old_outputs
            run_job(job, quiet=True, full_refresh=True)
        else:
            seen["new"] += 1
            run_job(job, quiet=True)
        same_outputs(tree(folder / "out"), new_outputs, exact=False)
        assert not leftovers(folder)
        check_store(folder / "store")
        generation = json.loads((folder / "store" / "manifest.json").read_text())["generation"]
        folders = sorted(p.name for p in (folder / "store").iterdir() if p.is_dir())
        assert folders == [f"g{generation}"], "the old generations' folders are removed"
    print(f"refreshes killed with the store old / new: {dict(seen)}")
    assert seen["old"] >= 2, seen
