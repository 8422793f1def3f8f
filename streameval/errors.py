"""Exceptions raised by streameval.

Every error says what was expected, what was found, and a hint.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class StreamevalError(ValueError):
    """Base class of every error streameval raises on bad input.

    A ``ValueError``: catch it to handle any of streameval's errors (:class:`InputError`,
    :class:`SpecMismatchError`, :class:`StateFileError`, and the job runner's). Its message
    says what was expected, what was found, and a hint.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
    >>> try:
    ...     se.evaluate(df, label="y", score="p", task="ranking")
    ... except se.StreamevalError as exc:
    ...     print(type(exc).__name__, isinstance(exc, ValueError))
    InputError True

    """


class InputError(StreamevalError):
    """The source data does not fit the evaluation asked for.

    Raised by :func:`streameval.evaluate`, :func:`streameval.accumulate` and the
    :class:`~streameval.State` methods for a missing column, an option of the wrong type or
    value, a null or a value outside the task's domain (a third label value, a non-finite
    score, a negative weight), or a method the state's task has not.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
    >>> try:
    ...     se.evaluate(df, label="y", score="prob")
    ... except se.InputError as exc:
    ...     print(exc)
    expected a score column 'prob', but the data has no such column; columns are: 'y', 'p'

    """


class SpecMismatchError(StreamevalError):
    """Two states cannot be merged because they were computed differently.

    Raised by :func:`streameval.merge` and :meth:`State.merge <streameval.State.merge>`
    when the states' specs differ (columns, group keys, precision, thresholds, bootstrap
    settings) or their tables' column types do; the message names every difference.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
    >>> fine = se.accumulate(df, label="y", score="p")
    >>> coarse = se.accumulate(df, label="y", score="p", precision=8)
    >>> try:
    ...     fine.merge(coarse)
    ... except se.SpecMismatchError as exc:
    ...     print(str(exc).split(";")[0])
    expected states computed the same way, but their specs differ (precision: 11 vs 8)

    """


class StateFileError(StreamevalError):
    """A state file is missing, corrupt or of an unknown schema version.

    Raised by :func:`streameval.read_state` for a file that is missing, not a state file,
    of another schema version, without a checksum, altered or corrupted, or whose spec
    contradicts its table: a state file is used whole or not at all.

    Examples
    --------
    >>> import os, tempfile, polars as pl, streameval as se
    >>> path = os.path.join(tempfile.mkdtemp(), "plain.parquet")
    >>> pl.DataFrame({"y": [0, 1], "p": [0.2, 0.9]}).write_parquet(path)
    >>> try:
    ...     se.read_state(path)
    ... except se.StateFileError as exc:
    ...     print(str(exc).split("; ")[1])
    hint: this is a Parquet file, but not one written by State.write

    """


def close_matches(name: str, candidates: Iterable[str]) -> str:
    """Return a hint naming the candidates closest to ``name``.

    >>> close_matches("scroe", ["score", "label", "segment"])
    "did you mean 'score'?"
    """
    names = list(candidates)
    lowered = {c.lower(): c for c in names}
    matches = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    if matches:
        return "did you mean " + " or ".join(repr(lowered[m]) for m in matches) + "?"
    shown = ", ".join(repr(c) for c in names[:20])
    more = f" (and {len(names) - 20} more)" if len(names) > 20 else ""
    return f"columns are: {shown}{more}"


class DomainWarning(UserWarning):
    """Metrics left null because rows fall outside their domain, with the counts.

    ``problems`` maps a message part (``"msle needs label and prediction > −1"``) to
    [offending rows, groups concerned], so the warnings of several units add up into one.

    Issued by :func:`streameval.evaluate` and :meth:`State.metrics
    <streameval.State.metrics>` when a metric's domain is violated in some groups (a
    metric asked for by name in ``metrics=`` raises :class:`InputError` instead).

    Parameters
    ----------
    problems : dict of str to list of int
        Each violated domain, with [offending rows, groups concerned].

    Examples
    --------
    >>> import warnings, polars as pl, streameval as se
    >>> reg = pl.DataFrame({"y": [-2.0, 1.0, 2.0, 3.0], "yhat": [1.0, 1.5, 2.0, 2.5]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     table = se.evaluate(reg, task="regression", label="y", prediction="yhat")
    >>> warning = caught[0].message
    >>> isinstance(warning, se.DomainWarning), table["msle"].item()
    (True, None)
    >>> warning.problems["msle needs label and prediction > −1"]
    [1, 1]

    """

    def __init__(self, problems: dict[str, list[int]]) -> None:
        super().__init__(problems)  # (its one argument: rebuilt from it in another process)
        self.problems = problems

    def __str__(self) -> str:
        text = "; ".join(
            f"{what}: {rows} row(s) outside it, in {groups} group(s)"
            for what, (rows, groups) in self.problems.items()
        )
        return f"null for the groups concerned: {text}"


def caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package.

    Called by the function that warns: a warning then names the user's line, however deep in
    the package it was raised (a fixed level named an internal line on some paths).

    >>> caller_level() >= 1
    True
    """
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
