"""Metadata of the entry logs GC has not read yet, with the same code for every caller.

A GC cycle reads them first thing (GC thread). The explain endpoint and the gauges must not wait for a cycle
(``gcWaitTime`` is 15 minutes by default): they run the same extraction on the extractor's own thread, and so
does start-up for whatever the persisted metadata lacks. What any of them reads is cached for the next cycle.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bookie.gc.state import DirState
from bookie.gc.throttle import Throttle
from bookie.storage.logmeta import CorruptLog, LogMeta, read_meta

log = logging.getLogger(__name__)


@dataclass
class Listing:
    """The entry logs of one directory at one moment: flushed ones and the active one (-1: none)."""

    log_ids: list[int]
    active: int
    started_at: float = field(default_factory=time.time)


class MetaExtractor:
    """Reads ledgers maps (or scans, throttled) of logs missing from a directory's metadata cache."""

    def __init__(self, list_logs: Callable[[int], tuple[list[int], int]], alive: Callable[[int], bool],
                 counters: dict[str, float], read_rate: float, stop: threading.Event) -> None:
        """``list_logs(dir index)``: the engine's consistent (flushed logs, active log) snapshot; ``alive``:
        whether a ledger still exists locally."""
        self._list_logs = list_logs
        self._alive = alive
        self._counters = counters
        self._read_rate = read_rate
        self._stop = stop

    def extract_missing(self, d: DirState) -> Listing:
        """Read every flushed log the cache lacks; returns the listing it worked from. Blocking."""
        with d.extract_lock:
            started = time.monotonic()
            ids, active = self._list_logs(d.index)
            listing = Listing(ids, active)
            d.active_log_id = active
            throttle = Throttle(self._read_rate, self._stop)
            for log_id in ids:
                if self._stop.is_set():
                    break
                if log_id != active and log_id not in d.cache.logs:
                    self._extract_one(d, log_id, throttle)
            self._counters["EXTRACT_META_RUNTIME_SECONDS"] += time.monotonic() - started
            return listing

    def _extract_one(self, d: DirState, log_id: int, throttle: Throttle) -> None:
        path = d.compactor.path_of(log_id)
        try:
            meta = read_meta(path, log_id, throttle)
        except CorruptLog as exc:
            meta = quarantined(d, path, log_id, exc.reason, self._counters)
        except FileNotFoundError:
            return
        self._counters["ENTRY_LOG_META_READ_TOTAL"] += 1
        self._counters["ENTRY_LOG_SCAN_TOTAL"] += meta.from_scan
        meta.remove_dead(self._alive)  # what the next cycle's first step would do: figures match GC's
        d.cache.put_if_absent(meta)
        if not path.exists():  # GC unlinked it meanwhile: it drops the log after the unlink, so do we
            d.cache.drop(log_id)


def quarantined(d: DirState, path: Path, log_id: int, reason: str, counters: dict[str, float]) -> LogMeta:
    """The metadata of a log GC must leave alone, logged once at ERROR."""
    st = path.stat()
    log.error("%s: entry log %x.log QUARANTINED, GC will neither compact nor delete it: %s. "
              "Inspect it with `bookie entrylog dump %s`; GC goes on with the other logs.",
              d.ledger_dir, log_id, reason, path)
    counters["QUARANTINED_ENTRY_LOG_TOTAL"] += 1
    return LogMeta(log_id, 0, {}, st.st_size, st.st_mtime, quarantined=reason)
