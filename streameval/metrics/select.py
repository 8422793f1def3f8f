"""Choosing metric columns by name, shared by every task's metric table."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError, close_matches


def select_metrics(metrics: Sequence[str] | None, available: Sequence[str]) -> list[str]:
    """The metric columns asked for (all when None), or an InputError naming unknown ones."""
    if metrics is None:
        return list(available)
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    unknown = [m for m in names if m not in available]
    if unknown:
        raise InputError(
            f"expected metric names of this task, got unknown {unknown!r}; hint: "
            + close_matches(unknown[0], available)
        )
    return names
