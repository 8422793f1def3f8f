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
    """Base class of every error streameval raises on bad input."""


class InputError(StreamevalError):
    """The source data does not fit the evaluation asked for."""


class SpecMismatchError(StreamevalError):
    """Two states cannot be merged because they were computed differently."""


class StateFileError(StreamevalError):
    """A state file is missing, corrupt or of an unknown schema version."""


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
    """

    def __init__(self, problems: dict[str, list[int]]) -> None:
        self.problems = problems
        text = "; ".join(
            f"{what}: {rows} row(s) outside it, in {groups} group(s)"
            for what, (rows, groups) in problems.items()
        )
        super().__init__(f"null for the groups concerned: {text}")


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
