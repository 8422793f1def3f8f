"""Rollups: the metric rows of every window ending at each day, from stored states only.

For each output day D (each value of the partition key) and each window, the window's
partition states are merged and finalized; no source data is read. Trailing windows (``7d``)
merge their days' states in day order; running windows (``mtd``, ``ytd``, ``all``) fold one
day at a time (yesterday's merged state plus today's), and the fold at the last day is kept
in the store, so a new day costs one merge per running window. The metrics of many (window,
day) pairs are computed in one vectorized :meth:`State.metrics` call, ``window`` and the
partition key acting as two more group keys.

Every row carries ``days``: the number of partition days whose states were merged into its
window (a ``7d`` window on the source's first day covers 1; null without a partition key).

Each day's rows carry a digest of everything they depend on (the settings, and the
fingerprints of every partition in each of its windows); a day whose digest is unchanged is
not recomputed, and every computation is done in one fixed order, so equal inputs give
equal rows.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

import polars as pl

from ..kernels.runs import row_literals
from ..spec import Spec
from ..state import State, merge, metrics_by_version
from .aggregates import WindowAggregates
from .pools import POOLED_DAYS, DayPools, DayRuns, PooledState, TaggedPools, poolable
from .store import DamagedStateError, Store, digest_of
from .windows import Window

ROLLUP_FORMAT = 3  # 2: the days column; 3: the hinge loss column
#: A window's state table tagged with its window, end day and days, and its schema version.
Tagged = tuple[int, pl.DataFrame]
#: A window's state finalized from runs (pooled, or a day's own), its tags (a row: the
#: window, end day and days) and its entries.
TaggedPool = tuple[State, pl.DataFrame, list[int]]
#: A day's windows: tagged tables, and tagged pooled states.
DayWindows = tuple[int, list[Tagged], list[TaggedPool]]
BATCH_ROWS = 2_000_000
FLAT = "*"  # the one output "day" of a source without a partition key


@dataclass(frozen=True)
class Entry:
    """A stored partition: its value, day, fingerprint digest and state file."""

    value: str
    day: date | None
    digest: str
    state: str


def day_label(key: str | None, entry: Entry) -> str:
    """An output day's label in file names: ``day=2026-10-01`` (``all`` without a key).

    >>> entry = Entry("2026-10-01", None, "", "")
    >>> day_label("day", entry), day_label(None, entry)
    ('day=2026-10-01', 'all')
    """
    return f"{key}={entry.value}" if key else "all"


def plan_digests(
    entries: Sequence[Entry], windows: Sequence[Window], settings: str
) -> tuple[list[str], list[dict[str, str]]]:
    """Each day's rollup digest, and each day's running-window chain digests."""
    chains: dict[str, str | None] = {w.name: None for w in windows if w.running}
    days, running = [], []
    for i, e in enumerate(entries):
        members: dict[str, str | None] = {}
        for w in windows:
            if w.running:
                prev = chains[w.name]
                go_on = prev is not None and w.continues(entries[i - 1].day, e.day)  # type: ignore[arg-type]
                chains[w.name] = digest_of(prev if go_on else None, e.value, e.digest)
                members[w.name] = chains[w.name]
            else:
                members[w.name] = digest_of([[m.value, m.digest] for m in _members(entries, i, w)])
        days.append(digest_of(settings, members))
        running.append({k: v for k, v in chains.items() if v is not None})
    return days, running


def _members(entries: Sequence[Entry], i: int, window: Window) -> list[Entry]:
    """The entries of the window ending at entry ``i``, in day order."""
    end = entries[i].day
    j = i
    while j > 0 and window.contains(entries[j - 1].day, end):  # type: ignore[arg-type]
        j -= 1
    return list(entries[j : i + 1])


class StateCache:
    """The stored partitions' states, read once and held until dropped, and their pools.

    Shared by a run's rollups and checks: the states the rollups hold at the end (the last
    days' windows) are those a nightly run's checks read again, and the index of the days'
    rows their sliding pools move along is coded once for both (:meth:`pools`). The
    rollups' window aggregates the checks read again are in :attr:`aggregates`.
    """

    def __init__(
        self,
        store: Store,
        entries: Sequence[Entry],
        keep: frozenset[int] = frozenset(),
        records: dict[str, Any] | None = None,
        settings: Any = None,
        next_windows: frozenset[int] = frozenset(),
        reach: int = 0,
        slide: bool = False,
    ) -> None:
        """The cache of ``entries``' states.

        ``keep``: the lengths (days) of the trailing windows whose aggregates the rollups
        keep (those the run's checks read, :meth:`.Checks.read_windows`);
        ``records``: the manifest's stored aggregates (read, and replaced by those of the
        last day's windows of ``next_windows`` days, which the next run's checks read);
        ``settings``: what else they depend on (the store's spec); ``reach``: the most
        entries a pool of the run may hold, up to the day it is for (its index is built
        once for all of them); ``slide``: the pools slide along an index however few days
        the run computes (its drift checks read their histograms from it).
        """
        self.store, self.entries = store, list(entries)
        self.keep, self.next_windows = keep, next_windows
        self.reach, self.slide = reach, slide
        self._held: dict[int, State] = {}
        self._specs: dict[int, Spec] = {}  # (kept when a state is dropped)
        self._pools: dict[bool, DayPools] = {}
        identities = [[e.value, e.digest] for e in self.entries]
        self.aggregates = WindowAggregates(store, identities, records, settings)

    def pools(self, sliding: bool) -> DayPools:
        """The pools of these entries' states (sliding along one index, or summed)."""
        if sliding not in self._pools:
            self._pools[sliding] = DayPools(
                self.get, len(self.entries), sliding, self.reach, self.spec
            )
        return self._pools[sliding]

    def get(self, i: int) -> State:
        """The state of entry ``i`` (read from the store the first time)."""
        if i not in self._held:
            e = self.entries[i]
            what = f"the state of partition {e.value!r}"
            self._held[i] = self.store.read_state(e.state, what, e.value)
            self._specs[i] = self._held[i].spec
        return self._held[i]

    def spec(self, i: int) -> Spec:
        """The spec of entry ``i``'s state (read once: kept when the state is dropped)."""
        return self._specs[i] if i in self._specs else self.get(i).spec

    def held(self) -> list[int]:
        """The entries whose states are held."""
        return list(self._held)

    def drop(self, i: int) -> None:
        """Let go of entry ``i``'s state."""
        self._held.pop(i, None)

    def close(self) -> None:
        """Let go of every state, pool and aggregate held (the run is over)."""
        self._held.clear()
        self._pools.clear()
        self.aggregates.clear()


class Rollups:
    """Computes the stale days' metric rows into the store, batch by batch."""

    #: The cache of partition states to read through (one per :meth:`run` when None).
    states: StateCache | None = None

    def __init__(
        self,
        store: Store,
        manifest: dict[str, Any],
        windows: Sequence[Window],
        key: str | None,
        metric_kwargs: dict[str, Any],
        by: Sequence[str],
        warn: Callable[[str], None],
    ) -> None:
        self.store, self.manifest, self.windows, self.key = store, manifest, list(windows), key
        self.metric_kwargs, self.by, self.warn = metric_kwargs, list(by), warn
        spec_json = manifest.get("spec")
        self.spec = Spec.from_json(spec_json) if spec_json else None
        self.settings = digest_of(
            ROLLUP_FORMAT, spec_json, metric_kwargs, [w.name for w in windows], key
        )

    def name(self, entry: Entry) -> str:
        """The rollup's name in the manifest: the day's partition value."""
        return entry.value if self.key else FLAT

    def stale(self, entries: Sequence[Entry]) -> tuple[list[int], list[str], list[dict[str, str]]]:
        """Indices of the output days to recompute, every day's digest and running chains."""
        digests, chains = plan_digests(entries, self.windows, self.settings)
        points = range(len(entries)) if self.key else range(len(entries) - 1, len(entries))
        cached = self.manifest.setdefault("rollups", {})
        wanted = {self.name(entries[i]) for i in points}
        for name in [n for n in cached if n not in wanted]:
            del cached[name]
        stale = []
        for i in points:
            entry = cached.get(self.name(entries[i])) or {}
            fresh = entry.get("digest") == digests[i] and os.path.exists(
                self.store.path(entry.get("file", ""))
            )
            if not fresh:
                stale.append(i)
        return stale, digests, chains

    def run(self, entries: Sequence[Entry], save: Callable[[], None]) -> int:
        """Recompute the stale days; return how many days were computed."""
        if not entries or not self.windows:  # nothing stored, or a job without outputs
            self.manifest["rollups"], self.manifest["running"] = {}, {}
            return 0
        stale, digests, chains = self.stale(entries)
        running = [w for w in self.windows if w.running]
        saved = self.manifest.get("running") or {}
        kept = (
            saved.get("value") == entries[-1].value
            and saved.get("chains") == chains[-1]
            and all(os.path.exists(self.store.path(f)) for f in saved.get("files", {}).values())
        )
        if not stale and (kept or not running):
            return 0
        assert self.spec is not None
        trailing = [w.days for w in self.windows if not w.running]
        span = timedelta(days=max(trailing, default=1) - 1)
        first = stale[0] if stale else len(entries) - 1
        folds, begin = self._resume(entries, first, chains, running)
        last = len(entries) - 1 if running else stale[-1]
        states = self.states if self.states is not None else StateCache(self.store, entries)
        state = states.get

        # trailing windows of several days: pooled (binary states without weights)
        pools = states.pools(len(stale) >= POOLED_DAYS or states.slide) if self.key else None
        todo, rows = set(stale), 0
        batch: list[DayWindows] = []
        # the windows' aggregates, kept for the checks (which count unlabeled rows themselves)
        keep = states if states.keep and not self.spec.unlabeled else None
        # partition days in each running fold (a resumed fold holds the days of its window)
        sizes = {w.name: self._days(entries, begin - 1, w) for w in running if w.name in folds}
        for i in range(begin, last + 1):
            for w in running:
                prev = folds.get(w.name)
                go_on = prev is not None and w.continues(entries[i - 1].day, entries[i].day)  # type: ignore[arg-type]
                folds[w.name] = merge([prev, state(i)]) if go_on else state(i)  # type: ignore[list-item]
                sizes[w.name] = sizes[w.name] + 1 if go_on else 1
            if i in todo:
                tables: list[Tagged] = []
                pooled: list[TaggedPool] = []
                for w in self.windows:
                    members: list[int] = []
                    if w.running:
                        st, size = folds[w.name], sizes[w.name]
                    else:
                        size = len(_members(entries, i, w))
                        members = list(range(i - size + 1, i + 1))
                        st = _trailing(w, members, state, pools)
                    tags = self._tags(w.name, entries[i].day, size)
                    if isinstance(st, (PooledState, DayRuns)):
                        pooled.append((st, tags, members))
                        rows += len(st)
                    else:
                        tagged = st.table.with_columns(row_literals(tags))
                        tables.append((st.spec.schema_version, tagged))
                        rows += tagged.height
                batch.append((i, tables, pooled))
                if rows >= BATCH_ROWS:
                    self._flush(entries, batch, digests, save, keep)
                    batch, rows = [], 0
            day = entries[i].day
            for j in [j for j in states.held() if j < i]:
                if day is None or not trailing or entries[j].day < day - span:  # type: ignore[operator]
                    states.drop(j)
        if batch:
            self._flush(entries, batch, digests, save, keep)
        if running:
            self._checkpoint(entries[last], chains[last], folds, running)
            save()
        return len(stale)

    def _resume(
        self,
        entries: Sequence[Entry],
        first: int,
        chains: list[dict[str, str]],
        running: list[Window],
    ) -> tuple[dict[str, State], int]:
        """Folds to start from (the stored ones at an earlier day, when still valid)."""
        if not running:
            return {}, first
        saved = self.manifest.get("running") or {}
        index = {e.value: i for i, e in enumerate(entries)}.get(saved.get("value", ""))
        files = saved.get("files", {})
        usable = (
            index is not None
            and index < first
            and all(
                saved.get("chains", {}).get(w.name) == chains[index].get(w.name) for w in running
            )
            and all(os.path.exists(self.store.path(files.get(w.name, ""))) for w in running)
        )
        if not usable:
            return {}, 0
        what = "a stored running window"
        try:
            folds = {w.name: self.store.read_state(files[w.name], what) for w in running}
        except DamagedStateError as exc:  # recomputed from the partition states
            self.warn(f"{exc}; recomputing the running windows from the partition states")
            return {}, 0
        return folds, index + 1  # type: ignore[operator]

    def _checkpoint(
        self, entry: Entry, chains: dict[str, str], folds: dict[str, State], running: list[Window]
    ) -> None:
        files = {}
        for w in running:
            rel = self.store.place(f"running/{w.name}.{chains[w.name]}.parquet")
            if not os.path.exists(self.store.path(rel)):
                self.store.write_state(folds[w.name], rel)
            files[w.name] = rel
        self.manifest["running"] = {"value": entry.value, "chains": chains, "files": files}

    def _days(self, entries: Sequence[Entry], i: int, window: Window) -> int:
        """The partition days in ``window`` ending at entry ``i``."""
        return len(_members(entries, i, window)) if self.key else 0

    def _tags(self, window: str, day: date | None, days: int) -> pl.DataFrame:
        """A window's tags: its name, its end day and the partition days it covers (a row)."""
        tags = {"window": pl.Series([window], dtype=pl.String)}
        if self.key:
            tags[self.key] = pl.Series([day], dtype=pl.Date)
        tags["days"] = pl.Series([days if self.key else None], dtype=pl.Int32)
        return pl.DataFrame(tags)

    def _flush(
        self,
        entries: Sequence[Entry],
        batch: list[DayWindows],
        digests: list[str],
        save: Callable[[], None],
        keep: StateCache | None,
    ) -> None:
        """Write the metric rows of a batch of days.

        ``keep``'s aggregates get those of each window finalized from runs (the checks of the
        run read them again; the last day's windows of its ``next_windows`` days are stored
        for the next run's).
        """
        assert self.spec is not None
        extra = ("window", self.key, "days") if self.key else ("window", "days")
        spec = replace(self.spec, keys=(*self.spec.keys, *extra))
        versions: dict[int, list[pl.DataFrame]] = {}  # (a store's older states: their own)
        pools: dict[int, list[TaggedPool]] = {}
        for _, tables, pooled in batch:
            for version, table in tables:
                versions.setdefault(version, []).append(table)
            for part in pooled:
                pools.setdefault(part[0].spec.schema_version, []).append(part)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outs = [metrics_by_version(spec, versions, **self.metric_kwargs)] if versions else []
            for version, finalized in sorted(pools.items()):
                at = replace(spec, schema_version=version)
                states = [(st, tags) for st, tags, _ in finalized]
                lengths = keep.keep if keep is not None else frozenset()
                kept = [self._window(tags).days in lengths for _, tags, _ in finalized]
                tagged = TaggedPools(at, states, keep=kept)
                outs.append(tagged.metrics(**self.metric_kwargs))
                if keep is not None:
                    # (each kept window's, or none where the states were finalized from their
                    # tables)
                    for (_, tags, members), grouped in zip(
                        finalized, tagged.grouped(), strict=False
                    ):
                        if grouped is None:
                            continue
                        store_as = self._stored_as(entries, tags, members, keep.next_windows)
                        keep.aggregates.remember(members, grouped, store_as)
        for w in caught:
            self.warn(str(w.message))
        if len(outs) > 1:  # (rows of windows merged, and of windows pooled)
            outs = [pl.concat(outs).sort(list(spec.keys), nulls_last=False, maintain_order=True)]
        out = outs[0]
        out = self._order(out)
        parts: dict[Any, pl.DataFrame] = (
            out.partition_by(self.key, as_dict=True) if self.key else {(None,): out}
        )
        cached = self.manifest["rollups"]
        for i, _, _ in batch:
            e = entries[i]
            rows = parts.get((e.day,), out.clear())
            name = self.name(e)
            cached[name] = self.store.write_rows(
                rows, "metrics", day_label(self.key, e), digests[i]
            )
        save()

    def _window(self, tags: pl.DataFrame) -> Window:
        """The window of a part's ``tags``."""
        return {w.name: w for w in self.windows}[tags["window"][0]]

    def _stored_as(
        self,
        entries: Sequence[Entry],
        tags: pl.DataFrame,
        members: list[int],
        lengths: frozenset[int],
    ) -> str | None:
        """The file label of a window's aggregates the next run reads, or None.

        Those of the last day's trailing windows of ``lengths`` days.
        """
        window = self._window(tags)
        last = len(entries) - 1
        if window.running or window.days not in lengths or not members or members[-1] != last:
            return None
        return f"{day_label(self.key, entries[last])}.{window.name}"

    def _order(self, out: pl.DataFrame) -> pl.DataFrame:
        """Columns: keys, window, the end day, days, then the metrics; rows in window order."""
        head = [*self.by, "window", *([self.key] if self.key else []), "days"]
        rank = {w.name: i for i, w in enumerate(self.windows)}
        extra = [c for c in ("model", "threshold") if c in out.columns]
        order = pl.col("window").replace_strict(rank, return_dtype=pl.Int32)
        out = out.sort([order, *self.by, *extra], nulls_last=False, maintain_order=True)
        return out.select(*head, *[c for c in out.columns if c not in head])


def _trailing(
    window: Window, members: list[int], state: Callable[[int], State], pools: DayPools | None
) -> State:
    """A trailing window's state: pooled, or merged.

    Binary states without weights are pooled (a day alone: its own runs).
    """
    if pools is not None and len(members) > 1:
        pooled = pools.state(members, {})
        if pooled is not None:
            return pooled
    elif pools is not None and poolable(state(members[0]).spec):
        return DayRuns(state(members[0]))
    return merge([state(j) for j in members])
