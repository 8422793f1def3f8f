"""The state store: one state file per source partition, a manifest, atomic writes.

Layout of a store folder::

    manifest.json                      # written last, atomically, after every step
    LOCK                               # while a run holds the store
    states/day=2026-10-01.<hash>.parquet     # one state per source partition
    metrics/day=2026-10-01.<hash>.parquet    # the metric rows of every window ending that day
    running/<window>.<hash>.parquet    # running windows (mtd, ytd, all) at the last day

Every file is written to a temporary file in its folder, fsynced and renamed into place;
the manifest only ever names complete files, and files it no longer names are deleted
after it has been written. The manifest records its own format version, the state schema
version and the job settings the states depend on; a store written differently is refused
with a clear message, never misread.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import StateFileError
from ..io import read_state, write_state
from ..spec import SCHEMA_VERSION
from ..state import State

STORE_FORMAT = 1
MANIFEST = "manifest.json"
LOCK = "LOCK"
FOLDERS = ("states", "metrics", "running")


class StoreError(StateFileError):
    """A state store that cannot be used as it is (other version, other job, damaged)."""


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename) to disk, where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], None]) -> None:
    """Write ``path`` through ``write(temporary path)``, fsync, then rename into place."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""

    def write(tmp: str) -> None:
        Path(tmp).write_bytes(data)

    atomic_write(path, write)


def canonical(state: State) -> State:
    """The state with its rows in a fixed order: by group keys and bucket columns.

    Equal states then give equal files, and a merge of stored states sums each group's rows
    in one fixed order.
    """
    from ..states import kind_module

    order = [*state.spec.keys, *kind_module(state.spec).group_columns(state.spec)]
    return State(state.spec, state.table.sort(order, nulls_last=False, maintain_order=True))


def new_manifest(identity: dict[str, Any]) -> dict[str, Any]:
    """An empty manifest for a job whose states depend on ``identity``."""
    from .. import __version__

    return {
        "store_format": STORE_FORMAT,
        "state_schema_version": SCHEMA_VERSION,
        "written_by": f"streameval {__version__}",
        "identity": identity,
        "spec": None,
        "partitions": {},
        "rollups": {},
        "running": {},
        "outputs": {},
    }


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
        self._saved: str | None = None

    def path(self, relative: str) -> str:
        """Absolute path of a file named relative to the store."""
        return os.path.join(self.root, relative)

    def read_manifest(self) -> dict[str, Any] | None:
        """The manifest as stored, or None for a new store; refuse one this version cannot read."""
        try:
            text = Path(self.manifest_path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
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
        return manifest

    def check_versions(self, manifest: dict[str, Any]) -> None:
        """Refuse a manifest of another store format or state schema version."""
        checks = [
            ("store format", manifest.get("store_format"), STORE_FORMAT),
            ("state schema", manifest.get("state_schema_version"), SCHEMA_VERSION),
        ]
        for what, found, expected in checks:
            if found != expected:
                raise StoreError(
                    f"expected a store of {what} version {expected}, but {self.root!r} has "
                    f"version {found!r} (written by {manifest.get('written_by', 'unknown')}); "
                    "its states cannot be read by this streameval; hint: run with "
                    "--full-refresh to recompute every partition into it, or use the "
                    "streameval version that wrote it"
                )

    def open(self, identity: dict[str, Any], full_refresh: bool) -> dict[str, Any]:
        """The manifest to run with: the stored one, checked against the job, or a new one."""
        manifest = None if full_refresh else self.read_manifest()
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

    def save(self, manifest: dict[str, Any]) -> bool:
        """Write the manifest atomically if it changed; return whether it was written."""
        text = json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n"
        if text == self._saved:
            return False
        atomic_write_bytes(self.manifest_path, text.encode())
        self._saved = text
        return True

    def write_state(self, state: State, relative: str) -> int:
        """Write a state (rows in canonical order) atomically; return its size in bytes."""
        atomic_write(self.path(relative), lambda tmp: write_state(canonical(state), tmp))
        return os.path.getsize(self.path(relative))

    def read_state(self, relative: str, what: str) -> State:
        """Read a state file of the store; a missing or unreadable one is a clear error."""
        try:
            return read_state(self.path(relative))
        except StateFileError as exc:
            raise StoreError(
                f"{what}: {exc}; hint: run with --full-refresh to recompute the store"
            ) from None

    def write_table(self, table: pl.DataFrame, relative: str) -> None:
        """Write a plain Parquet table (metric rows) atomically."""
        atomic_write(self.path(relative), lambda tmp: table.write_parquet(tmp))

    def referenced(self, manifest: dict[str, Any]) -> set[str]:
        """Every file the manifest names, relative to the store."""
        names = {e["state"] for e in manifest.get("partitions", {}).values()}
        names |= {e["file"] for e in manifest.get("rollups", {}).values()}
        names |= set((manifest.get("running") or {}).get("files", {}).values())
        return {os.path.normpath(n) for n in names}

    def remove_temporaries(self) -> int:
        """Delete temporary files left by a run that was killed; return how many."""
        removed = 0
        for folder in (self.root, *(self.path(f) for f in FOLDERS)):
            for p in Path(folder).glob(".*.tmp") if os.path.isdir(folder) else []:
                p.unlink(missing_ok=True)
                removed += 1
        return removed

    def remove_unreferenced(self, manifest: dict[str, Any]) -> int:
        """Delete files in the store's folders that the (saved) manifest does not name."""
        keep = self.referenced(manifest)
        removed = 0
        for folder in FOLDERS:
            base = Path(self.path(folder))
            for p in sorted(base.glob("*.parquet")) if base.is_dir() else []:
                if os.path.normpath(f"{folder}/{p.name}") not in keep:
                    p.unlink(missing_ok=True)
                    removed += 1
        return removed
