"""A sliding window of merged states: a check's history baseline, day after day.

A ``history`` baseline pools the ``days`` days before each judged window. Judged one day
after the other, consecutive baselines share all but a day at each end, so instead of
merging ``days`` states for every day, :class:`Pool` keeps the window as a queue of two
stacks (the newest days' running merge, and the oldest days' suffix merges): a day joins
with one merge, leaves with none (a flip, every ``days`` days, merges each once more), and
the window's state is one merge of the two. Merging is re-aggregating sums, so any
grouping gives the same state (floating-point sums to their last bits).

>>> import polars as pl, streameval as se
>>> days = [se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.1 * d, 0.9]}), label="y",
...                       score="p", precision="exact") for d in range(5)]
>>> pool = Pool()
>>> pool.window(1, 4, lambda j: days[j]).table["pos"].sum()
3
>>> pool.window(2, 5, lambda j: days[j]).metrics()["n"].item()
6
"""

from __future__ import annotations

from collections.abc import Callable

from ..state import State, merge


class Pool:
    """The merged state of a sliding range of entries ``[lo, hi)``, both ends moving on."""

    def __init__(self) -> None:
        self._reset(0)

    def _reset(self, at: int) -> None:
        self.lo = self.hi = at
        self.front: list[State] = []  # suffix merges: front[-1] holds every front entry
        self.back: list[State] = []  # entries since the last flip, oldest first
        self.back_merged: State | None = None

    def window(self, lo: int, hi: int, state: Callable[[int], State]) -> State | None:
        """The merge of ``state(j)`` for ``lo <= j < hi`` (None: no entry).

        A range that does not follow the last one (moving back, or jumping past it) is
        merged anew in one step.
        """
        if lo < self.lo or hi < self.hi or lo >= self.hi:
            self._reset(lo)
            if hi > lo:
                self.back = [state(j) for j in range(lo, hi)]
                self.back_merged = merge(self.back)
                self.hi = hi
        for j in range(self.hi, hi):
            day = state(j)
            self.back.append(day)
            self.back_merged = day if self.back_merged is None else merge([self.back_merged, day])
        self.hi = max(self.hi, hi)
        while self.lo < lo:
            if not self.front:
                self._flip()
            self.front.pop()
            self.lo += 1
        front = self.front[-1] if self.front else None
        parts = [s for s in (front, self.back_merged) if s is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else merge(parts)

    def _flip(self) -> None:
        """Move the back's entries to the front as suffix merges (the oldest on top)."""
        merged: State | None = None
        for day in reversed(self.back):
            merged = day if merged is None else merge([day, merged])
            self.front.append(merged)
        self.back, self.back_merged = [], None
