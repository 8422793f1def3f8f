"""Day states pooled by sliding pools instead of merges: history baselines, rollup windows.

Day after day, a ``history`` baseline's days and a trailing rollup window's days move by one
day: the pool of the next day is this one's with one day added and one taken away.
:class:`DayPools` codes the job's day states once (:class:`~streameval.kernels.pooled.DayIndex`,
over a bounded run of days, built again further on when the days move past it) and keeps
pools (:class:`~streameval.kernels.pooled.Pool`), each moved to the next days asked for by
whatever is nearest (a rollup window, a check's history: a 28-day window and the 28 days
before it are one pool moved by two days); the slices a check failed or warned on are left
out of the days a pool holds (a check's history pool keeps them out as it moves). What a
check or a rollup reads is a :class:`PooledState`:
a state whose metric table the compiled finalize computes from the pool's runs, and whose
table (which the pool does not hold: it keeps float sums per group, not per bucket) is
merged from the accepted days only if something asks for it. Drift checks read score
histograms from the index itself (:meth:`DayPools.histogram`: a day's rows, a pool's
counts; no snapshot taken). A run computing one or two days (a nightly run) would pay for
the index more than it saves, unless its drift checks read it: its day tables are summed
as they are instead (:meth:`~streameval.kernels.pooled.Pooled.of_tables`), into the same
sums, bit for bit. Binary states without weights are pooled so (their counts are integers,
exact under removal); others are merged as before (None). The rollups finalize many
windows' pooled states in one call (:class:`TaggedPools`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

import polars as pl

from ..kernels.collect import pairs_fit, state_runs
from ..kernels.metrics import runs_grouped
from ..kernels.pooled import DayIndex, Pool, Pooled, index_of
from ..kernels.runs import I64, Grouped, TaggedRuns
from ..spec import Spec, merged_spec
from ..state import State, merge
from ..states import kind_module
from ..stats.drift import Counted, Sorted
from ..tasks.binary import state as binary_state


class LazyState(State):
    """A state whose table is ``whole()``'s, built on first use (most readers need none)."""

    _whole: Callable[[], State]
    _built: pl.DataFrame | None

    def __init__(self, spec: Spec, whole: Callable[[], State]) -> None:
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "_whole", whole)
        object.__setattr__(self, "_built", None)

    @property
    def table(self) -> pl.DataFrame:
        """The state's table (``whole()``'s, built once, on first use)."""
        if self._built is None:
            object.__setattr__(self, "_built", self._whole().table)
        assert self._built is not None
        return self._built


class PooledState(LazyState):
    """A state whose rows a pool holds: runs for its metric table, a table when asked for.

    The table (the keys, ``bucket`` and every column) is ``merged()``, the merge of the
    accepted days, built on first use.
    """

    _pooled: Pooled

    def __init__(self, spec: Spec, pooled: Pooled, merged: Callable[[], State]) -> None:
        super().__init__(spec, merged)
        object.__setattr__(self, "_pooled", pooled)

    @property
    def rows(self) -> int:
        """The pooled (group, bucket) rows."""
        return int(self._pooled.words.size)

    def __len__(self) -> int:
        return self.rows  # (the table's rows, without merging it)

    def column_sums(self, names: list[str]) -> pl.DataFrame:
        """The pool's integer columns ``names`` summed per group (no table merged)."""
        return self._pooled.group_ints(names)

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
    return State(
        state.spec,
        state.table.join(
            rejected, on=keys, how="anti", nulls_equal=True, maintain_order="left_right"
        ),
    )


def _unfound(spec: Spec) -> Spec:
    """The spec less the label values found in the data (merged as their union)."""
    return replace(spec, classes=())


def poolable(spec: Spec) -> bool:
    """Whether states of ``spec`` are pooled by sliding: binary ones without weights.

    (Nor bootstrap replicates: their tables hold more than the keys and buckets.)
    """
    return kind_module(spec) is binary_state and not spec.weighted and not spec.replicates


#: A run computing fewer days than this sums each pool's day tables (no index).
POOLED_DAYS = 3
#: The days' score histograms kept (a day's window is the next day's previous one).
DAYS_HELD = 4
#: The fewest days an index covers (more where a pool reaches further back).
INDEX_DAYS = 32


class DayPools:
    """Pooled states of a run's days: sliding pools, or sums without an index.

    With ``sliding`` (a run computing several days, or one whose drift checks read the
    index), pools move along the index of the entries' states; without (a run computing one
    or two days, for which coding the stored days would cost more), each pool's tables are
    summed as they are (:meth:`~streameval.kernels.pooled.Pooled.of_tables`). Either gives
    the same sums.
    """

    def __init__(
        self,
        state: Callable[[int], State],
        entries: int,
        sliding: bool = True,
        reach: int = 0,
        spec: Callable[[int], Spec] | None = None,
    ) -> None:
        self._state, self._entries, self._sliding = state, entries, sliding
        self._spec = spec or (lambda j: self._state(j).spec)
        self._index: DayIndex | None = None
        self._first = self._end = 0  # the entries the index holds: first … end − 1
        # the most entries one pool held (at first: the most a pool of this run may hold)
        self._widest = reach
        self._pools: list[Pool] = []
        #: The last days' histograms on this index (by its day).
        self._days: dict[int, Sorted] = {}
        #: The index's groups of the slices left out of its pools (by table).
        self._slotted: dict[int, tuple[pl.DataFrame, I64]] = {}
        self._failed = False

    def state(self, members: Sequence[int], without: Mapping[int, pl.DataFrame]) -> State | None:
        """The pooled state of entries ``members`` (sorted) less each entry's ``without[j]``.

        None where these states are not pooled (the caller merges them).
        """
        # the members' spec, as merge makes it: the label values found on any day, checked
        spec = merged_spec([self._spec(j) for j in members])
        keys = list(spec.keys)

        def accepted() -> list[State]:
            """The members' states, less the slices ``without`` names."""
            return [accepted_state(self._state(j), without.get(j), keys) for j in members]

        pooled = self._slid(members, without) if self._sliding else summed(accepted())
        if pooled is None:
            return None
        if spec.found:
            binary_state.check_found(spec)
        return PooledState(spec, pooled, lambda: merge(accepted()))

    def covers(self, first: int, last: int) -> bool:
        """Whether the index holds entries ``first`` … ``last`` (built again if it did not)."""
        return self._sliding and self._indexed(first, last) is not None

    def histogram(
        self, members: Sequence[int], without: Mapping[int, pl.DataFrame]
    ) -> Sorted | None:
        """The score histogram of entries ``members`` (sorted) less each one's ``without[j]``.

        Its buckets are positions on the index: only a histogram of this index (another
        call's, while the index stands) is compared with it. None where these states are
        not pooled, or hold rows without a label (which the pool does not count).
        """
        index, keys = self._readable(members)
        if index is None:
            return None
        groups = index.coding.groups
        first = members[0] - self._first
        if len(members) == 1 and not any(k.height for k in without.values()):
            if first not in self._days:  # (a day's: read again as the next day's baseline)
                self._days[first] = Sorted.of_weighed(index.weighed(first), groups, keys, index)
                while len(self._days) > DAYS_HELD:
                    del self._days[next(iter(self._days))]
            return self._days[first]
        pool = self._moved(members, index, self._slots(without))
        return Sorted.of_weighed(pool.weighed(), groups, keys, index)

    @contextmanager
    def baseline(
        self, members: Sequence[int], without: Mapping[int, pl.DataFrame]
    ) -> Iterator[Sorted | Counted | None]:
        """:meth:`histogram`, for the block: a pool's read in place (no histogram copied).

        Against days that a pool holds, the block reads the pool's counts where they are
        (:class:`~streameval.stats.drift.Counted`), less the rows ``without`` names; nothing
        may move the pools meanwhile.
        """
        if len(members) == 1:
            yield self.histogram(members, without)
            return
        index, keys = self._readable(members)
        if index is None:
            yield None
            return
        pool = self._moved(members, index, self._slots(without))
        pos, neg = index_of(index.int_names, ("pos", "neg"))
        rows = pool.group_sums[pos] + pool.group_sums[neg]
        yield Counted.of_counts(
            index.groups(), keys, rows, index.starts, pool.sums[pos], pool.sums[neg], index
        )

    def _readable(self, members: Sequence[int]) -> tuple[DayIndex | None, list[str]]:
        """The index holding entries ``members`` and their keys, where drift reads it.

        No index where these states are not pooled, or hold rows without a label (which
        the pool does not count).
        """
        spec = merged_spec([self._spec(j) for j in members])
        if not self._sliding or spec.unlabeled:
            return None, []
        index = self._indexed(members[0], members[-1])
        if index is not None and spec.found:
            binary_state.check_found(spec)
        return index, list(spec.keys)

    def _slid(self, members: Sequence[int], without: Mapping[int, pl.DataFrame]) -> Pooled | None:
        """The sums of a pool moved to ``members``, less the slices ``without``."""
        index = self._indexed(members[0], members[-1])
        if index is None:
            return None
        return self._moved(members, index, self._slots(without)).pooled()

    def _moved(self, members: Sequence[int], index: DayIndex, out: Mapping[int, I64]) -> Pool:
        """The pool moved to ``members`` less the groups ``out``, with the least work.

        (A new one: all of them.) Pools are shared by whatever asks for days near theirs: a
        trailing window and a history of as many days one day apart move one pool by two
        days, not two by all. A history that leaves out the slices its check rejected,
        judged day after day, keeps a pool of its own (its rejected rows stay out of it).
        """
        days = [j - self._first for j in members]
        pool = min(self._pools, key=lambda p: p.moves(days, out), default=None)
        if pool is None or pool.moves(days, out) >= 2 * len(days):
            pool = Pool(index)
            self._pools.append(pool)
        return pool.move(days, out)

    def _slots(self, without: Mapping[int, pl.DataFrame]) -> dict[int, I64]:
        """The index's groups of the slices ``without`` names, by the index's day.

        Kept while the index stands, by table: a day's rejected slices are the same table
        for every pool that leaves them out.
        """
        assert self._index is not None
        out = {}
        for j, keys in without.items():
            if keys.height:
                held = self._slotted.get(id(keys))
                if held is None or held[0] is not keys:
                    held = (keys, self._index.group_slots(keys))
                    self._slotted[id(keys)] = held
                out[j - self._first] = held[1]
        return out

    def _indexed(self, first: int, last: int) -> DayIndex | None:
        """An index holding entries ``first`` … ``last`` (built again when it does not).

        A new index starts where the widest pool so far reaches back from ``last`` and holds
        twice that many entries (at least :data:`INDEX_DAYS`): the days move past it every
        so many days, and memory holds a bounded run of days however many the run computes.
        """
        if self._failed:
            return None
        self._widest = max(self._widest, last + 1 - first)
        if self._index is None or first < self._first or last >= self._end:
            start = max(0, min(first, last + 1 - self._widest))
            end = min(self._entries, start + max(2 * self._widest, INDEX_DAYS))
            states = [self._state(j) for j in range(start, end)]
            if not _alike(states):
                self._failed = True
                return None
            stored = list(binary_state.merge_ops(states[0].spec))
            self._index = DayIndex.build([s.table for s in states], states[0].spec, stored)
            self._first, self._end, self._pools, self._days = start, end, [], {}
            self._slotted.clear()
            if self._index is None:
                self._failed = True
        return self._index


def summed(states: list[State]) -> Pooled | None:
    """The sums of the states' tables (None: not pooled, or they differ: merged)."""
    if not _alike(states):
        return None
    stored = list(binary_state.merge_ops(states[0].spec))
    return Pooled.of_tables([s.table for s in states], states[0].spec, stored)


def regrouped(
    grouped: Grouped, states: list[State], out: pl.DataFrame, spec: Spec
) -> Grouped | None:
    """``grouped`` with the groups ``out`` names aggregated again from ``states``.

    ``out`` holds rows of some of the keys; ``states`` hold those groups' rows alone (a
    history's days less the slices rejected on each), summed as a pool sums them and
    aggregated at ``grouped``'s thresholds with DeLong's sums (:func:`.runs_grouped`): the
    groups' aggregates as a pool of the same rows gives them. None where the states are not
    summed so (the caller pools the days).
    """
    kept = grouped.frame.join(
        out, on=out.columns, how="anti", nulls_equal=True, maintain_order="left_right"
    )
    if not any(s.table.height for s in states):  # (those groups have no accepted rows)
        return Grouped(kept, grouped.thresholds)
    pooled = summed(states)
    runs = None if pooled is None else pooled.runs()
    if runs is None or not pairs_fit(int(runs.pos.sum()), int(runs.neg.sum())):
        return None
    frame = runs_grouped(runs, spec, list(grouped.thresholds), variance=True)
    if frame is None:
        return None
    return Grouped(pl.concat([kept, frame.select(kept.columns)]), grouped.thresholds)


class DayRuns(State):
    """A day's state whose runs are its own table's: a rollup's one-day window."""

    def __init__(self, state: State) -> None:
        object.__setattr__(self, "spec", state.spec)
        object.__setattr__(self, "table", state.table)

    def coded(self) -> object | None:
        """The table's rows as the compiled finalize's runs, or None."""
        return state_runs(self.table, self.spec)


class GroupedState(LazyState):
    """A state whose rows a job's rollup already aggregated per group (:class:`Grouped`).

    Its metric table at those thresholds reads the aggregates; anything else (its table,
    other thresholds) reads ``whole()``, the state itself, built on first use.
    """

    _grouped: Grouped

    def __init__(self, spec: Spec, grouped: Grouped, whole: Callable[[], State]) -> None:
        super().__init__(spec, whole)
        object.__setattr__(self, "_grouped", grouped)

    def __bool__(self) -> bool:
        return True  # (not the table's rows: that would build it)

    def coded(self) -> object | None:
        """The rows aggregated per group."""
        return self._grouped


class TaggedPools(LazyState):
    """States finalized as one from their runs: each one's rows tagged with more keys.

    ``spec`` is the states' spec with the tag columns appended to its keys; ``parts`` holds
    each state (pooled, or a :class:`DayRuns`) and a one-row frame of its tags' values (a
    rollup window's name, end day and days). The metric table comes from the states' runs
    in one vectorized finalize, which keeps the aggregates of each part ``keep`` flags (one
    flag per part; :meth:`grouped`); the table, the states' tables tagged, is built only if
    asked for.
    """

    _parts: list[tuple[State, pl.DataFrame]]
    _keep: tuple[bool, ...]
    _coded: TaggedRuns | None

    def __init__(
        self,
        spec: Spec,
        parts: list[tuple[State, pl.DataFrame]],
        keep: Sequence[bool] = (),
    ) -> None:
        super().__init__(spec, self._tagged)
        object.__setattr__(self, "_parts", parts)
        object.__setattr__(self, "_keep", tuple(keep) or (False,) * len(parts))
        object.__setattr__(self, "_coded", None)

    def _tagged(self) -> State:
        """The states' tables, each tagged, as one state."""
        tagged = [
            s.table.join(tags, how="cross", maintain_order="left_right") for s, tags in self._parts
        ]
        return State(self.spec, pl.concat(tagged).select(self._columns()))

    def __len__(self) -> int:
        return sum(len(state) for state, _ in self._parts)

    def column_sums(self, names: list[str]) -> pl.DataFrame:
        """Each state's integer columns ``names`` summed per group, tagged."""
        sums = [
            s.column_sums(names).join(tags, how="cross", maintain_order="left_right")
            for s, tags in self._parts
        ]
        return pl.concat(sums).select(*self.spec.keys, *names)

    def _columns(self) -> list[str]:
        first = self._parts[0][0].table.columns
        keys = list(self.spec.keys)
        return [*keys, *(c for c in first if c not in keys)]

    def coded(self) -> object | None:
        """Each state's runs with its tags, or None where one has none."""
        parts = []
        for state, tags in self._parts:
            runs = state.coded()
            if runs is None:
                return None
            parts.append((runs, tags))
        spec = self._parts[0][0].spec
        coded = TaggedRuns(spec, parts, keep=self._keep) if parts else None  # type: ignore[arg-type]
        object.__setattr__(self, "_coded", coded)
        return coded

    def grouped(self) -> list[Grouped | None]:
        """Each part's aggregates as its metric table read them, None where not kept.

        ([]: none were computed.)
        """
        coded = self._coded
        if coded is None or len(coded.grouped) != len(self._parts):
            return []
        return [None if f is None else Grouped(f, coded.thresholds) for f in coded.grouped]


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
