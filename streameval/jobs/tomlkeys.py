"""Reading a TOML table key by key: types checked, offending keys named by their path.

>>> t = Table("job.toml", "task", {"label": "y", "lable": "x"}, ["label", "score"])
Traceback (most recent call last):
...
streameval.jobs.tomlkeys.JobConfigError: job.toml: task.lable: unknown key; did you mean 'label'?
>>> t = Table("job.toml", "task", {"score": [1]}, ["label", "score"])
>>> t.take("score", "str")
Traceback (most recent call last):
...
streameval.jobs.tomlkeys.JobConfigError: job.toml: task.score: expected a string, got an array [1]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InputError, close_matches

MISSING = object()


class JobConfigError(InputError):
    """The job file is unreadable, or one of its keys has a wrong name, type or value.

    Raised by :func:`~streameval.jobs.load_job` and :func:`~streameval.jobs.run_job`; the
    message names the file and the key's path (``task.lable``), with a hint. An
    :class:`~streameval.InputError`.

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.jobs import JobConfigError, load_job
    >>> path = os.path.join(tempfile.mkdtemp(), "job.toml")
    >>> _ = open(path, "w").write('''
    ... [source]
    ... paths = ["preds"]
    ... [task]
    ... lable = "y"
    ... [store]
    ... path = "store"
    ... ''')
    >>> try:
    ...     load_job(path)
    ... except JobConfigError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    task.lable: unknown key; did you mean 'label' or 'labels'?

    """


class Table:
    """A TOML table being read: takes keys with type checks, then rejects leftover keys."""

    def __init__(self, file: str, where: str, data: Any, allowed: tuple[str, ...] | list[str]):
        self.file, self.where, self.allowed = file, where, list(allowed)
        if not isinstance(data, dict):
            raise self.error(where, f"expected a table, got {type_name(data)}")
        self.data = dict(data)
        self.done(final=False)

    def path(self, key: str) -> str:
        """The path of ``key`` in the file (``task.label``)."""
        return f"{self.where}.{key}" if self.where else key

    def error(self, path: str, message: str) -> JobConfigError:
        """The error naming the file and the key's path."""
        return JobConfigError(f"{self.file}: {path}: {message}")

    def has(self, key: str) -> bool:
        """Whether the table has ``key`` (not yet taken)."""
        return key in self.data

    def take(self, key: str, kind: str, default: Any = MISSING) -> Any:
        """The value of ``key`` checked against ``kind`` (see :func:`_check`)."""
        if key not in self.data:
            if default is MISSING:
                raise self.error(self.path(key), f"missing; expected {KINDS[kind]}")
            return default
        return check(self, self.path(key), self.data.pop(key), kind)

    def done(self, final: bool = True) -> None:
        """Reject keys that are not allowed (with a close-match hint), or left unused."""
        for key in self.data:
            if key in self.allowed:
                if final:
                    raise self.error(
                        self.path(key), "not used with the other settings of this table"
                    )
                continue
            hint = close_matches(key, self.allowed)
            if not hint.startswith("did you mean"):
                hint = "allowed keys are: " + ", ".join(repr(k) for k in self.allowed)
            raise self.error(self.path(key), f"unknown key; {hint}")


KINDS = {
    "str": "a string",
    "strs": "a list of strings",
    "str|strs": "a string or a list of strings",
    "int": "an integer",
    "num": "a number",
    "nums": "a number or a list of numbers",
    "bool": "true or false",
    "scalar": "a string, number or boolean",
    "scalars": "a list of strings, numbers or booleans",
    "table": "a table",
    "tables": "an array of tables ([[outputs]])",
}


def type_name(value: Any) -> str:
    """How a TOML value's type is named in messages."""
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    names.update({list: "an array", dict: "a table"})
    return names.get(type(value), type(value).__name__)


def check(table: Table, path: str, value: Any, kind: str) -> Any:
    """``value`` if it is of ``kind`` (a key of :data:`KINDS`), else the error naming ``path``."""

    def ok_scalar(v: Any) -> bool:
        return isinstance(v, str | int | float | bool)

    def ok_num(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    checks: dict[str, Callable[[Any], bool]] = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "num": ok_num,
        "bool": lambda v: isinstance(v, bool),
        "scalar": ok_scalar,
        "table": lambda v: isinstance(v, dict),
    }
    if kind in checks:
        if not checks[kind](value):
            raise table.error(path, f"expected {KINDS[kind]}, got {type_name(value)} {value!r}")
        return value
    single, items = {
        "strs": (None, "str"),
        "str|strs": ("str", "str"),
        "nums": ("num", "num"),
        "tables": (None, "table"),
    }.get(kind, (None, "scalar"))
    if single is not None and not isinstance(value, list):
        if not checks[single](value):
            raise table.error(path, f"expected {KINDS[kind]}, got {type_name(value)} {value!r}")
        return [value]
    if not isinstance(value, list):
        raise table.error(path, f"expected {KINDS[kind]}, got {type_name(value)} {value!r}")
    return [check(table, f"{path}[{i}]", v, items) for i, v in enumerate(value)]


def choice(table: Table, key: str, value: str, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``, else the error with a close match."""
    if value not in allowed:
        hint = close_matches(value, allowed)
        hint = hint if hint.startswith("did you mean") else "allowed: " + ", ".join(allowed)
        raise table.error(
            table.path(key), f"expected one of {', '.join(allowed)}, got {value!r}; {hint}"
        )
    return value
