"""Metadata of the entry logs GC has not read yet, with the same code for every caller.

A GC cycle reads them first thing (GC thread). The explain endpoint and the gauges must not wait for a cycle
(``gcWaitTime`` is 15 minutes by default): they run the same extraction on the extractor's own thread, and so
does start-up for whatever the persisted metadata lacks. What any of them reads is cached for the next cycle.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bookie.gc.runtimes import Runtimes
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
                 counters: dict[str, float], read_rate: float, stop: threading.Event, runtimes: Runtimes) -> None:
        """``list_logs(dir index)``: the engine's consistent (flushed logs, active log) snapshot; ``alive``:
        whether a ledger still exists locally."""
        self._list_logs = list_logs
        self._alive = alive
        self._counters = counters
        self._runtimes = runtimes
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
            self._runtimes.record("EXTRACT_META_RUNTIME", started)
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


class Round:
    """One pass of the extractor over every directory; ``done`` completes on the event loop."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done
        self.started = False
        self.started_at = time.time()
        self._loop = done.get_loop()

    def finish(self, error: BaseException | None) -> None:
        if error is not None:
            log.error("reading entry-log metadata failed: %r", error)
        try:
            self._loop.call_soon_threadsafe(self._set)
        except RuntimeError:  # the loop is closed: the bookie stopped, nobody waits any more
            pass

    def _set(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class BackgroundExtraction:
    """Rounds of extraction on a thread of their own, so neither the event loop nor a running GC cycle (which
    may be compacting for minutes) holds up a request; at most one round queued behind the running one."""

    def __init__(self, extractor: MetaExtractor, dirs: list[DirState], stop: threading.Event) -> None:
        self._extractor = extractor
        self._dirs = dirs
        self._stop = stop
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="gc-meta")
        self._queued: Round | None = None

    def request(self) -> Round:
        """A round that starts from now on: the one queued and not started yet if any, else a new one.
        Call on the event loop."""
        if self._queued is not None and not self._queued.started:
            return self._queued
        round_ = Round(asyncio.get_running_loop().create_future())
        if self._stop.is_set():  # GC is stopping: nothing more is read, nobody waits for it
            round_.done.set_result(None)
            return round_
        self._queued = round_
        self._pool.submit(self._run, round_).add_done_callback(lambda f: round_.finish(f.exception()))
        return round_

    def _run(self, round_: Round) -> None:
        round_.started, round_.started_at = True, time.time()
        for d in self._dirs:
            if self._stop.is_set():
                return
            self._extractor.extract_missing(d)
            d.cache.save()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)
