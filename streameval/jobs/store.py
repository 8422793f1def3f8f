"""The state store: one state file per source partition, a manifest, atomic writes.

Layout of a store folder::

    manifest.json                      # written last, atomically, after every step
    LOCK                               # while a run holds the store
    states/day=2026-10-01.<hash>.parquet     # one state per source partition
    metrics/day=2026-10-01.<hash>.parquet    # the metric rows of every window ending that day
    running/<window>.<hash>.parquet    # running windows (mtd, ytd, all) at the last day
    checks/day=2026-10-01.<hash>.parquet     # the check rows of each day
    aggregates/day=….<window>.<hash>.parquet # the last day's windows the next checks read
    g2/...                             # the same folders, after a full refresh

Every file is written to a temporary file in its folder, fsynced and renamed into place;
the manifest only ever names complete files, and files it no longer names are deleted
after it has been written. The manifest records its own format version, the state schema
version and the job settings the states depend on; a store written differently is refused
with a clear message, never misread.

A full refresh never touches what the manifest names: it writes a new *generation* of files
into a folder of its own (``g2/``, with its progress in ``g2/manifest.json``) and switches
over by replacing ``manifest.json`` in one rename once every state and rollup is written.
Killed or failed before that, it leaves the old store byte for byte as it was; the next run
deletes the unfinished generation. Only files the store's own naming proves it wrote are
deleted: Parquet files in its folders, its generation manifests and its own tagged
temporaries.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import StateFileError
from ..files import atomic_write, atomic_write_bytes, hash_file, is_temporary, remove_temporaries
from ..io import write_state
from ..spec import READABLE_VERSIONS, SCHEMA_VERSION
from ..state import State, read_state
from ..states import kind_module
from ..version import __version__
from .partitions import safe_name

STORE_FORMAT = 1
MANIFEST = "manifest.json"
LOCK = "LOCK"
FOLDERS = ("states", "metrics", "running", "checks", "aggregates")
GENERATION = re.compile(r"g[0-9]+")
STORE_FILE = re.compile(r"[A-Za-z0-9._=-]+\.[0-9a-f]{16}\.parquet")


class StoreError(StateFileError):
    """A state store that cannot be used as it is (other version, other job, damaged).

    Raised by :func:`~streameval.jobs.run_job` when the store was written by another store
    format or state schema version, computed with another job identity (columns, keys,
    precision …: rerun with ``--full-refresh``), is a folder holding other files, or holds a
    damaged state whose source is gone. A :class:`~streameval.StateFileError`.

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.demo import example_job
    >>> root = tempfile.mkdtemp()
    >>> job_file = example_job(root)  # a day of predictions, and job.toml
    >>> from streameval.jobs import StoreError, run_job
    >>> os.makedirs(f"{root}/store")
    >>> _ = open(f"{root}/store/notes.txt", "w").write("not a store")
    >>> try:
    ...     run_job(f"{root}/job.toml", quiet=True)
    ... except StoreError as exc:
    ...     print(str(exc).split(";")[0].split(", but ")[1])
    it holds 'notes.txt'

    """


class DamagedStateError(StoreError):
    """A stored state file fails its checks; ``partition`` names its partition, if any."""

    def __init__(self, message: str, file: str, partition: str | None = None) -> None:
        super().__init__(message)
        self.file, self.partition = file, partition


def canonical(state: State) -> State:
    """The state with its rows in a fixed order: by group keys and bucket columns.

    Equal states then give equal files, and a merge of stored states sums each group's rows
    in one fixed order.
    """
    order = [*state.spec.keys, *kind_module(state.spec).group_columns(state.spec)]
    return State(state.spec, state.table.sort(order, nulls_last=False, maintain_order=True))


def new_manifest(identity: dict[str, Any], generation: int = 0) -> dict[str, Any]:
    """An empty manifest for a job whose states depend on ``identity``."""
    return {
        "store_format": STORE_FORMAT,
        "state_schema_version": SCHEMA_VERSION,
        "written_by": f"streameval {__version__}",
        "identity": identity,
        "generation": generation,
        "spec": None,
        "partitions": {},
        "rollups": {},
        "running": {},
        "outputs": {},
    }


def folder_of(generation: int) -> str:
    """The folder (relative to the store) of a generation's files: '' for the first."""
    return f"g{generation}" if generation else ""


def digest_of(*parts: Any) -> str:
    """First 16 hex digits of the SHA-256 of the parts' JSON."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def bytes_digest(data: bytes) -> str:
    """The BLAKE2b-128 hex digest of ``data`` (as :func:`file_digest` of a file holding it)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_digest(path: str) -> str:
    """The BLAKE2b-128 hex digest of a file's bytes."""
    return hash_file(path, hashlib.blake2b(digest_size=16))


def _owned_only(record: dict[str, Any]) -> dict[str, Any]:
    """An output's record as a full refresh starts it: the files are the job's, none current.

    Every output file is then compared with what the refreshed store gives and rewritten
    where its bytes differ, and the files it recorded stay known as the job's.
    """
    owned = sorted(set(record.get("pending", [])) | set(record.get("files", {})))
    return {"format": record.get("format"), "pending": owned}


def _differences(old: Any, new: Any, path: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += _differences(old.get(key), new.get(key), f"{path}.{key}" if path else key)
        return out
    return [] if old == new else [f"{path}: {old!r} → {new!r}"]


class Store:
    """A store folder: read, check and write its manifest and files."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.manifest_path = os.path.join(root, MANIFEST)
        self.lock_path = os.path.join(root, LOCK)
        self.folder = ""  # where new files go: the generation's folder
        real = os.path.realpath(root)
        self.tag = "streameval-" + hashlib.sha256(real.encode()).hexdigest()[:12]
        self._saved: str | None = None
        self._refresh: dict[str, Any] | None = None  # the manifest a full refresh replaces

    def path(self, relative: str) -> str:
        """Absolute path of a file named relative to the store."""
        return os.path.join(self.root, relative)

    def place(self, relative: str) -> str:
        """The store-relative name of a new file ``relative`` in the current generation."""
        return f"{self.folder}/{relative}" if self.folder else relative

    def read_manifest(self) -> dict[str, Any] | None:
        """The manifest as stored, or None for a new store; refuse one this version cannot read."""
        try:
            text = Path(self.manifest_path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(
                f"cannot read the store manifest {self.manifest_path!r}: {exc.strerror}"
            ) from None
        try:
            manifest = json.loads(text)
            assert isinstance(manifest, dict)
        except (ValueError, AssertionError):
            raise StoreError(
                f"cannot read the store manifest {self.manifest_path!r}: it is not JSON written "
                "by streameval; hint: run with --full-refresh to rebuild the store"
            ) from None
        self._saved = text
        self.check_versions(manifest)
        self.folder = folder_of(int(manifest.get("generation") or 0))
        return manifest

    def check_versions(self, manifest: dict[str, Any]) -> None:
        """Refuse a manifest of another store format or state schema version."""
        checks = [
            ("store format", manifest.get("store_format"), (STORE_FORMAT,), STORE_FORMAT),
            (
                "state schema",
                manifest.get("state_schema_version"),
                READABLE_VERSIONS,
                SCHEMA_VERSION,
            ),
        ]
        for what, found, readable, expected in checks:
            if found not in readable:
                raise StoreError(
                    f"expected a store of {what} version {expected}, but {self.root!r} has "
                    f"version {found!r} (written by {manifest.get('written_by', 'unknown')}); "
                    "its states cannot be read by this streameval; hint: run with "
                    "--full-refresh to recompute every partition into it, or use the "
                    "streameval version that wrote it"
                )

    def open(self, identity: dict[str, Any], full_refresh: bool) -> dict[str, Any]:
        """The manifest to run with: the stored one, checked against the job, or a new one.

        With ``full_refresh`` the stored manifest stays in place: the returned manifest is a
        new generation's, saved beside it until :meth:`switch` puts it in its place.
        """
        if not os.path.exists(self.manifest_path):
            self._check_new_folder()
        if full_refresh:
            return self._begin_refresh(identity)
        manifest = self.read_manifest()
        if manifest is None:
            manifest = new_manifest(identity)
            self.save(manifest)
            return manifest
        if manifest.get("identity") != identity:
            diffs = _differences(manifest.get("identity"), identity)
            raise StoreError(
                f"expected the job to compute states as the store {self.root!r} was built "
                f"({'; '.join(diffs)}); hint: run with --full-refresh to recompute every "
                "partition this way, or point store.path at a new folder"
            )
        return manifest

    def _check_new_folder(self) -> None:
        """Refuse to start a store in a folder that holds files of anybody else."""
        root = Path(self.root)
        if not root.is_dir():
            return
        ours = (LOCK, f"{LOCK}.takeover")
        found = sorted(
            p.name
            for p in root.iterdir()
            if p.name not in ours
            and not p.name.startswith(".LOCK.")
            and not is_temporary(p.name, self.tag)
        )
        if found:
            shown = ", ".join(repr(n) for n in found[:5]) + (" …" if len(found) > 5 else "")
            raise StoreError(
                f"expected store.path {self.root!r} to be a new or empty folder (or a store "
                f"with its {MANIFEST}), but it holds {shown}; hint: point store.path at a "
                "folder of its own — a job deletes files in its store that it no longer needs"
            )

    def _begin_refresh(self, identity: dict[str, Any]) -> dict[str, Any]:
        try:
            old = self.read_manifest()
        except StoreError:  # unreadable or of another version: the refresh replaces it
            old = None
        used = [int(d.name[1:]) for d in self._generations()]
        generation = max([0, *used, int((old or {}).get("generation") or 0)]) + 1
        self._refresh = old or {}
        self.folder = folder_of(generation)
        manifest = new_manifest(identity, generation)
        manifest["outputs"] = {
            path: _owned_only(record)
            for path, record in (self._refresh.get("outputs") or {}).items()
        }
        self.manifest_path = self.path(f"{self.folder}/{MANIFEST}")
        self._saved = None
        self.save(manifest)
        return manifest

    @property
    def refreshing(self) -> bool:
        """Whether a full refresh is building a new generation not yet switched to."""
        return self._refresh is not None

    def switch(self, manifest: dict[str, Any]) -> None:
        """Make a full refresh's manifest the store's (one atomic rename); no-op otherwise."""
        if self._refresh is None:
            return
        staged = self.manifest_path
        self.manifest_path = os.path.join(self.root, MANIFEST)
        self._saved = None
        self.save(manifest)
        self._refresh = None
        Path(staged).unlink(missing_ok=True)

    def save(self, manifest: dict[str, Any]) -> bool:
        """Write the manifest atomically if it changed; return whether it was written."""
        text = json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n"
        if text == self._saved:
            return False
        atomic_write_bytes(self.manifest_path, text.encode(), tag=self.tag)
        self._saved = text
        return True

    def write_state(self, state: State, relative: str) -> int:
        """Write a state (rows in canonical order) atomically; return its size in bytes."""
        write_state(canonical(state), self.path(relative), tag=self.tag)
        return os.path.getsize(self.path(relative))

    def read_state(self, relative: str, what: str, partition: str | None = None) -> State:
        """Read a state file of the store; a missing or damaged one is a clear error."""
        try:
            return read_state(self.path(relative))
        except StateFileError as exc:
            raise DamagedStateError(f"{what}: {exc}", relative, partition) from None

    def write_table(self, table: pl.DataFrame, relative: str) -> str:
        """Write a plain Parquet table (metric rows) atomically; return its bytes' digest."""
        atomic_write(self.path(relative), lambda tmp: table.write_parquet(tmp), tag=self.tag)
        return file_digest(self.path(relative))

    def write_rows(
        self, rows: pl.DataFrame, folder: str, label: str, digest: str
    ) -> dict[str, Any]:
        """Write one output day's rows (metric or check rows) into ``folder``; its record.

        The file is ``folder/<label>.<digest>.parquet`` in the current generation (another
        name derived from the digest if that file exists: a file a manifest names is never
        rewritten in place, so a run killed while writing leaves it as it was); the
        returned manifest record names it with the rows' ``digest``, its row count and the
        BLAKE2b digest of its bytes (checked when it is read back).
        """
        rel = self.place(f"{folder}/{safe_name(label)}.{digest}.parquet")
        n = 0
        while os.path.exists(self.path(rel)):  # (never rewrite a file a manifest may name)
            n += 1
            name = hashlib.sha256(f"{digest}:{n}".encode()).hexdigest()[:16]
            rel = self.place(f"{folder}/{safe_name(label)}.{name}.parquet")
        content = self.write_table(rows, rel)
        return {"digest": digest, "file": rel, "rows": rows.height, "blake2b": content}

    def read_table(self, relative: str, digest: str | None, what: str) -> pl.DataFrame:
        """Read a table written by :meth:`write_table`, checked against its recorded digest."""
        path = self.path(relative)
        source = path if digest is None else io.BytesIO(self.read_bytes(relative, digest, what))
        try:
            return pl.read_parquet(source)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise self._damaged(relative, what, exc) from None

    def read_bytes(self, relative: str, digest: str, what: str) -> bytes:
        """The bytes of a file written by :meth:`write_table`, checked against its digest."""
        try:
            data = Path(self.path(relative)).read_bytes()
        except OSError as exc:
            raise self._damaged(relative, what, exc) from None
        if bytes_digest(data) != digest:
            problem = "its content does not match the digest the manifest records"
            raise self._damaged(relative, what, problem) from None
        return data

    def _damaged(self, relative: str, what: str, problem: object) -> DamagedStateError:
        path = self.path(relative)
        return DamagedStateError(
            f"{what}: cannot read {path!r} ({problem}); hint: run again to recompute it", relative
        )

    def referenced(self, manifest: dict[str, Any]) -> set[str]:
        """Every file the manifest names, relative to the store."""
        names = {e["state"] for e in manifest.get("partitions", {}).values()}
        names |= {e["file"] for e in manifest.get("rollups", {}).values()}
        names |= set((manifest.get("running") or {}).get("files", {}).values())
        names |= {e["file"] for e in manifest.get("checks", {}).values()}
        names |= {e["file"] for e in manifest.get("aggregates", {}).values()}
        return {os.path.normpath(n) for n in names}

    def _generations(self) -> list[Path]:
        root = Path(self.root)
        if not root.is_dir():
            return []
        return [d for d in root.iterdir() if GENERATION.fullmatch(d.name) and d.is_dir()]

    def _folders(self) -> list[str]:
        """Every generation folder of the store ('' for the first), relative to it."""
        return ["", *sorted(d.name for d in self._generations())]

    def remove_temporaries(self) -> int:
        """Delete this store's temporary files left by a killed run; return how many."""
        removed = 0
        for g in self._folders():
            base = self.path(g) if g else self.root
            for folder in (base, *(os.path.join(base, f) for f in FOLDERS)):
                removed += remove_temporaries(folder, self.tag)
        return removed

    def remove_unreferenced(self, manifest: dict[str, Any]) -> int:
        """Delete the store files the (saved) manifest does not name, and dead generations.

        Only the store's own files are candidates: ``*.parquet`` files named as the store
        names them in its folders, and the manifests of unfinished generations; a
        folder is removed only once empty.
        """
        if self.refreshing:
            raise RuntimeError("remove_unreferenced before a full refresh switched over")
        keep = self.referenced(manifest)
        return sum(self._remove_files(g, keep) for g in self._folders())

    def abandon(self) -> None:
        """Delete the files of a full refresh that failed; the store stays as it was."""
        if self._refresh is None:
            return
        unfinished = self.folder
        self.folder = folder_of(int(self._refresh.get("generation") or 0))
        try:  # interrupted inside switch(), after the rename: the new generation is live
            live = json.loads(Path(self.root, MANIFEST).read_text(encoding="utf-8"))
            if folder_of(int(live.get("generation") or 0)) == unfinished:
                self.folder, self._refresh = unfinished, None
                return
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        self.manifest_path = os.path.join(self.root, MANIFEST)
        self._refresh = None
        for folder in ("", *FOLDERS):
            remove_temporaries(self.path(f"{unfinished}/{folder}"), self.tag)
        self._remove_files(unfinished, set())

    def _remove_files(self, g: str, keep: set[str]) -> int:
        """Delete generation ``g``'s store files not in ``keep``; drop it if dead and empty."""
        removed = 0
        for folder in FOLDERS:
            rel = f"{g}/{folder}" if g else folder
            base = Path(self.path(rel))
            for p in sorted(base.glob("*.parquet")) if base.is_dir() else []:
                name = os.path.normpath(f"{rel}/{p.name}")
                if STORE_FILE.fullmatch(p.name) and name not in keep and p.is_file():
                    p.unlink(missing_ok=True)
                    removed += 1
            if g != self.folder and base.is_dir() and not any(base.iterdir()):
                base.rmdir()
        if g:  # a refresh's progress manifest, once switched over or abandoned
            Path(self.path(f"{g}/{MANIFEST}")).unlink(missing_ok=True)
            dead = g != self.folder and os.path.isdir(self.path(g))
            if dead and not any(Path(self.path(g)).iterdir()):
                Path(self.path(g)).rmdir()
        return removed
