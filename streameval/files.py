"""Writing files safely: atomic replacement, the user's file mode, owned temporaries.

Every file streameval writes goes through :func:`atomic_write`: the bytes go to a temporary
file in the target's folder, are flushed to disk, take the mode any other new file of the
user would get (``0o666`` less the umask, not the ``0o600`` of a temporary file; a file
rewritten keeps its own mode) and are renamed into place, so a reader sees either the old
file or the new one, never a torn one. A path that is a symlink has the file it names
replaced, not the link.

A temporary file's name carries a *tag* (``.metrics.csv.streameval-1f2e3d4c5b6a.x8k2.tmp``):
a job tags its temporaries with its own identity, so after a crash it can delete exactly the
temporaries it left and never a file of another program or another job
(:func:`remove_temporaries`).

>>> import tempfile, os, stat
>>> folder = tempfile.mkdtemp()
>>> target = os.path.join(folder, "out.txt")
>>> atomic_write_bytes(target, b"hello", tag="streameval-doc")
>>> open(target, "rb").read(), oct(stat.S_IMODE(os.stat(target).st_mode)) == oct(default_mode())
(b'hello', True)
>>> remove_temporaries(folder, "streameval-doc")
0
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .errors import StreamevalError

DEFAULT_TAG = "streameval"


class FileWriteError(StreamevalError):
    """A file could not be written (no space, no permission, ...); the message names it."""


def default_mode() -> int:
    """The mode a new file of this process gets: ``0o666`` less the umask.

    Read from ``/proc/self/status`` where it says (no change to the umask, so no race with
    other threads); elsewhere by setting and restoring the umask.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _mode_of(target: Path) -> int:
    """The mode a rewrite of ``target`` keeps: its own, or the default for a new file."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return default_mode()


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


def _check_tag(tag: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", tag):
        raise ValueError(f"a temporary file tag is letters, digits, '-' and '_', got {tag!r}")
    return tag


def write_failed(path: str | os.PathLike[str], exc: OSError) -> FileWriteError:
    """A clear error for an OSError met while writing ``path``."""
    why = exc.strerror or str(exc) or type(exc).__name__
    return FileWriteError(
        f"cannot write {os.fspath(path)!r}: {why}; hint: check that the folder is writable "
        "and the disk has free space"
    )


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[str], None], *, tag: str = DEFAULT_TAG
) -> None:
    """Write ``path`` through ``write(temporary path)``, fsync, then rename into place.

    The file gets the user's default mode; an OSError becomes a :class:`FileWriteError`
    naming ``path``. On any failure the temporary file is removed and ``path`` is untouched.
    """
    target = Path(os.path.realpath(path))  # through a symlink: replace the file it names
    prefix = f".{target.name}.{_check_tag(tag)}."
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise write_failed(path, exc) from None
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fchmod(f.fileno(), _mode_of(target))
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise write_failed(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, tag: str = DEFAULT_TAG
) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`)."""

    def write(tmp: str) -> None:
        Path(tmp).write_bytes(data)

    atomic_write(path, write, tag=tag)


class Hasher(Protocol):
    """What :func:`hash_file` needs of a ``hashlib`` object."""

    def update(self, data: bytes, /) -> None:
        """Add bytes."""

    def hexdigest(self) -> str:
        """The digest as hex."""


def hash_file(path: str | os.PathLike[str], hasher: Hasher) -> str:
    """Feed a file's bytes to ``hasher`` in 1 MiB blocks; return its hex digest.

    >>> import tempfile, hashlib
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(b"abc")
    >>> hash_file(f.name, hashlib.sha256())[:12]
    'ba7816bf8f01'
    """
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            hasher.update(block)
    return hasher.hexdigest()


def is_temporary(name: str, tag: str) -> bool:
    """Whether a file name is one of :func:`atomic_write`'s temporaries with this tag.

    >>> is_temporary(".m.csv.streameval-ab12.k3x_9q.tmp", "streameval-ab12")
    True
    >>> is_temporary(".m.csv.k3x_9q.tmp", "streameval-ab12")
    False
    """
    return name.startswith(".") and name.endswith(".tmp") and f".{tag}." in name


def remove_temporaries(folder: str | os.PathLike[str], tag: str) -> int:
    """Delete the temporaries tagged ``tag`` directly in ``folder``; return how many.

    Files without the tag (another program's, another job's) are never touched.
    """
    base = Path(folder)
    if not base.is_dir():
        return 0
    removed = 0
    for p in base.iterdir():
        if is_temporary(p.name, _check_tag(tag)) and p.is_file() and not p.is_symlink():
            p.unlink(missing_ok=True)
            removed += 1
    return removed
