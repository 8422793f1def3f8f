"""``streameval evaluate --table drift``: each group's score drift from a baseline.

The baseline (``--against``) is a state file (written by ``State.write`` or kept in a job's
store: recognised by its metadata, and verified) or predictions read with the same options,
grouped by ``--against-by`` (default: the ``--by`` keys; none given: one baseline for every
group).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import pyarrow.parquet as pq

from .accumulate import accumulate
from .errors import InputError
from .io import SPEC_KEY
from .progress import at_terminal, showing
from .state import State, read_state
from .tasks.registry import offers


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``--table drift``."""
    parser.add_argument(
        "--against",
        action="append",
        metavar="PATH",
        help="--table drift: the baseline, a state file or predictions (repeatable: files)",
    )
    parser.add_argument(
        "--against-by",
        action="append",
        metavar="KEY",
        help="--table drift: the --by keys the baseline predictions are grouped by "
        "(default: every --by key)",
    )
    parser.add_argument(
        "--bins", type=int, help="--table drift: bins of the PSI and JS distance (10)"
    )


def is_state_file(path: str) -> bool:
    """Whether ``path`` is a Parquet file carrying a state's metadata (then read as a state)."""
    if not os.path.isfile(path):
        return False
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, ValueError):  # (not Parquet: read as predictions, which names the error)
        return False
    return SPEC_KEY in meta


def baseline(args: argparse.Namespace, columns: dict[str, Any], thresholds: list[float]) -> State:
    """The ``--against`` baseline: a state file read and verified, or predictions accumulated."""
    paths = list(args.against)
    if len(paths) == 1 and is_state_file(paths[0]):
        if args.against_by is not None:
            raise InputError(
                f"expected --against-by with predictions, got it with the state file "
                f"{paths[0]!r} (its keys are its own); hint: drop --against-by, or "
                "accumulate the state by those keys"
            )
        return read_state(paths[0])
    by = args.by if args.against_by is None else args.against_by
    source = paths if len(paths) > 1 else paths[0]
    with showing("baseline", at_terminal()):
        return accumulate(source, **drift_columns(columns, by), thresholds=thresholds)


def drift_columns(columns: dict[str, Any], by: list[str] | None = None) -> dict[str, Any]:
    """:func:`accumulate`'s keywords for a drift table: labels optional where a task has them.

    Score drift reads no label, so rows whose label has not arrived count.
    """
    out = dict(columns) if by is None else {**columns, "by": by}
    if offers(columns.get("task", "binary"), "unlabeled"):
        out["labels"] = "optional"
    return out
