"""Rollup windows' aggregates that a job's checks read again: kept for a run, the last stored.

A rollup window finalized from its runs gives each group's aggregates (a
:class:`~streameval.kernels.runs.Grouped` frame: the counts at the thresholds, the AUC's
ranks and DeLong's sums, a row per group). A check whose window or baseline holds the same
days reads them instead of finalizing those days again: the day's ``1d`` window, and a
``history`` of 28 days, which is the ``28d`` window of the day before.

Within a run they are kept in memory, up to :data:`KEPT_ROWS` rows. The windows of the run's
last day that the next run's checks will read (its ``previous`` day and its ``history``,
:meth:`~streameval.jobs.checks.Checks.next_windows`) are also written to the store
(``aggregates/``), named in the manifest by a digest of the window's partitions (their values
and fingerprints), the thresholds and the store's spec. So a nightly run judging one new day
reads 3,000 rows for a 28-day history instead of summing 28 stored days again. A run that
computes the last day again replaces them; a record whose partitions changed is never read
(its digest names other partitions), and a damaged file is recomputed like any store file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..kernels.runs import Grouped
from .store import Store, digest_of

#: The most rows of window aggregates a run keeps for its checks (about 0.4 kB a row).
KEPT_ROWS = 2_000_000
#: The stored aggregates' format: a change makes older ones unread (they are recomputed).
AGGREGATES_FORMAT = 1

Key = tuple[tuple[int, ...], tuple[float, ...]]


class WindowAggregates:
    """The aggregates of a run's rollup windows by their entries and thresholds.

    Parameters
    ----------
    store : Store
        The job's store.
    identities : list of list of str
        Each entry's partition value and fingerprint digest, in entry order.
    records : dict or None
        The manifest's ``aggregates`` section (its records are replaced when the run's
        rollups store new ones); None: none read or stored.
    settings : object
        What else the aggregates depend on (the store's spec), part of their digest.

    """

    def __init__(
        self,
        store: Store,
        identities: Sequence[Sequence[str]],
        records: dict[str, Any] | None = None,
        settings: Any = None,
    ) -> None:
        self.store, self._identities = store, [list(i) for i in identities]
        self._records, self._settings = records, settings
        self._stored = dict(records or {})  # (those of earlier runs: read while replaced)
        self._kept: dict[Key, Grouped] = {}
        self._kept_rows = 0
        self._stored_now = False  # (whether this run stored aggregates: the old ones dropped)

    def remember(
        self, members: Sequence[int], grouped: Grouped, store_as: str | None = None
    ) -> None:
        """Keep the aggregates of the entries ``members`` (up to :data:`KEPT_ROWS` rows).

        With ``store_as`` (the window's label in file names) they are also written to the
        store, and the records stored by earlier runs are dropped from the manifest (this
        run's checks still read them; their files are removed at the end of the run).
        """
        key = (tuple(members), grouped.thresholds)
        if self._kept_rows + grouped.frame.height <= KEPT_ROWS:
            self._kept[key] = grouped
            self._kept_rows += grouped.frame.height
        if store_as is None or self._records is None:
            return
        if not self._stored_now:
            self._records.clear()  # (their files: removed at the end of the run)
            self._stored_now = True
        digest = self._digest(key)
        self._records[digest] = self.store.write_rows(grouped.frame, "aggregates", store_as, digest)

    def grouped(self, members: Sequence[int], thresholds: tuple[float, ...]) -> Grouped | None:
        """The aggregates of the entries ``members`` at ``thresholds``, or None.

        Those kept in this run, or those a run stored (read back, checked against the
        digest of their bytes).
        """
        key = (tuple(members), thresholds)
        if key in self._kept:
            return self._kept[key]
        record = self._stored.get(self._digest(key))
        if record is None:
            return None
        what = f"the stored aggregates of window {record['file']!r}"
        frame = self.store.read_table(record["file"], record.get("blake2b"), what)
        self._kept[key] = Grouped(frame, thresholds)
        return self._kept[key]

    def clear(self) -> None:
        """Let go of the aggregates kept in memory."""
        self._kept.clear()
        self._kept_rows = 0

    def _digest(self, key: Key) -> str:
        """The digest naming the aggregates of ``key``'s entries and thresholds."""
        members, thresholds = key
        partitions = [self._identities[j] for j in members]
        return digest_of(AGGREGATES_FORMAT, self._settings, list(thresholds), partitions)
