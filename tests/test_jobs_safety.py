"""Jobs never lose a user's data: overlapping paths, foreign files, full refreshes, modes.

Every case here runs a real job on real Parquet files in a temporary folder.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from jobs_support import ENV, cli, tree, write_day, write_job, write_log

from streameval.jobs import run_job
from streameval.jobs.config import JobConfigError, load_job
from streameval.jobs.store import file_digest


@pytest.fixture
def setup(tmp_path):
    source = write_log(tmp_path / "preds", days=6, rows=120)
    job = write_job(tmp_path / "job", source)
    return tmp_path, source, job


def job_text(source: str, store: str, outputs: list[str]) -> str:
    text = (
        f'[source]\npaths = ["{source}"]\npartition_key = "day"\n\n'
        '[task]\nlabel = "label"\nscore = "score"\n\n'
        f'[store]\npath = "{store}"\n'
    )
    return text + "".join(f'\n[[outputs]]\npath = "{o}"\n' for o in outputs)


@pytest.mark.parametrize(
    ("source", "store", "outputs", "where", "relation"),
    [
        ("preds", "store", ["preds"], "outputs[0].path", "is the source path"),
        ("preds/", "store", ["preds/metrics"], "outputs[0].path", "lies inside the source"),
        ("preds", "store", ["preds/m.csv"], "outputs[0].path", "lies inside the source"),
        ("preds/day=*/*.parquet", "store", ["preds/m"], "outputs[0].path", "lies inside"),
        ("preds", "preds/store", ["out"], "store.path", "lies inside the source"),
        ("preds", ".", ["out"], "store.path", "holds the source"),
        ("preds", "store", ["."], "outputs[0].path", "holds the source"),
        ("preds", "store", ["linked"], "outputs[0].path", "is the source path"),
        ("preds", "store", ["out", "out/m.csv"], "outputs[1].path", "lies inside it"),
        ("preds", "store", ["out/a.csv", "out/a.csv"], "outputs[1].path", "is it"),
        ("preds", "store", ["store/m"], "outputs[0].path", "apart from store.path"),
    ],
)  # fmt: skip
def test_a_job_writing_into_its_source_or_another_output_is_refused(
    tmp_path, source, store, outputs, where, relation
):
    write_log(tmp_path / "preds", days=2, rows=20)
    (tmp_path / "linked").symlink_to(tmp_path / "preds")
    job = tmp_path / "job.toml"
    job.write_text(job_text(source, store, outputs))
    before = tree(tmp_path / "preds")
    with pytest.raises(JobConfigError) as info:
        load_job(job)
    assert f"{where}: expected a path apart from" in str(info.value)
    assert relation in str(info.value)
    result = cli("run", str(job))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert tree(tmp_path / "preds") == before


def test_outputs_beside_the_source_are_fine(tmp_path):
    write_log(tmp_path / "data" / "preds", days=2, rows=20)
    job = tmp_path / "job.toml"
    job.write_text(job_text("data/preds", "data/store", ["data/metrics", "data/m.csv"]))
    assert run_job(job, quiet=True).processed == 2


def test_files_the_job_did_not_write_are_never_deleted(setup):
    _tmp, source, job = setup
    run_job(job, quiet=True)
    out = job.parent / "out"
    day = next(p for p in sorted((out / "metrics").iterdir()) if p.is_dir())
    foreign = [
        out / ".metrics.csv.backup.tmp",  # beside a CSV output
        out / "metrics" / ".notes.tmp",  # inside a Parquet output folder
        day / ".x.tmp",
        day / "extra.parquet",
        out / "metrics" / "day=2020-01-01" / "part-0.parquet",  # looks like one of ours
        job.parent / "store" / ".manifest.json.other.tmp",
    ]
    for f in foreign:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"not the job's")
    write_day(source, "binary", 1, 50, seed=9)  # a changed day: outputs rewritten
    run_job(job, quiet=True)
    run_job(job, quiet=True, full_refresh=True)
    for f in foreign:
        assert f.read_bytes() == b"not the job's", f


def test_output_files_the_job_wrote_are_removed_when_their_day_goes(setup):
    _tmp, source, job = setup
    run_job(job, quiet=True)
    out = job.parent / "out" / "metrics"
    last = sorted(p.name for p in out.iterdir())[-1]
    for f in (source / last).iterdir():
        f.unlink()
    (source / last).rmdir()
    report = run_job(job, quiet=True)
    assert report.removed == 1 and not (out / last).exists()


def test_a_failed_full_refresh_leaves_store_and_outputs_as_they_were(setup, tmp_path):
    _tmp, source, job = setup
    good = job.read_text()
    run_job(job, quiet=True)
    before = tree(job.parent)
    job.write_text(good.replace('label = "label"', 'label = "lable"'))
    result = cli("run", "--full-refresh", str(job))
    assert result.returncode == 2 and "'lable'" in result.stderr
    job.write_text(good)
    assert tree(job.parent) == before  # no byte of the store or the outputs changed
    # the old store still serves a normal run, even once a day's source files are gone
    day = sorted(source.iterdir())[0]
    for f in day.iterdir():
        f.unlink()
    day.rmdir()
    result = cli("run", str(job))
    assert result.returncode == 0, result.stderr
    assert "1 dropped" in result.stderr


def test_a_full_refresh_switches_over_and_leaves_only_the_new_files(setup):
    _tmp, _source, job = setup
    run_job(job, quiet=True)
    store = job.parent / "store"
    old = json.loads((store / "manifest.json").read_text())
    job.write_text(job.read_text().replace('precision = "exact"', "precision = 8"))
    result = cli("run", str(job))
    assert result.returncode == 2 and "--full-refresh" in result.stderr
    assert run_job(job, quiet=True, full_refresh=True).processed == 6
    new = json.loads((store / "manifest.json").read_text())
    assert new["generation"] == old.get("generation", 0) + 1
    assert new["identity"]["accumulate"]["precision"] == 8
    named = {e["state"] for e in new["partitions"].values()}
    named |= {e["file"] for e in new["rollups"].values()}
    named |= set(new["running"]["files"].values())
    on_disk = {str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()}
    assert on_disk == named | {"manifest.json"}
    assert run_job(job, quiet=True).processed == 0
    # the outputs equal those of a store built at the new precision from the start
    fresh = write_job(job.parent.parent / "fresh", _source)
    fresh.write_text(job.read_text())
    run_job(fresh, quiet=True)
    assert tree(job.parent / "out") == tree(fresh.parent / "out")


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_written_files_get_the_users_mode(setup, umask):
    _tmp, _source, job = setup
    result = subprocess.run(
        [sys.executable, "-m", "streameval", "run", str(job), "--quiet"],
        env=ENV,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.umask(umask),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    files = [p for p in job.parent.rglob("*") if p.is_file() and p.name != "job.toml"]
    assert any(p.name == "manifest.json" for p in files)
    assert any(p.name == "metrics.csv" for p in files)
    assert any("states" in p.parts for p in files)
    modes = {str(p.relative_to(job.parent)): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert set(modes.values()) == {0o666 & ~umask}, modes


def test_a_state_file_written_by_the_library_gets_the_users_mode(tmp_path):
    import streameval as se

    state = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.7]}), label="y", score="p")
    old = os.umask(0o027)
    try:
        state.write(tmp_path / "s.parquet")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "s.parquet").stat().st_mode) == 0o640


def corrupt(path: Path) -> None:
    """Flip a bit in the middle of the file's largest column chunk (its data, not its footer).

    A bit flipped in the footer's statistics may leave the content (which the checksum
    covers) whole; one in a column's pages must be found.
    """
    import pyarrow.parquet as pq

    group = pq.read_metadata(path).row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    largest = max(columns, key=lambda c: c.total_compressed_size)
    data = bytearray(path.read_bytes())
    data[largest.data_page_offset + largest.total_compressed_size // 2] ^= 0x10
    path.write_bytes(bytes(data))


def damage_a_state(job: Path) -> str:
    """Run the job, flip a bit in its third partition's state; return that partition."""
    run_job(job, quiet=True)
    store = job.parent / "store"
    manifest = json.loads((store / "manifest.json").read_text())
    value = sorted(manifest["partitions"])[2]
    corrupt(store / manifest["partitions"][value]["state"])
    return value


def test_a_damaged_state_is_recomputed_from_its_source(setup):
    _tmp, source, job = setup
    value = damage_a_state(job)
    expected = tree(job.parent / "out")
    write_day(source, "binary", 3, 120)  # rewrites day 3 (same rows): its windows reread day 2
    result = cli("run", str(job))
    assert result.returncode == 0, result.stderr
    assert f"the state of partition {value!r}" in result.stderr
    assert "recomputing that partition from its source" in result.stderr
    assert tree(job.parent / "out") == expected


def test_reading_a_store_with_a_damaged_state_names_the_partition(setup):
    _tmp, _source, job = setup
    value = damage_a_state(job)
    result = cli("state", "metrics", str(job.parent / "store"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"partition {value!r}" in result.stderr


def test_damaged_stored_metric_rows_are_recomputed(setup):
    _tmp, _source, job = setup
    run_job(job, quiet=True)
    expected = tree(job.parent / "out")
    store = job.parent / "store"
    manifest = json.loads((store / "manifest.json").read_text())
    first = sorted(manifest["rollups"])[0]
    corrupt(store / manifest["rollups"][first]["file"])
    for f in (job.parent / "out").rglob("*.parquet"):
        f.unlink()
    (job.parent / "out" / "metrics.csv").unlink()
    result = cli("run", str(job))
    assert result.returncode == 0, result.stderr
    assert "recomputing it" in result.stderr
    assert tree(job.parent / "out") == expected


def test_a_parquet_output_of_every_window_is_the_stored_rows_bytes(setup, monkeypatch):
    """An output taking every window of the job gets each day's stored rows file as it is
    (checked against its digest, not decoded and encoded again); one taking fewer windows
    gets those rows alone."""
    from streameval.jobs import outputs as outputs_module

    _tmp, _source, job = setup
    job.write_text(job.read_text() + '\n[[outputs]]\npath = "out/daily"\nwindows = ["1d"]\n')
    encoded: list[set[str]] = []
    serialize = outputs_module.serialize

    def spied(table: pl.DataFrame, fmt: str) -> bytes:
        if fmt == "parquet":
            encoded.append(set(table["window"]))
        return serialize(table, fmt)

    monkeypatch.setattr(outputs_module, "serialize", spied)
    run_job(job, quiet=True)
    assert encoded and all(windows == {"1d"} for windows in encoded)  # (the daily output's)
    store = job.parent / "store"
    manifest = json.loads((store / "manifest.json").read_text())
    stored = {e["blake2b"] for e in manifest["rollups"].values()}
    outputs = {Path(p).name: r for p, r in manifest["outputs"].items()}
    assert set(outputs["metrics"]["files"].values()) == stored
    for path in outputs["metrics"]["files"]:
        assert file_digest(path) in stored
    daily = pl.concat([pl.read_parquet(p) for p in sorted(outputs["daily"]["files"])])
    every = pl.concat([pl.read_parquet(p) for p in sorted(outputs["metrics"]["files"])])
    assert daily.equals(every.filter(pl.col("window") == "1d"))
    assert set(outputs["daily"]["files"].values()).isdisjoint(stored)


def test_an_empty_lock_left_by_a_killed_run_is_taken_over_at_once(setup):
    _tmp, _source, job = setup
    store = job.parent / "store"
    store.mkdir()
    (store / "LOCK").write_text("")
    result = cli("run", str(job))
    assert result.returncode == 0, result.stderr
    assert "took over a stale lock left by an empty or unreadable lock" in result.stderr
    assert not (store / "LOCK").exists()


def test_a_write_that_fails_names_its_path(setup):
    """The file size limit makes the kernel refuse the write, as a full disk does."""
    _tmp, _source, job = setup
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))\n"
        "from streameval.cli import main\n"
        f"sys.exit(main(['run', {str(job)!r}, '--quiet']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"cannot write '{job.parent}" in result.stderr
    assert "File too large" in result.stderr


def plain(frame: pl.DataFrame, path: Path) -> None:
    """Parquet whose size depends only on the row count (no compression, no dictionary)."""
    import pyarrow.parquet as pq

    pq.write_table(frame.to_arrow(), path, compression="none", use_dictionary=False)


def rewrite_keeping_size_and_mtime(target: Path, seed: int) -> None:
    stamp, size = target.stat().st_mtime_ns, target.stat().st_size
    plain(pl.read_parquet(target).with_columns(pl.col("label").shuffle(seed)), target)
    assert target.stat().st_size == size
    os.utime(target, ns=(stamp, stamp))


def test_a_content_fingerprint_sees_a_rewrite_that_keeps_size_and_mtime(setup):
    _tmp, source, job = setup
    target = sorted(source.glob("day=*/part-0.parquet"))[2]
    plain(pl.read_parquet(target), target)
    run_job(job, quiet=True)
    rewrite_keeping_size_and_mtime(target, 1)
    assert run_job(job, quiet=True).changed == []  # size and mtime: not seen (documented)
    content = 'partition_key = "day"\nfingerprint = "content"'
    job.write_text(job.read_text().replace('partition_key = "day"', content))
    assert run_job(job, quiet=True).processed == 6  # every fingerprint changed its kind
    rewrite_keeping_size_and_mtime(target, 2)
    assert run_job(job, quiet=True).changed == [target.parent.name.split("=")[1]]


def test_a_content_fingerprint_applies_to_parquet_sources_only(tmp_path):
    job = tmp_path / "job.toml"
    job.write_text(
        '[source]\npaths = ["t"]\nformat = "delta"\nfingerprint = "content"\n'
        '[task]\nlabel = "y"\nscore = "p"\n[store]\npath = "s"\n'
    )
    with pytest.raises(JobConfigError, match=r"source\.fingerprint: applies to format = 'parquet'"):
        load_job(job)
    job.write_text(
        job.read_text().replace('format = "delta"\nfingerprint = "content"', 'fingerprint = "hash"')
    )
    with pytest.raises(JobConfigError, match=r"source\.fingerprint: expected one of"):
        load_job(job)


def test_a_full_refresh_republishes_outputs_whose_numbers_changed(setup):
    _tmp, source, job = setup
    run_job(job, quiet=True)
    target = sorted(source.glob("day=*/part-0.parquet"))[-1]
    plain(pl.read_parquet(target), target)
    run_job(job, quiet=True)
    before = tree(job.parent / "out")
    rewrite_keeping_size_and_mtime(target, 3)  # unseen by the size-and-mtime fingerprint
    assert run_job(job, quiet=True).processed == 0
    report = run_job(job, quiet=True, full_refresh=True)
    assert report.written > 0
    after = tree(job.parent / "out")
    assert after != before
    fresh = write_job(job.parent.parent / "fresh", source)
    run_job(fresh, quiet=True)
    assert after == tree(fresh.parent / "out")


def test_a_store_in_a_folder_of_other_files_is_refused(setup):
    _tmp, _source, job = setup
    store = job.parent / "store"
    (store / "states").mkdir(parents=True)
    (store / "states" / "california.0123456789abcdef.parquet").write_bytes(b"users")
    (store / "notes.txt").write_text("mine")
    result = cli("run", str(job))
    assert result.returncode == 2 and "expected store.path" in result.stderr
    assert "'notes.txt'" in result.stderr and "'states'" in result.stderr
    assert (store / "states" / "california.0123456789abcdef.parquet").read_bytes() == b"users"


def test_an_output_changed_by_somebody_else_is_repaired_and_never_deleted_as_ours(setup):
    _tmp, source, job = setup
    run_job(job, quiet=True)
    out = job.parent / "out"
    expected = tree(out)
    (out / "metrics.csv").write_text("edited\n")
    assert run_job(job, quiet=True).written == 1
    assert tree(out) == expected
    # a day file replaced by another program is left alone when its day leaves the source
    last = sorted(p for p in (out / "metrics").iterdir() if p.is_dir())[-1]
    (last / "part-0.parquet").write_bytes(b"another job's")
    for f in (source / last.name).iterdir():
        f.unlink()
    (source / last.name).rmdir()
    run_job(job, quiet=True)
    assert (last / "part-0.parquet").read_bytes() == b"another job's"


def test_an_output_behind_a_symlink_updates_its_target_and_keeps_its_mode(setup):
    _tmp, _source, job = setup
    shared = job.parent / "shared"
    shared.mkdir()
    (shared / "metrics.csv").write_text("old\n")
    os.chmod(shared / "metrics.csv", 0o640)
    (job.parent / "out").mkdir()
    (job.parent / "out" / "metrics.csv").symlink_to(shared / "metrics.csv")
    run_job(job, quiet=True)
    assert (job.parent / "out" / "metrics.csv").is_symlink()
    assert (shared / "metrics.csv").read_text().startswith("segment,")
    assert stat.S_IMODE((shared / "metrics.csv").stat().st_mode) == 0o640


def test_an_interrupt_right_after_the_switch_keeps_the_new_generation(setup, monkeypatch):
    """Ctrl-C between a refresh's manifest rename and the end of switch()."""
    import streameval.files as files

    _tmp, _source, job = setup
    run_job(job, quiet=True)
    store = job.parent / "store"
    real = files.fsync_dir

    def interrupted(folder):
        real(folder)
        if Path(folder) == store and json.loads((store / "manifest.json").read_text()).get(
            "generation"
        ):
            raise KeyboardInterrupt

    monkeypatch.setattr(files, "fsync_dir", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_job(job, quiet=True, full_refresh=True)
    monkeypatch.setattr(files, "fsync_dir", real)
    manifest = json.loads((store / "manifest.json").read_text())
    assert manifest["generation"] == 1
    assert all((store / e["state"]).exists() for e in manifest["partitions"].values())
    assert run_job(job, quiet=True).processed == 0


def test_a_live_lock_without_flock_from_an_older_version_is_refused(setup):
    import socket

    _tmp, _source, job = setup
    store = job.parent / "store"
    store.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stat_fields = Path(f"/proc/{holder.pid}/stat").read_text().rsplit(")", 1)[1].split()
        info = {
            "pid": holder.pid, "host": socket.gethostname(), "started": 0,
            "proc_start": stat_fields[19], "started_at": "2026-10-01T00:00:00+00:00",
        }  # fmt: skip
        (store / "LOCK").write_text(json.dumps(info))
        result = cli("run", str(job))
        assert result.returncode == 2 and f"pid {holder.pid}" in result.stderr
    finally:
        holder.kill()
        holder.wait()
    assert cli("run", str(job)).returncode == 0
