"""A job's checks: each day's windows judged against bounds and baselines, from stored states.

Each output day (each value of the partition key) is judged by every ``[[checks]]`` table:
the check's window ending at the day is merged from the stored partition states, its metric
measured per slice, and compared with the baseline (:mod:`.judge`). All the day's p-values
are one family, adjusted together (``[checking] correction``: Benjamini–Hochberg by
default), so testing thousands of slices a day keeps the share of false alarms at the
checks' level. No source data is read.

A day's check rows are kept in the store (``checks/day=….parquet``) with a digest of
everything they depend on (the checks, the states of every partition its windows and
baselines read, and, for ``history`` baselines, the previous day's verdicts); a day whose
digest is unchanged is not judged again.

Baselines: ``previous`` is the window of the same length just before (a ``7d`` window's
seven days before it); ``history`` pools the ``days`` days before the window (of its end
weekday with ``same_weekday``), leaving out each slice's days on which this check failed or
warned (binary states without weights: a sliding pool of the days, :mod:`.pools`, moved by
a day per judged day, the rejected slices left out of its days; other states: the days
are merged once for every check that reads them, and a check takes that pool less the
slices it rejected, merged again from their accepted days); ``reference`` is a state
file's slices; ``champion`` another model's value on the same rows (a paired task).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import date, timedelta
from typing import Any

import numpy as np
import polars as pl

from ..errors import InputError
from ..kernels.runs import Grouped
from ..report import write_report
from ..spec import Spec, merged_spec
from ..state import State, merge, read_state, score_histogram
from ..stats.drift import Sorted
from ..stats.multiple import adjust
from ..tasks.binary.metrics import as_thresholds
from .checkconfig import CheckConfig
from .config import JobConfig
from .judge import (
    bounded,
    champion_rows,
    check_reference_keys,
    compare,
    drift_rows,
    measure,
    metric_table,
    screen,
    verdicts,
    with_baseline,
)
from .pools import (
    POOLED_DAYS,
    DayPools,
    GroupedState,
    LazyState,
    accepted_state,
    regrouped,
)
from .rollup import FLAT, Entry, StateCache, day_label
from .store import Store, digest_of

CHECKS_FORMAT = 1
SAVE_EVERY = 0.5  # seconds between manifest writes while days are judged
#: About the most check rows judged together (days of a block judged at once).
BATCH_ROWS = 500_000
#: The sorted score histograms kept for drift checks: a day's window and its baselines.
HISTOGRAMS_HELD = 4
#: The baselines made of the job's own days (pooled where their states are).
DAYS = ("previous", "history")
#: Statuses that leave a slice's day out of a ``history`` baseline.
REJECTED = ("fail", "warn")
#: The checks table's columns after the keys (see docs/checks.md).
COLUMNS = (
    "metric", "value", "n", "positives", "baseline_kind", "baseline", "baseline_n",
    "difference", "difference_lo", "difference_hi", "tolerance", "p_value", "p_adjusted",
    "status", "reason",
)  # fmt: skip


class Checks:
    """Judges the stale days of a job's store and keeps their rows in it."""

    def __init__(
        self,
        job: JobConfig,
        store: Store,
        manifest: dict[str, Any],
        warn: Callable[[str], None],
    ) -> None:
        self.job, self.store, self.manifest, self.warn = job, store, manifest, warn
        self.key = job.source.partition_key
        self.by = job.task.by
        self.checks = {c.name: c for c in job.checks}
        self.kwargs = job.task.metric_kwargs()
        #: The thresholds the metric tables hold confusion counts at (binary tasks).
        self._thresholds = tuple(as_thresholds(self.kwargs.get("threshold", 0.5)))
        self.settings = digest_of(
            CHECKS_FORMAT,
            job.checking.correction,
            [c.settings() for c in job.checks],
            manifest.get("spec"),
            self.kwargs,
            self.key,
        )
        self.references: dict[str, State] = {}
        #: The partition states to read through (shared with the rollups; None: its own).
        self.states: StateCache | None = None
        self._states = StateCache(store, [])
        self._merges: dict[tuple[int, ...], State | None] = {}
        self._tables: dict[tuple[int, ...], pl.DataFrame] = {}
        #: The rows of the checks judged for a block of days at once (by check and entry).
        self._prejudged: dict[tuple[str, int], pl.DataFrame] = {}
        #: The slices each check rejected on each judged day (a history reads them daily).
        self._rejections: dict[tuple[str, int], pl.DataFrame | None] = {}
        self._pools: dict[tuple[int, ...], State | None] = {}
        #: The sliding pools of ``history`` baselines and drift checks (None: merged, or none).
        self._history: DayPools | None = None
        #: The sorted score histograms of the states drift read last (a day's window is the
        #: next day's ``previous`` baseline), by the state's id (the state kept with it).
        self._histograms: dict[int, tuple[State, Sorted]] = {}

    def next_windows(self) -> frozenset[int]:
        """The lengths of the last day's windows the next run's checks read again.

        A one-day check of the next day has the last day's ``1d`` window as its
        ``previous`` baseline and the last ``days`` days as its ``history`` (not by
        weekday): the rollups store those windows' aggregates (:mod:`.aggregates`).
        Drift checks read histograms, not aggregates.
        """
        lengths: set[int] = set()
        for c in self.checks.values():
            if not self.key or c.drift or c.window.days != 1:
                continue
            if c.baseline == "previous":
                lengths.add(1)
            elif c.baseline == "history" and not c.same_weekday:
                lengths.add(c.days)
        return frozenset(lengths)

    def read_windows(self) -> frozenset[int]:
        """The lengths of the windows whose aggregates this run's checks read.

        A metric check reads its window's and its ``previous`` window's, and its ``history``
        (not by weekday: those days are no window); the next run's (:meth:`next_windows`)
        are stored. The rollups keep these windows' aggregates, with DeLong's variance,
        and no other's. Drift checks read histograms, not aggregates.
        """
        lengths = set(self.next_windows())
        for c in self.checks.values():
            if c.drift:
                continue
            lengths.add(c.window.days)
            if c.baseline == "history" and not c.same_weekday:
                lengths.add(c.days)
        return frozenset(lengths)

    def reach(self) -> int:
        """The most days a check's window and its baseline reach over (0: none pooled)."""
        spans = [c.window.days + c.lookback for c in self.checks.values() if c.baseline in DAYS]
        return max(spans, default=0)

    def drifts(self) -> bool:
        """Whether drift checks read the pools' histograms (a previous window or a history).

        Such a run pools its days on an index (:class:`.DayPools`) even for one new day:
        the histograms of both sides are read from it, no pool summed for them alone.
        """
        return bool(self.key) and any(c.drift and c.baseline in DAYS for c in self.checks.values())

    def name(self, entry: Entry) -> str:
        """A day's name in the manifest: the partition value (one ``*`` without a key)."""
        return entry.value if self.key else FLAT

    def digests(self, entries: Sequence[Entry]) -> list[str]:
        """Each judged day's digest (every day with a key; the last one without)."""
        if not self.key:
            return [digest_of(self.settings, [[e.value, e.digest] for e in entries])]
        reach = max(c.window.days + c.lookback for c in self.checks.values())
        chained = any(c.baseline == "history" for c in self.checks.values())
        out: list[str] = []
        for i, e in enumerate(entries):
            first = e.day - timedelta(days=reach)  # type: ignore[operator]
            members = [[m.value, m.digest] for m in entries[: i + 1] if m.day >= first]  # type: ignore[operator]
            previous = out[-1] if chained and out else None
            out.append(digest_of(self.settings, members, previous))
        return out

    def run(
        self, entries: Sequence[Entry], save: Callable[[], None], force: bool = False
    ) -> list[str]:
        """Judge the days whose digest changed (every day with ``force``); their names."""
        cached: dict[str, Any] = self.manifest.setdefault("checks", {})
        if not self.checks or not entries:
            cached.clear()
            return []
        points = list(range(len(entries))) if self.key else [len(entries) - 1]
        digests = self.digests(entries)
        wanted = {self.name(entries[i]) for i in points}
        for name in [n for n in cached if n not in wanted]:
            del cached[name]
        judged: list[str] = []
        verdicts_by_day: dict[int, pl.DataFrame] = {}
        self._tables.clear()  # (a retry after a repair: the entries may have changed)
        self._prejudged.clear()
        self._merges.clear()
        self._rejections.clear()
        self._states = self.states if self.states is not None else StateCache(self.store, entries)
        stale = [
            (n, i)
            for n, i in enumerate(points)
            if force or not self._fresh(cached.get(self.name(entries[i])), digests[n])
        ]
        history = any(c.baseline == "history" for c in self.checks.values())
        pooled = self.key and (history or self.drifts())
        sliding = len(stale) >= POOLED_DAYS or self._states.slide
        self._history = self._states.pools(sliding) if pooled else None
        saved = time.monotonic()
        # each day's rows written by a thread of their own while the next days are judged;
        # the manifest names them once written
        written: list[tuple[str, Future[dict[str, Any]]]] = []

        def recorded(strict: bool = True) -> None:
            """Put the days' written files in the manifest, once each is written.

            ``strict``: an error writing one is raised (after the others are named), else
            left to the error already raised.
            """
            failed = None
            for name, record in written:
                try:
                    cached[name] = record.result()
                except Exception as exc:  # (a full disk, say)
                    failed = failed or exc
            written.clear()
            if failed is not None and strict:
                raise failed

        # the stale days in blocks judged together, of about BATCH_ROWS check rows (the
        # first of two days: a day's rows are counted then)
        start, block = 0, 2
        with ThreadPoolExecutor(1) as writer:
            try:
                while start < len(stale):
                    part = stale[start : start + block]
                    start += len(part)
                    days = [i for _, i in part]
                    self._tabulate(entries, days)
                    self._prejudge(entries, days)
                    # (no check reads an earlier day's verdicts: the block's days judged at once)
                    ready = self.judge_days(entries, days, {}) if not history else {}
                    most = 1
                    for n, i in part:
                        name = self.name(entries[i])
                        rows = (
                            ready.pop(i)
                            if i in ready
                            else self.judge_days(entries, [i], verdicts_by_day)[i]
                        )
                        label = day_label(self.key, entries[i])
                        record = writer.submit(
                            self.store.write_rows, rows, "checks", label, digests[n]
                        )
                        written.append((name, record))
                        verdicts_by_day[i] = rows
                        judged.append(name)
                        most = max(most, rows.height)
                        if time.monotonic() - saved >= SAVE_EVERY:  # a killed run resumes here
                            recorded()
                            save()
                            saved = time.monotonic()
                    block = max(2, BATCH_ROWS // most)
            except BaseException:  # (the days written so far are named, as a repair reads)
                recorded(strict=False)
                raise
            recorded()
        if judged:
            save()
        self._tables.clear()
        self._prejudged.clear()
        self._merges.clear()
        self._rejections.clear()
        self._pools.clear()
        self._histograms.clear()
        self._history = None
        if self.states is None:  # (its own: let go of the states now, see StateCache.close)
            self._states.close()
        return judged

    def _fresh(self, entry: dict[str, Any] | None, digest: str) -> bool:
        """Whether a day's manifest ``entry`` names stored rows of its ``digest``."""
        return (
            entry is not None
            and entry.get("digest") == digest
            and os.path.exists(self.store.path(entry.get("file", "")))
        )

    def _forget(self, entries: Sequence[Entry], i: int) -> None:
        """Drop the cached states and tables no later day's checks read."""
        if not self.key:
            return
        reach = max(c.window.days + c.lookback for c in self.checks.values())
        first = entries[i].day - timedelta(days=reach)  # type: ignore[operator]
        for j in [j for j in self._states.held() if entries[j].day < first]:  # type: ignore[operator]
            self._states.drop(j)
        for cache in (self._merges, self._tables):
            for members in [m for m in cache if not m or entries[max(m)].day < first]:  # type: ignore[operator]
                del cache[members]

    def rows(self, name: str) -> pl.DataFrame:
        """A judged day's stored rows (checked against their digest)."""
        entry = self.manifest["checks"][name]
        what = f"the stored check rows of {name!r}"
        return self.store.read_table(entry["file"], entry.get("blake2b"), what)

    # -- one day -------------------------------------------------------------------------

    def judge_days(
        self, entries: Sequence[Entry], days: list[int], known: dict[int, pl.DataFrame]
    ) -> dict[int, pl.DataFrame]:
        """Every check's rows at each entry of ``days``, each day's p-values adjusted together.

        Each day is one family; the verdicts and the order are computed once for all the
        days (each row reads its own alone). ``known``: the judged days' rows (a ``history``
        baseline reads the earlier days' verdicts, so such days are judged one at a time).
        """
        parts, spans, start = [], [], 0
        for i in days:
            self._pools.clear()  # (the previous day's history pools: not read again)
            judged = [self._judge(check, entries, i, known) for check in self.checks.values()]
            judged = [p for p in judged if p.width]
            self._forget(entries, i)  # (the states and tables no later day reads)
            if judged:  # (each day is in its own windows: a check always has rows to judge)
                day = pl.concat(judged, how="diagonal_relaxed")
                parts.append(day)
                spans.append((start, start + day.height))
                start += day.height
        done: dict[int, pl.DataFrame] = {}
        if parts:
            rows = pl.concat(parts, how="diagonal_relaxed")
            p = rows["p_value"].fill_null(float("nan")).to_numpy()
            correction = self.job.checking.correction
            adjusted = [adjust(p[a:b], correction) for a, b in spans]
            rows = rows.with_columns(
                pl.Series("p_adjusted", np.concatenate(adjusted)).fill_nan(None)
            )
            rows = self._order(verdicts(rows, self.checks))
            if not self.key:
                return {days[0]: rows}
            index = {entries[i].day: i for i in days}
            for (day,), part in rows.partition_by(self.key, as_dict=True).items():
                done[index[day]] = part
        for i in days:
            if i not in done:
                done[i] = self._order(pl.DataFrame({"_day": [entries[i].day]}).clear())
        return done

    def _judge(
        self, check: CheckConfig, entries: Sequence[Entry], i: int, known: dict[int, pl.DataFrame]
    ) -> pl.DataFrame:
        if (check.name, i) in self._prejudged:
            return self._prejudged.pop((check.name, i))
        kind = self.job.task.kind
        end = entries[i].day
        members = self._window(check, entries, i)
        if not members:
            return pl.DataFrame()
        slices = [k for k in self.by]
        every = check.baseline in DAYS  # (the window's own slices)
        if check.drift:
            try:
                rows = self._pooled_drift(check, entries, i, known, members, every)
                if rows is None:
                    state = self._merged(members)
                    assert state is not None
                    baseline, _ = self._baseline_state(check, entries, i, known, slices)
                    rows = drift_rows(state, baseline, check, every, self._histogram)
                rows = bounded(rows, check)
            except InputError as exc:  # (a reference state whose buckets differ, say)
                raise InputError(f"check {check.name!r}: {exc}") from None
        elif check.baseline == "champion":
            state = self._merged(members)
            assert state is not None
            rows = champion_rows(state, check, self._table(members), slices)
            rows = compare(rows, check, kind)
        else:
            current = measure(self._table(members), check, kind, slices)
            baseline_rows, on = self._baseline(check, entries, i, known, slices)
            rows = _compared(current, baseline_rows, on, check, kind, every)
        return screen(rows, check, [*_labels(check), pl.lit(end, pl.Date).alias("_day")])

    def _window(self, check: CheckConfig, entries: Sequence[Entry], i: int) -> list[int]:
        """The entries of the check's window ending at entry ``i``."""
        if not self.key:
            return list(range(len(entries)))
        start, _ = self._span(check, entries, i)
        return [j for j in range(i + 1) if entries[j].day >= start]  # type: ignore[operator]

    def _span(self, check: CheckConfig, entries: Sequence[Entry], i: int) -> tuple[date, date]:
        """The first and last day of the check's window ending at entry ``i``."""
        end: date = entries[i].day  # type: ignore[assignment]
        return end - timedelta(days=check.window.days - 1), end

    def _histogram(self, state: State) -> Sorted:
        """``state``'s sorted score histogram, kept for the few states drift reads again."""
        held = self._histograms.pop(id(state), None)
        if held is None or held[0] is not state:
            held = (state, score_histogram(state))
        self._histograms[id(state)] = held  # (the last read, last)
        while len(self._histograms) > HISTOGRAMS_HELD:
            del self._histograms[next(iter(self._histograms))]
        return held[1]

    def _merged(self, members: list[int]) -> State | None:
        """The merged state of the entries ``members`` (None: no entries)."""
        return _merged_in(self._merges, members, self._state)

    def _table(self, members: list[int]) -> pl.DataFrame:
        """The metric table of the entries ``members``' merged state, with what checks need."""
        key = tuple(members)
        if key not in self._tables:
            state = self._aggregated(members) or self._merged(members)
            assert state is not None
            metrics = [c for c in self.checks.values() if not c.drift]
            self._tables[key] = metric_table(state, metrics, self.kwargs)
        return self._tables[key]

    def _prejudge(self, entries: Sequence[Entry], days: list[int]) -> None:
        """The rows of the checks no verdict bears on, judged for all ``days`` at once.

        A metric check against bounds or its ``previous`` window reads no verdict of an
        earlier day: where the metric tables of all its windows are at hand
        (:meth:`_tabulate`), its rows of every day are measured, joined with their
        baselines and compared as one table, tagged by day (each row reads its own alone),
        instead of one small table a day. A day's family is adjusted as before.
        """
        if not self.key or not self.by or len(days) < 2:
            return  # (without slices, a day's one row: judged day by day)
        kind, slices = self.job.task.kind, list(self.by)
        by_day = {entries[i].day: i for i in days}
        for check in self.checks.values():
            if check.drift or check.baseline not in (None, "previous"):
                continue
            windows = [(i, self._window(check, entries, i)) for i in days]
            before = [(i, self._previous(check, entries, i)) for i in days if check.baseline]
            before = [(i, m) for i, m in before if m]  # (the first day has none)
            if any(tuple(m) not in self._tables for _, m in [*windows, *before]):
                continue  # (a window finalized alone: judged day by day)
            on = [*slices, "_day"]
            current = measure(self._tagged(entries, windows), check, kind, on)
            baseline = measure(self._tagged(entries, before), check, kind, on) if before else None
            rows = _compared(current, baseline, on, check, kind, check.baseline is not None)
            rows = screen(rows, check, _labels(check))
            for (day,), part in rows.partition_by("_day", as_dict=True).items():
                self._prejudged[check.name, by_day[day]] = part

    def _tagged(
        self, entries: Sequence[Entry], windows: list[tuple[int, list[int]]]
    ) -> pl.DataFrame:
        """The metric tables of ``windows`` (entries, by the entry judged), tagged by its day."""
        tables = [
            self._tables[tuple(m)].with_columns(pl.lit(entries[i].day, pl.Date).alias("_day"))
            for i, m in windows
        ]
        return pl.concat(tables, how="vertical")

    def _tabulate(self, entries: Sequence[Entry], days: list[int]) -> None:
        """The metric tables of the windows the ``days``' checks read, finalized as one.

        The windows whose aggregates the rollups kept (or stored) are tagged and finalized
        in one vectorized pass: each row of the aggregates reads that row alone, so each
        window's part is its own table (:meth:`_table`), without a finalize per day.
        """
        metrics = [c for c in self.checks.values() if not c.drift]
        windows: set[tuple[int, ...]] = set()
        for i in days if self.key else []:
            for check in metrics:
                windows.add(tuple(self._window(check, entries, i)))
                if check.baseline == "previous":
                    windows.add(tuple(self._previous(check, entries, i)))
        parts: list[tuple[tuple[int, ...], GroupedState]] = []
        for members in sorted(windows - set(self._tables)):
            state = self._aggregated(list(members)) if members else None
            if isinstance(state, GroupedState):
                parts.append((members, state))
        spec = parts[0][1].spec if parts else None
        if len(parts) < 2 or any(state.spec != spec for _, state in parts):
            return  # (one window, or windows of specs that differ: each finalized alone)
        assert spec is not None
        frames = []
        for n, (_, state) in enumerate(parts):
            grouped = state.coded()
            assert isinstance(grouped, Grouped)
            frames.append(grouped.frame.with_columns(pl.lit(n, pl.Int32).alias(_WINDOW)))
        if any(frame.schema != frames[0].schema for frame in frames):
            return  # (keys typed apart, say: each window finalized alone)
        tagged = Grouped(pl.concat(frames, how="vertical"), self._thresholds)
        keyed = replace(spec, keys=(_WINDOW, *spec.keys))

        def whole() -> State:  # (the windows' states, tagged: built if something reads it)
            merged = [self._merged(list(members)) for members, _ in parts]
            tables = [
                s.table.with_columns(pl.lit(n, pl.Int32).alias(_WINDOW))
                for n, s in enumerate(merged)
                if s
            ]
            return State(keyed, pl.concat(tables, how="vertical_relaxed"))

        table = metric_table(GroupedState(keyed, tagged, whole), metrics, self.kwargs)
        for (n,), part in table.partition_by(_WINDOW, as_dict=True, include_key=False).items():
            self._tables[parts[n][0]] = part

    def _aggregated(
        self,
        members: list[int],
        rejected: dict[int, pl.DataFrame] | None = None,
        slices: Sequence[str] = (),
    ) -> State | None:
        """The entries' state as the rollups aggregated it per group, or None.

        The aggregates kept by this run's rollups, or stored by the last run's. Less each
        entry's ``rejected`` slices (rows of the ``slices`` keys): the slices rejected on
        some day are summed again from their accepted days alone, the others read as they
        are. (Its metric table reads the aggregates; anything else merges the entries. Not
        with optional labels: the rows still without one are counted from the state.)
        """
        grouped = self._states.aggregates.grouped(members, self._thresholds)
        if grouped is None:
            return None
        spec = merged_spec([self._states.spec(j) for j in members])
        if spec.unlabeled:
            return None
        if not rejected:
            return GroupedState(spec, grouped, lambda: self._pooled(members))
        out = pl.concat(list(rejected.values())).unique()
        again = regrouped(grouped, self._accepted(members, rejected, slices, out), out, spec)
        if again is None:
            return None
        return GroupedState(spec, again, lambda: merge(self._accepted(members, rejected, slices)))

    def _accepted(
        self,
        members: list[int],
        rejected: dict[int, pl.DataFrame],
        slices: Sequence[str],
        only: pl.DataFrame | None = None,
    ) -> list[State]:
        """The entries' states less the slices rejected on each (``only``: those slices' rows)."""
        states = []
        for j in members:
            state = self._state(j)
            table = state.table
            if only is not None:
                table = table.join(
                    only, on=list(slices), how="semi", nulls_equal=True, maintain_order="left_right"
                )
            states.append(accepted_state(State(state.spec, table), rejected.get(j), list(slices)))
        return states

    def _state(self, j: int) -> State:
        return self._states.get(j)

    def _baseline(
        self,
        check: CheckConfig,
        entries: Sequence[Entry],
        i: int,
        known: dict[int, pl.DataFrame],
        slices: list[str],
    ) -> tuple[pl.DataFrame | None, list[str]]:
        """The baseline's measured rows and the keys they join on (None: no baseline)."""
        kind = self.job.task.kind
        state, on = self._baseline_state(check, entries, i, known, slices)
        if state is None:
            return None, on
        if check.baseline == "previous":  # (a window of the metric table: cached)
            table = self._table(self._previous(check, entries, i))
        else:
            table = metric_table(state, [check], self.kwargs)
        return measure(table, check, kind, on), on

    def _previous(self, check: CheckConfig, entries: Sequence[Entry], i: int) -> list[int]:
        """The entries of the window of the same length just before the check's."""
        start, _ = self._span(check, entries, i)
        first = start - timedelta(days=check.window.days)
        return [j for j in range(i) if first <= entries[j].day < start]  # type: ignore[operator]

    def _baseline_state(
        self,
        check: CheckConfig,
        entries: Sequence[Entry],
        i: int,
        known: dict[int, pl.DataFrame],
        slices: list[str],
    ) -> tuple[State | None, list[str]]:
        """The baseline's state and the keys it joins on (None: no baseline)."""
        if check.baseline is None:
            return None, slices
        if check.baseline == "reference":
            reference = self._reference(check)
            return reference, check_reference_keys(reference, slices, check)
        if check.baseline == "previous":
            return self._merged(self._previous(check, entries, i)), slices
        members, rejected = self._history_days(check, entries, i, known)
        if not members:
            return None, slices
        pooled = self._slid(check, members, rejected, slices)
        if pooled is not None:
            return pooled, slices
        if not rejected:  # (every check's history of these days: merged once)
            return self._pooled(members), slices
        if not slices:  # (a day it failed is left out whole)
            empty = self._state(members[0])
            kept_days = [self._state(j) for j in members if j not in rejected]
            return (
                merge(kept_days) if kept_days else State(empty.spec, empty.table.clear())
            ), slices
        if tuple(members) not in self._pools:  # (no other check pooled these days)
            return merge(self._accepted(members, rejected, slices)), slices
        # the pooled days less every slice rejected on some day, and those slices merged
        # again from their accepted days alone
        out = pl.concat(list(rejected.values())).unique()
        pooled = self._pooled(members)
        kept = pooled.table.join(
            out, on=slices, how="anti", nulls_equal=True, maintain_order="left_right"
        )
        again = merge(self._accepted(members, rejected, slices, out)).table
        return State(pooled.spec, pl.concat([kept, again.select(kept.columns)])), slices

    def _history_days(
        self, check: CheckConfig, entries: Sequence[Entry], i: int, known: dict[int, pl.DataFrame]
    ) -> tuple[list[int], dict[int, pl.DataFrame]]:
        """A ``history`` baseline's entries and the slices the check rejected on each."""
        start, end = self._span(check, entries, i)
        first = start - timedelta(days=check.days)
        members = [
            j
            for j in range(i)
            if first <= entries[j].day < start  # type: ignore[operator]
            and (not check.same_weekday or entries[j].day.weekday() == end.weekday())  # type: ignore[union-attr]
        ]
        rejected: dict[int, pl.DataFrame] = {}
        for j in members:
            rows = self._rejected(check, entries, j, known)
            if rows is not None and rows.height:
                rejected[j] = rows
        return members, rejected

    def _pooled_drift(
        self,
        check: CheckConfig,
        entries: Sequence[Entry],
        i: int,
        known: dict[int, pl.DataFrame],
        members: list[int],
        every: bool,
    ) -> pl.DataFrame | None:
        """A drift check's rows against the previous window or a history, from the pools.

        Both score histograms are read from the sliding pools' index (their buckets its
        positions; a pool's counts where they are), neither state merged nor snapshot taken.
        None where the days are not pooled (the caller merges them).
        """
        pools = self._history
        if pools is None or check.baseline not in DAYS:
            return None
        rejected: dict[int, pl.DataFrame] = {}
        if check.baseline == "previous":
            base = self._previous(check, entries, i)
        else:
            base, rejected = self._history_days(check, entries, i, known)
            if not self.by:  # (a day it failed is left out whole)
                base, rejected = [j for j in base if j not in rejected], {}
        if not pools.covers(min(base[0], members[0]) if base else members[0], members[-1]):
            return None
        current = pools.histogram(members, {})
        if current is None:
            return None
        window = LazyState(self._spec(members), lambda: self._merged(members))  # type: ignore[arg-type, return-value]
        if not base:  # (no baseline: the window's slices, each measure null)
            return drift_rows(window, None, check, every, lambda _: current)
        with pools.baseline(base, rejected) as baseline:  # (a pool's counts, read in place)
            if baseline is None:
                return None
            before = LazyState(self._spec(base), lambda: merge([self._state(j) for j in base]))
            histograms = {id(window): current, id(before): baseline}
            return drift_rows(window, before, check, every, lambda s: histograms[id(s)])

    def _spec(self, members: list[int]) -> Spec:
        """The merged spec of the entries ``members`` (no state read)."""
        return merged_spec([self._states.spec(j) for j in members])

    def _slid(
        self,
        check: CheckConfig,
        members: list[int],
        rejected: dict[int, pl.DataFrame],
        slices: list[str],
    ) -> State | None:
        """The history's state from the sliding pools (None: its states are merged).

        Without slices a day with a rejection is left out whole; a pool with no rejections
        is shared by the checks of the same days.
        """
        if not slices:
            members, rejected = [j for j in members if j not in rejected], {}
            if not members:
                return None
        aggregated = None if check.drift else self._aggregated(members, rejected, slices)
        if aggregated is not None:  # (the rollups' window of these days)
            return aggregated
        if self._history is None:
            return None
        if not rejected and tuple(members) in self._pools:
            return self._pools[tuple(members)]
        state = self._history.state(members, rejected)
        if state is not None and not rejected:
            self._pools[tuple(members)] = state
        return state

    def _pooled(self, members: list[int]) -> State:
        """The merged state of the entries ``members`` (history pools: kept for one day)."""
        pooled = _merged_in(self._pools, members, self._state)
        assert pooled is not None  # (a history has days: checked by the caller)
        return pooled

    def _rejected(
        self, check: CheckConfig, entries: Sequence[Entry], j: int, known: dict[int, pl.DataFrame]
    ) -> pl.DataFrame | None:
        """The slices on which ``check`` failed or warned at entry ``j`` (kept for the run)."""
        if (check.name, j) in self._rejections:
            return self._rejections[check.name, j]
        if j not in known:
            name = self.name(entries[j])
            if name not in self.manifest.get("checks", {}):
                return None
            known[j] = self.rows(name)
        rows = known[j]
        bad = None
        if "check" in rows.columns:
            bad = rows.filter(pl.col("check") == check.name, pl.col("status").is_in(REJECTED))
            bad = bad.select(self.by).unique() if self.by else bad.select("check").head(1)
        self._rejections[check.name, j] = bad
        return bad

    def _reference(self, check: CheckConfig) -> State:
        assert check.reference is not None
        if check.name not in self.references:
            try:
                state = read_state(check.reference)
            except InputError as exc:
                raise InputError(f"check {check.name!r}: the reference state: {exc}") from None
            if state.spec.kind != self.job.task.kind:
                raise InputError(
                    f"check {check.name!r}: expected a {self.job.task.kind} reference state, "
                    f"got a {state.spec.kind} one in {check.reference!r}"
                )
            self.references[check.name] = state
        return self.references[check.name]

    def _order(self, day: pl.DataFrame) -> pl.DataFrame:
        """The checks table's columns and types, its rows in one fixed order (day by day)."""
        head = ["check", "severity"]
        if self.key:
            day = day.rename({"_day": self.key})
            head.append(self.key)
        else:
            day = day.drop("_day")
        head += ["window", *self.by]
        ids = [c for c in ("threshold", "model", "k") if c in day.columns and c not in self.by]
        columns = [*head, *ids, *COLUMNS]
        types: dict[str, pl.DataType | type[pl.DataType]] = {c: pl.Float64 for c in COLUMNS}
        types.update({"metric": pl.String, "baseline_kind": pl.String, "status": pl.String})
        types.update({"reason": pl.String, "n": pl.Int64, "baseline_n": pl.Int64})
        types.update({"check": pl.String, "severity": pl.String, "window": pl.String})
        day = day.with_columns(
            (pl.col(c) if c in day.columns else pl.lit(None)).cast(t).alias(c)
            for c, t in types.items()
        )
        # one fixed order whatever the joins' (the checks' order, then the slices'), so equal
        # inputs give equal bytes
        rank = {name: i for i, name in enumerate(self.checks)}
        order = pl.col("check").replace_strict(rank, return_dtype=pl.Int32)
        days = [self.key] if self.key else []
        return day.select(columns).sort(
            [*days, order, *self.by, *ids], nulls_last=False, maintain_order=True
        )

    def write_report(self, entries: Sequence[Entry]) -> None:
        """The HTML report of the last ``report_days`` days, opening with their checks."""
        path = self.job.checking.report
        assert path is not None
        if self.key:
            last = entries[-1].day
            first = last - timedelta(days=self.job.checking.report_days - 1)  # type: ignore[operator]
            shown = [i for i, e in enumerate(entries) if e.day >= first]  # type: ignore[operator]
            parts = [(i, self._states.get(i)) for i in shown]
            spec = replace(parts[0][1].spec, keys=(*parts[0][1].spec.keys, self.key))
            tables = [
                s.table.with_columns(pl.lit(entries[i].day, pl.Date).alias(self.key))
                for i, s in parts
            ]
            state = merge([State(spec, t) for t in tables])
            names = list(dict.fromkeys(self.name(entries[i]) for i in shown))
        else:
            state = merge([self._states.get(i) for i in range(len(entries))])
            names = [FLAT]
        rows = pl.concat([self.rows(n) for n in names], how="vertical_relaxed")
        title = f"{os.path.basename(self.job.file)}: checks and metrics"
        try:
            write_report(state, path, title=title, trend=self.key, checks=rows)
        except OSError as exc:
            raise InputError(
                f"cannot write the checks report {path!r} ({exc.strerror}); hint: check that "
                "its folder exists and is writable"
            ) from None


def _compared(
    current: pl.DataFrame,
    baseline: pl.DataFrame | None,
    on: list[str],
    check: CheckConfig,
    kind: str,
    every: bool,
) -> pl.DataFrame:
    """A metric check's measured rows beside their baseline's (joined ``on``), compared.

    A ranking task's rows are one per cutoff ``k``: those join on it too.
    """
    if baseline is not None:
        on = [*on, *(c for c in ("k",) if c in current.columns and c in baseline.columns)]
    return compare(with_baseline(current, baseline, on, every), check, kind)


def _labels(check: CheckConfig) -> list[pl.Expr]:
    """The columns naming ``check`` on each of its rows."""
    return [
        pl.lit(check.name).alias("check"),
        pl.lit(check.severity).alias("severity"),
        pl.lit(check.window.name).alias("window"),
        pl.lit(check.metric).alias("metric"),
        pl.lit(check.baseline, pl.String).alias("baseline_kind"),
    ]


#: The column tagging each window's rows in :meth:`Checks._tabulate`.
_WINDOW = "__se_window"


def _merged_in(
    cache: dict[tuple[int, ...], State | None], members: list[int], state: Callable[[int], State]
) -> State | None:
    """The merged state of the entries ``members``, kept in ``cache`` (None: no entries)."""
    key = tuple(members)
    if key not in cache:
        cache[key] = merge([state(j) for j in members]) if members else None
    return cache[key]
