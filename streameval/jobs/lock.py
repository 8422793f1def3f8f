"""The store's lock: one run at a time, with stale-lock detection.

The lock file holds the owner's pid, host name, start time and command, and the owner holds
an exclusive ``flock`` on it for as long as it runs. The kernel drops that lock when the
process ends, however it ends, so a lock file nobody holds a ``flock`` on was left by a run
that is gone and is taken over at once (an empty or unreadable one too). The file is written
complete before it appears (a temporary file linked into place), so no run ever sees a lock
being created. An owner on another host (a store on a network folder, where ``flock`` may
not reach other hosts) is trusted for :data:`OTHER_HOST_TIMEOUT` (24 hours).

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

import fcntl
import json
import os
import socket
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import StreamevalError
from ..files import default_mode, write_failed

OTHER_HOST_TIMEOUT = 24 * 3600.0


class StoreLockedError(StreamevalError):
    """Another run holds the store's lock.

    Raised by :func:`~streameval.jobs.run_job` (and ``streameval run``) when the store's
    ``LOCK`` file is held by a live run; the message names that run (process id, host,
    start time) and how to remove a lock that no run holds.

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.demo import example_job
    >>> root = tempfile.mkdtemp()
    >>> job_file = example_job(root)  # a day of predictions, and job.toml
    >>> from streameval.jobs import StoreLockedError, run_job
    >>> from streameval.jobs.lock import StoreLock
    >>> os.makedirs(f"{root}/store")
    >>> with StoreLock(f"{root}/store/LOCK", "another run"):  # held while this run starts
    ...     try:
    ...         run_job(f"{root}/job.toml", quiet=True)
    ...     except StoreLockedError as exc:
    ...         print(str(exc)[:32])
    another run holds the store's lo

    """


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
        with open(path, encoding="utf-8", errors="replace") as f:
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
        return "an empty or unreadable lock"
    return f"pid {info.get('pid')} on host {info.get('host')!r}, started {info.get('started_at')}"


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class StoreLock:
    """A context manager holding the lock file ``path`` for one run."""

    def __init__(self, path: str, command: str) -> None:
        self.path, self.command = path, command
        self.text: str | None = None
        self.took_over: str | None = None
        self._fd: int | None = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _prepare(self) -> tuple[int, str, str]:
        """A flocked temporary file holding this run's details: (fd, path, text)."""
        text = json.dumps(_now_info(self.command), sort_keys=True)
        folder = os.path.dirname(self.path) or "."
        try:
            fd, tmp = tempfile.mkstemp(prefix=".LOCK.", suffix=".new", dir=folder)
            os.fchmod(fd, default_mode())
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, text.encode())
            os.fsync(fd)
        except OSError as exc:
            raise write_failed(self.path, exc) from None
        return fd, tmp, text

    def acquire(self) -> None:
        """Take the lock, taking over a stale one; raise StoreLockedError if it is held."""
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        except OSError as exc:
            raise write_failed(self.path, exc) from None
        fd, tmp, text = self._prepare()
        try:
            for _ in range(5):
                try:
                    os.link(tmp, self.path)  # appears complete, and held, or not at all
                except FileExistsError:
                    if self._take_over(tmp):
                        break
                    continue
                break
            else:
                raise self._refuse(None, " and it changed hands repeatedly while this run waited")
        except BaseException:
            os.close(fd)
            raise
        finally:
            Path(tmp).unlink(missing_ok=True)  # taken over: already renamed into place
        self._fd, self.text = fd, text
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        """Delete lock temporaries of runs killed before linking them (nobody holds them)."""
        folder = Path(os.path.dirname(self.path) or ".")
        for p in folder.glob(".LOCK.*.new"):
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                continue
            try:
                if _try_flock(fd):
                    p.unlink(missing_ok=True)
            finally:
                os.close(fd)

    def _take_over(self, tmp: str) -> bool:
        """Replace a lock whose owner is gone by ours; refuse one that is held."""
        try:
            old = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False  # released meanwhile: try to create it again
        try:
            info, _ = _read(self.path)
            if not _try_flock(old):
                raise self._refuse(info)
            # no flock held: the owner is gone, unless the lock is another host's (flock may
            # not reach across hosts) or was written by a streameval that took no flock
            if info is not None and owner_alive(info):
                raise self._refuse(info)
            try:  # the file we hold is still the lock (not replaced by another run)?
                if os.stat(self.path).st_ino != os.fstat(old).st_ino:
                    return False
            except FileNotFoundError:
                return False
            os.replace(tmp, self.path)
            self.took_over = (
                f"took over a stale lock left by {_describe(info)} "
                "(that process is no longer running)"
            )
            return True
        finally:
            os.close(old)

    def _refuse(self, info: dict[str, Any] | None, why: str = "") -> StoreLockedError:
        return StoreLockedError(
            f"another run holds the store's lock {self.path} ({_describe(info)}){why}; hint: "
            f"wait for it to finish; if no such run is active, remove the lock file: "
            f"rm {self.path}"
        )

    def release(self) -> None:
        """Remove the lock file if it is still this run's, and drop the flock."""
        if self.text is None or self._fd is None:
            return
        try:
            if os.stat(self.path).st_ino == os.fstat(self._fd).st_ino:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)
            self._fd, self.text = None, None
