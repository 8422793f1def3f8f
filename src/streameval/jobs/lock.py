"""The store's lock: one run at a time, with stale-lock detection.

The lock is a file created with ``O_CREAT | O_EXCL`` holding the owner's pid, host name,
start time and (on Linux) the process's start tick, so a reused pid is not mistaken for the
owner. A lock is stale when its owner is on this host and no longer runs (or is a zombie,
or the pid now belongs to another process), or, for an owner on another host, when it is
older than :data:`OTHER_HOST_TIMEOUT` (24 hours). A stale lock is taken over through a
second ``O_EXCL`` guard file, so two runs cannot both take over the same stale lock.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "LOCK")
>>> with StoreLock(path, "doctest") as lock:
...     StoreLock(path, "second").acquire()
Traceback (most recent call last):
...
streameval.jobs.lock.StoreLockedError: another run holds the store's lock ...
>>> os.path.exists(path)
False
"""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import UTC, datetime
from typing import Any

from ..errors import StreamevalError

OTHER_HOST_TIMEOUT = 24 * 3600.0
UNREADABLE_TIMEOUT = 60.0


class StoreLockedError(StreamevalError):
    """Another run holds the store's lock."""


def _proc_start(pid: int) -> tuple[str, str] | None:
    """(state, start tick) of a process from /proc, or None where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return (fields[0], fields[19]) if len(fields) > 19 else None


def _now_info(command: str) -> dict[str, Any]:
    pid = os.getpid()
    proc = _proc_start(pid)
    started = time.time()
    return {
        "pid": pid,
        "host": socket.gethostname(),
        "started": started,
        "started_at": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "proc_start": proc[1] if proc else None,
        "command": command,
    }


def owner_alive(info: dict[str, Any]) -> bool:
    """Whether the process that wrote ``info`` may still hold the lock."""
    if info.get("host") != socket.gethostname():
        return bool(time.time() - float(info.get("started", 0)) < OTHER_HOST_TIMEOUT)
    pid = int(info.get("pid", -1))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    proc = _proc_start(pid)
    if proc is None:
        return True
    state, start = proc
    return state not in ("Z", "X") and (info.get("proc_start") in (None, start))


def _read(path: str) -> tuple[dict[str, Any] | None, str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None, ""
    try:
        info = json.loads(text)
        return (info if isinstance(info, dict) else None), text
    except ValueError:
        return None, text


def _describe(info: dict[str, Any] | None) -> str:
    if info is None:
        return "an unreadable lock"
    return f"pid {info.get('pid')} on host {info.get('host')!r}, started {info.get('started_at')}"


class StoreLock:
    """A context manager holding the lock file ``path`` for one run."""

    def __init__(self, path: str, command: str) -> None:
        self.path, self.command = path, command
        self.text: str | None = None
        self.took_over: str | None = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _create(self, path: str) -> str | None:
        text = json.dumps(_now_info(self.command), sort_keys=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        return text

    def _refuse(self, info: dict[str, Any] | None, why: str = "") -> StoreLockedError:
        return StoreLockedError(
            f"another run holds the store's lock {self.path} ({_describe(info)}){why}; hint: "
            f"wait for it to finish; if no such run is active, remove the lock file: "
            f"rm {self.path}"
        )

    def _stale(self, info: dict[str, Any] | None, path: str) -> bool:
        if info is None:  # being written, or its writer died right after creating it
            try:
                return time.time() - os.stat(path).st_mtime > UNREADABLE_TIMEOUT
            except FileNotFoundError:
                return False
        return not owner_alive(info)

    def acquire(self) -> None:
        """Take the lock, taking over a stale one; raise StoreLockedError if it is held."""
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        for _ in range(5):
            self.text = self._create(self.path)
            if self.text is not None:
                return
            info, text = _read(self.path)
            if not text and not os.path.exists(self.path):
                continue
            if not self._stale(info, self.path):
                raise self._refuse(info)
            self._take_over(info, text)
        raise self._refuse(None, " and it changed hands repeatedly while this run waited")

    def _take_over(self, info: dict[str, Any] | None, text: str) -> None:
        guard = self.path + ".takeover"
        if self._create(guard) is None:
            guard_info, _ = _read(guard)
            if self._stale(guard_info, guard):
                os.unlink(guard)
                return
            raise self._refuse(info, "; another run is taking it over right now")
        try:
            _, now = _read(self.path)
            if now == text:
                os.unlink(self.path)
                self.took_over = (
                    f"took over a stale lock left by {_describe(info)} "
                    "(that process is no longer running)"
                )
        finally:
            os.unlink(guard)

    def release(self) -> None:
        """Remove the lock file if it is still this run's."""
        if self.text is None:
            return
        _, now = _read(self.path)
        if now == self.text:
            os.unlink(self.path)
        self.text = None
