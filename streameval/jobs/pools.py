"""The days a ``history`` baseline pools, summed by sliding pools instead of merges.

Judging day after day, a history baseline's days move by one day each time: the pool of the
next judged day is this one's with one day added and one taken away. :class:`HistoryPools`
codes the job's day states once (:class:`~streameval.kernels.pooled.DayIndex`) and keeps a
:class:`~streameval.kernels.pooled.Pool` per shape of history (its ``days`` and
``same_weekday``), moved from judged day to judged day; the slices a check failed or warned
on are taken out for the moment of a snapshot. What a check reads is a :class:`PooledState`:
a state whose metric table the compiled finalize computes from the pool's runs, and whose
table (which the pool does not hold: it keeps float sums per group, not per bucket) is
merged from the accepted days only if something asks for it. A run judging one or two days
(a nightly run) would pay for the index more than it saves: its histories' day tables are
summed as they are instead (:meth:`~streameval.kernels.pooled.Pooled.of_tables`), into the
same kind of state. Binary states without weights are pooled so (their counts are
integers, exact under removal); others are merged as before (None).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from ..kernels.collect import pairs_fit
from ..kernels.pooled import DayIndex, Pool, Pooled
from ..spec import Spec, merged_spec
from ..state import State, merge
from ..states import kind_module
from ..tasks.binary import state as binary_state


class PooledState(State):
    """A state whose rows a pool holds: runs for its metric table, a table when asked for.

    The table (the keys, ``bucket`` and every column) is ``merged()``, the merge of the
    accepted days, built on first use.
    """

    _pooled: Pooled
    _merged: Callable[[], State]
    _built: pl.DataFrame | None

    def __init__(self, spec: Spec, pooled: Pooled, merged: Callable[[], State]) -> None:
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "_pooled", pooled)
        object.__setattr__(self, "_merged", merged)
        object.__setattr__(self, "_built", None)

    @property
    def table(self) -> pl.DataFrame:
        """The pooled days' state table, merged once, on first use."""
        if self._built is None:
            object.__setattr__(self, "_built", self._merged().table)
        assert self._built is not None
        return self._built

    def coded(self) -> object | None:
        """The pooled rows as the compiled finalize's runs, or None."""
        runs = self._pooled.runs()
        if not runs.value.size or not pairs_fit(int(runs.pos.sum()), int(runs.neg.sum())):
            return None  # (an empty table, or counts too large: the table's finalize)
        return runs


def accepted_state(state: State, rejected: pl.DataFrame | None, keys: list[str]) -> State:
    """``state`` less the rows of the slices ``rejected`` names (its ``keys``; None: none)."""
    if rejected is None or not rejected.height:
        return state
    return State(state.spec, state.table.join(rejected, on=keys, how="anti", nulls_equal=True))


def _unfound(spec: Spec) -> Spec:
    """The spec less the label values found in the data (merged as their union)."""
    return replace(spec, classes=())


def poolable(spec: Spec) -> bool:
    """Whether states of ``spec`` are pooled by sliding: binary ones without weights.

    (Nor bootstrap replicates: their tables hold more than the keys and buckets.)
    """
    return kind_module(spec) is binary_state and not spec.weighted and not spec.replicates


class HistoryPools:
    """The states of a run's ``history`` baselines: sliding pools, or sums without an index.

    With ``sliding`` (a run judging several days), one pool per shape of history moves along
    the index of the entries' states; without (a run judging one or two days, for which
    coding every stored day would cost more), each history's tables are summed as they are
    (:meth:`~streameval.kernels.pooled.Pooled.of_tables`).
    """

    def __init__(self, state: Callable[[int], State], entries: int, sliding: bool = True) -> None:
        self._state, self._entries, self._sliding = state, entries, sliding
        self._index: DayIndex | None = None
        self._first = 0  # the entry of the index's first day
        self._pools: dict[Any, Pool] = {}
        self._failed = False

    def state(
        self, shape: Any, members: Sequence[int], without: Mapping[int, pl.DataFrame]
    ) -> State | None:
        """The pooled state of entries ``members`` less each entry's slices ``without[j]``.

        ``shape`` names the pool that moves along with this history (one per check shape).
        None where these states are not pooled (the caller merges them).
        """
        # the members' spec, as merge makes it: the label values found on any day, checked
        spec = merged_spec([self._state(j).spec for j in members])
        keys = list(spec.keys)

        def accepted() -> list[State]:
            """The members' states, less the slices ``without`` names."""
            return [accepted_state(self._state(j), without.get(j), keys) for j in members]

        pooled = self._slid(shape, members, without) if self._sliding else self._summed(accepted())
        if pooled is None:
            return None
        if spec.found:
            binary_state.check_found(spec)
        return PooledState(spec, pooled, lambda: merge(accepted()))

    def _slid(
        self, shape: Any, members: Sequence[int], without: Mapping[int, pl.DataFrame]
    ) -> Pooled | None:
        """The sums of the shape's pool moved to ``members``, less the slices ``without``."""
        index = self._indexed(members[0])
        if index is None:
            return None
        pool = self._pools.get(shape)
        if pool is None:
            pool = self._pools[shape] = Pool(index)
        pool.move([j - self._first for j in members])
        codes = {
            j - self._first: index.group_codes(keys) for j, keys in without.items() if keys.height
        }
        return pool.pooled(codes)

    def _summed(self, states: list[State]) -> Pooled | None:
        """The sums of the states' tables (None: not pooled, or they differ: merged)."""
        if not _alike(states):
            return None
        stored = list(binary_state.merge_ops(states[0].spec))
        return Pooled.of_tables([s.table for s in states], states[0].spec, stored)

    def _indexed(self, first: int) -> DayIndex | None:
        """The index of entries ``first`` … the last (built once: later days read later entries)."""
        if self._failed:
            return None
        if self._index is None or first < self._first:
            spec = self._state(first).spec
            states = [self._state(j) for j in range(first, self._entries)]
            if not _alike(states):
                self._failed = True
                return None
            stored = list(binary_state.merge_ops(spec))
            self._index = DayIndex.build([s.table for s in states], spec, stored)
            self._first, self._pools = first, {}
            if self._index is None:
                self._failed = True
        return self._index


def _alike(states: Sequence[State]) -> bool:
    """Whether the states are pooled: poolable, of one spec (found values aside) and schema.

    (Otherwise merging them names what differs.)
    """
    spec, schema = states[0].spec, states[0].table.schema
    return (
        poolable(spec)
        and all(_unfound(s.spec) == _unfound(spec) for s in states)
        and all(s.table.schema == schema for s in states)
    )
