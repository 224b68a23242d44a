"""Latency and size recorders of the bookie's hot paths, in Apache BookKeeper's OpStats shape.

An ``OpStat`` keeps cumulative count and sum plus a fixed array of log-spaced buckets for the current window
(no lock, no object per sample); quantiles are computed from the previous window when scraped, and the
windows roll over every ``prometheusStatsLatencyRolloverSeconds`` as in BookKeeper. The GIL makes each
increment safe enough for statistics: a rare lost increment under a race is the price of having no lock on
the add path. Pure: the storage engine and the request processor record into these, ``bookie.metrics``
writes them out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

QUANTILES = (0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1.0)

# Buckets: _SUB linear steps per power of two from 2**_MIN_EXP (about 1 µs in ms) to 2**_MAX_EXP (values
# such as bytes per batch use the same scale). Relative error of a quantile: at most 1 / (2 * _SUB), about 3 %.
_SUB = 16
_MIN_EXP = -10
_MAX_EXP = 40
_NBUCKETS = (_MAX_EXP - _MIN_EXP) * _SUB
# The same layout for the request hot path's recorder in C (bookie._requests.AddStats): sub, min exp, buckets.
BUCKETS = (_SUB, _MIN_EXP, _NBUCKETS)
_frexp = math.frexp


def _bucket(value: float) -> int:
    if value <= 0:
        return 0
    mantissa, exp = _frexp(value)  # value = mantissa * 2**exp, 0.5 <= mantissa < 1
    index = (exp - _MIN_EXP) * _SUB + int((mantissa - 0.5) * (2 * _SUB))
    return 0 if index < 0 else (index if index < _NBUCKETS else _NBUCKETS - 1)


def _bucket_value(index: int) -> float:
    """The middle of a bucket: the value a quantile falling into it is reported as."""
    exp, step = divmod(index, _SUB)
    return math.ldexp(0.5 + (step + 0.5) / (2 * _SUB), exp + _MIN_EXP)


class _Side:
    """One outcome (success or failure) of an OpStat: cumulative count/sum, and two windows of buckets."""

    __slots__ = ("count", "current", "current_max", "previous", "previous_max", "sum")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self.current = [0] * _NBUCKETS
        self.current_max = -math.inf
        self.previous: list[int] | None = None
        self.previous_max = -math.inf

    def rotate(self) -> None:
        self.previous, self.previous_max = self.current, self.current_max
        self.current, self.current_max = [0] * _NBUCKETS, -math.inf

    def copy(self) -> _Side:
        """A copy no later event changes (``previous`` is never written to after a rotation: shared)."""
        side = _Side.__new__(_Side)
        side.count, side.sum, side.current, side.current_max = self.count, self.sum, self.current[:], self.current_max
        side.previous, side.previous_max = self.previous, self.previous_max
        return side

    def quantiles(self) -> list[float]:
        """The window's quantiles (NaN when it saw no event), the last one being its exact maximum."""
        buckets = self.previous
        total = sum(buckets) if buckets is not None else 0
        if buckets is None or total == 0:
            return [math.nan] * len(QUANTILES)
        out = []
        for q in QUANTILES[:-1]:
            rank, seen = q * total, 0
            for i, n in enumerate(buckets):
                seen += n
                if n and seen >= rank:
                    out.append(min(_bucket_value(i), self.previous_max))
                    break
        return [*out, self.previous_max]


class OpStat:
    """BookKeeper's ``OpStatsLogger``: a summary of events (ms) or values, split by success."""

    __slots__ = ("failed", "ok")

    def __init__(self) -> None:
        self.ok = _Side()
        self.failed = _Side()

    def record(self, value: float, success: bool = True, times: int = 1) -> None:
        """One event (or ``times`` events of the same value: a journal group commit's entries)."""
        side = self.ok if success else self.failed
        side.count += times
        side.sum += value * times
        if value > 0:  # _bucket(value), inlined: this runs once per add
            mantissa, exp = _frexp(value)
            index = (exp - _MIN_EXP) * _SUB + int((mantissa - 0.5) * (2 * _SUB))
            index = 0 if index < 0 else (index if index < _NBUCKETS else _NBUCKETS - 1)
        else:
            index = 0
        side.current[index] += times
        if value > side.current_max:
            side.current_max = value

    def record_since(self, started: float, success: bool = True) -> None:
        """A latency from ``time.perf_counter()`` at ``started`` until now, in ms."""
        self.record((time.perf_counter() - started) * 1000.0, success)

    def rotate(self) -> None:
        self.ok.rotate()
        self.failed.rotate()

    def copy(self) -> OpStat:
        """The summary as it is now, for a scrape that must not see a half-recorded event of another thread."""
        stat = OpStat.__new__(OpStat)
        stat.ok, stat.failed = self.ok.copy(), self.failed.copy()
        return stat


class NullOpStat(OpStat):
    """Records nothing: ``enableStatistics=false`` (BookKeeper's ``NullStatsProvider``). Its summaries show no
    events; the hot paths pay a method call per event and nothing else."""

    __slots__ = ()

    def record(self, value: float, success: bool = True, times: int = 1) -> None:
        pass

    def record_since(self, started: float, success: bool = True) -> None:
        pass


def op_stat(enabled: bool) -> OpStat:
    """A recorder, or one that records nothing when statistics are off (``enableStatistics``)."""
    return OpStat() if enabled else NullOpStat()


class RequestStats:
    """The request processor's stats (``bookkeeper_server_*``), recorded by the listener and processor."""

    # Request kinds with a BookKeeper OpStat: (request stat name, processing stat name, thread pool).
    KINDS = {
        "add": ("ADD_ENTRY_REQUEST", "ADD_ENTRY", "BookieWriteThreadPool"),
        "read": ("READ_ENTRY_REQUEST", "READ_ENTRY", "BookieReadThreadPool"),
        "read_lac": ("READ_LAC_REQUEST", "READ_LAC", "BookieReadThreadPool"),
        "write_lac": ("WRITE_LAC_REQUEST", "WRITE_LAC", "BookieWriteThreadPool"),
        "force_ledger": ("FORCE_LEDGER_REQUEST", "FORCE_LEDGER", "BookieWriteThreadPool"),
        "bookie_info": ("GET_BOOKIE_INFO_REQUEST", "GET_BOOKIE_INFO", "BookieReadThreadPool"),
    }

    def __init__(self, enabled: bool = True) -> None:
        self.request = {kind: op_stat(enabled) for kind in self.KINDS}
        # Processing starts when the request is decoded and the answer leaves in the loop iteration that
        # completes it: both of BookKeeper's stats time one interval here, so they share one recorder (one
        # record per request on the add path, not two).
        self.processing = self.request
        self.add = self.request["add"]  # the hot path's recorder, looked up once
        self.write_bytes = 0
        self.read_bytes = 0
        self.add_rejected = 0
        self.read_rejected = 0
        self.read_noentry = 0

    def all_stats(self) -> Iterable[OpStat]:
        return self.request.values()


class JournalStats:
    """One journal's stats (``bookie_journal_*{journalIndex=...}``), recorded once per group commit."""

    __slots__ = ("add_entry", "batch_bytes", "batch_entries", "flush", "sync")

    def __init__(self, enabled: bool = True) -> None:
        self.add_entry = op_stat(enabled)
        self.sync = op_stat(enabled)
        self.flush = op_stat(enabled)
        self.batch_entries = op_stat(enabled)
        self.batch_bytes = op_stat(enabled)

    def group(self, entries: int, nbytes: int, write_ms: float, sync_ms: float | None, ok: bool) -> None:
        """One group commit, as its writer timed it: every record of it shares the group's latency, from the
        moment the writer took its first record until it is durable (one sample per group, not per entry);
        ``sync_ms`` is the fsync's (None: the group was not synced)."""
        total = write_ms + (sync_ms or 0.0)
        self.add_entry.record(total, ok, times=entries)
        self.flush.record(write_ms, ok)
        if sync_ms is not None:
            self.sync.record(sync_ms, ok)
        self.batch_entries.record(entries)
        self.batch_bytes.record(nbytes)

    def all_stats(self) -> Iterable[OpStat]:
        return (self.add_entry, self.sync, self.flush, self.batch_entries, self.batch_bytes)


class FlushStats:
    """One ledger directory's write-cache flushes (``bookie_flush*{indexDir,ledgerDir}``, Apache BookKeeper's
    ``DbLedgerStorageStats``): each checkpoint's flush of a swapped cache, whole and by step, and its bytes. The
    entry-log step counts its writes and its sync (BookKeeper's, only the sync: it writes entries as it goes)."""

    __slots__ = ("entry_log", "ledger_index", "locations_index", "size", "whole")

    def __init__(self, enabled: bool = True) -> None:
        self.whole = op_stat(enabled)
        self.entry_log = op_stat(enabled)
        self.locations_index = op_stat(enabled)
        self.ledger_index = op_stat(enabled)
        self.size = op_stat(enabled)

    def all_stats(self) -> Iterable[OpStat]:
        return (self.whole, self.entry_log, self.locations_index, self.ledger_index, self.size)
