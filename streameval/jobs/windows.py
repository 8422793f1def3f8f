"""Rollup windows ending at a day: ``Nd`` (trailing N days), ``mtd``, ``ytd`` and ``all``.

>>> from datetime import date
>>> w = parse_window("7d")
>>> w.start(date(2026, 10, 10)), w.contains(date(2026, 10, 4), date(2026, 10, 10))
(datetime.date(2026, 10, 4), True)
>>> parse_window("mtd").start(date(2026, 10, 10))
datetime.date(2026, 10, 1)
>>> parse_window("all").start(date(2026, 10, 10)) is None
True
>>> parse_window("7days")
Traceback (most recent call last):
...
ValueError: expected a window like '1d', '7d', '28d', 'mtd', 'ytd' or 'all', got '7days'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

_TRAILING = re.compile(r"^\s*(\d+)\s*d\s*$")


@dataclass(frozen=True)
class Window:
    """A set of days ending at (and including) an end day.

    ``kind`` is ``"trailing"`` (``days`` calendar days), ``"mtd"`` (month to date),
    ``"ytd"`` (year to date) or ``"all"`` (every day up to the end day). The last three are
    *running* windows: each day's value is the previous day's merged with that day's state.
    """

    name: str
    kind: str
    days: int = 0

    @property
    def running(self) -> bool:
        """Whether the window grows by one day at a time from a period start."""
        return self.kind != "trailing"

    def start(self, end: date) -> date | None:
        """The first day of the window ending at ``end`` (None: unbounded)."""
        if self.kind == "trailing":
            return end - timedelta(days=self.days - 1)
        if self.kind == "mtd":
            return end.replace(day=1)
        if self.kind == "ytd":
            return end.replace(month=1, day=1)
        return None

    def contains(self, day: date, end: date) -> bool:
        """Whether ``day`` is in the window ending at ``end``."""
        first = self.start(end)
        return day <= end and (first is None or day >= first)

    def continues(self, previous: date, day: date) -> bool:
        """Running windows: whether ``day``'s window extends ``previous``'s (same period)."""
        first = self.start(day)
        return first is None or previous >= first


def parse_window(text: str) -> Window:
    """Parse ``"1d"``, ``"7d"``, ``"28d"``, ``"mtd"``, ``"ytd"`` or ``"all"``."""
    if not isinstance(text, str):
        raise ValueError(f"expected a window name (a string), got {text!r}")
    lowered = text.strip().lower()
    if lowered in ("mtd", "ytd", "all"):
        return Window(lowered, lowered)
    match = _TRAILING.match(lowered)
    if match and 1 <= int(match.group(1)) <= 100_000:
        days = int(match.group(1))
        return Window(f"{days}d", "trailing", days)
    raise ValueError(
        f"expected a window like '1d', '7d', '28d', 'mtd', 'ytd' or 'all', got {text!r}"
    )
