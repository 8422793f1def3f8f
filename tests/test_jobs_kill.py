"""Crash safety: runs killed with SIGKILL at random moments, then completed by a normal run.

Every completed run must leave exactly the outputs of an uninterrupted run (byte for byte:
the job is exact-mode binary, so every sum is an integer and any double-counted or lost
partition would show), a store holding only the files its manifest names, no temporary
files and no lock.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from jobs_support import ENV, tree, write_day, write_job

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
    if len(manifest.get("outputs", {})) < 2:
        return "outputs"
    return "cleanup or finished"


def leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


def start(job: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "streameval", "run", str(job), "--quiet"],
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
    named |= set(manifest["running"]["files"].values())
    files = {str(p.relative_to(store)) for p in store.rglob("*.parquet")}
    assert files == named, "orphaned or missing store files"
    assert not (store / "LOCK").exists()


def reference(root: Path, days: int) -> tuple[Path, dict[str, bytes], float, float]:
    """An uninterrupted run: its outputs, when it first wrote its store, when it finished."""
    source = root / "preds"
    for d in range(days):
        write_day(source, "binary", d, 40, parts=2 if d % 5 == 0 else 1)
    job = write_job(root / "reference", source)
    tick = time.monotonic()
    proc, first = start(job), None
    while proc.poll() is None:
        if first is None and (root / "reference" / "store" / "manifest.json").exists():
            first = time.monotonic() - tick
        time.sleep(0.01)
    assert proc.returncode == 0
    duration = time.monotonic() - tick
    return source, tree(root / "reference" / "out"), first or duration / 2, duration


def kill_loop(root: Path, trials: int, days: int) -> None:
    """``trials`` runs killed at moments spread over a run, each then completed and checked."""
    source, expected, first, duration = reference(root, days)
    rng = random.Random(20261001)
    stages: Counter[str] = Counter()
    killed = attempt = 0
    while killed < trials and attempt < 3 * trials:
        folder = root / f"trial-{attempt}"
        job = write_job(folder, source)
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
        assert tree(folder / "out") == expected, f"attempt {attempt}: outputs differ"
        assert not leftovers(folder), f"attempt {attempt}: temporary files left"
        check_store(folder / "store")
        attempt += 1
    print(f"kill stages over {attempt} attempts (run of {duration:.1f} s): {dict(stages)}")
    assert killed >= trials
    hit = {"before the first state", "states", "rollups", "outputs", "cleanup or finished"}
    assert len(hit & set(stages)) >= 2, stages


def test_runs_killed_at_random_moments_converge_to_the_uninterrupted_result(tmp_path):
    kill_loop(tmp_path, trials=20, days=16)


@pytest.mark.slow
def test_many_more_kills_on_a_longer_job(tmp_path):
    kill_loop(tmp_path, trials=60, days=48)
