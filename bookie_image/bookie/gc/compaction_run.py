"""One directory's compaction in a GC cycle: which kind the policy chooses, which logs, and running them."""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable

from bookie import disks
from bookie.config import BookieConfig
from bookie.gc import policy as pol
from bookie.gc.compactor import Aborted, Limits, Unindexed
from bookie.gc.extract import quarantined
from bookie.gc.runtimes import Runtimes
from bookie.gc.state import DirState, ForceRequest
from bookie.gc.throttle import Throttle
from bookie.storage import entrylog_format as ef
from bookie.storage.logmeta import LogMeta
from bookie.windows import parse_window

log = logging.getLogger(__name__)

COMPACTION_RESERVE_BYTES = 1024 * 1024  # free space kept after a compaction's copy


def compaction_settings(c: BookieConfig) -> pol.CompactionSettings:
    return pol.CompactionSettings(
        c.minor_compaction_threshold, c.minor_compaction_interval, c.minor_compaction_max_time_millis,
        c.major_compaction_threshold, c.major_compaction_interval, c.major_compaction_max_time_millis,
        c.force_allow_compaction, c.is_force_gc_allow_when_no_space, c.disk_usage_threshold,
        c.disk_usage_warn_threshold, c.gc_disk_pressure_ratio, parse_window(c.major_compaction_window))


class CompactionRun:
    """Compaction decisions and runs for the GC thread; ``alive`` says whether a ledger still exists locally."""

    def __init__(self, conf: BookieConfig, counters: dict[str, float], stop: threading.Event,
                 alive: Callable[[int], bool], runtimes: Runtimes) -> None:
        self.conf = conf
        self.counters = counters
        self.runtimes = runtimes
        self._stop = stop
        self._alive = alive

    def settings(self) -> pol.CompactionSettings:
        return compaction_settings(self.conf)

    def _decide(self, d: DirState, request: ForceRequest | None, used: float, suspend_major: bool,
                suspend_minor: bool) -> pol.CompactionDecision:
        s = self.settings()
        pressure = pol.disk_pressure(used, s)
        if request is not None:  # a REST trigger: its own flags, like BookKeeper's triggerGC(force, ...)
            force, sus_major, sus_minor = True, not request.major, not request.minor
        else:
            force = pressure.force
            sus_major = suspend_major or pressure.suspend_major
            sus_minor = suspend_minor or pressure.suspend_minor
        return pol.choose_compaction(pol.CompactionRequest(
            time.monotonic(), datetime.datetime.now().time(), d.last_major_at, d.last_minor_at, force,
            sus_major, sus_minor, pressure.ignore_window), s)

    def run(self, d: DirState, request: ForceRequest | None, suspend_major: bool, suspend_minor: bool) -> None:
        """Compact the directory if the policy says so now (forced by ``request``, else scheduled)."""
        used = disks.measure([d.ledger_dir])[0].used_fraction
        decision = self._decide(d, request, used, suspend_major, suspend_minor)
        if decision.kind is pol.Compaction.NONE:
            if decision.reason:
                log.info("%s: %s", d.ledger_dir, decision.reason)
            return
        major = decision.kind is pol.Compaction.MAJOR
        d.force_compacting = request is not None
        d.major_compacting, d.minor_compacting = major, not major
        started = time.monotonic()
        success = False
        try:
            self._compact_logs(d, decision)
            success = True
        finally:  # never leave a "compacting" flag set (BookKeeper #2103)
            d.major_compacting = d.minor_compacting = d.force_compacting = False
            self.runtimes.record("COMPACT_RUNTIME", started, success)
        now_ms, now = int(time.time() * 1000), time.monotonic()
        if major:
            d.last_major_ms, d.last_major_at, d.major_count = now_ms, now, d.major_count + 1
            self.counters["MAJOR_COMPACTION_TOTAL"] += 1
        else:
            d.last_minor_ms, d.last_minor_at, d.minor_count = now_ms, now, d.minor_count + 1
            self.counters["MINOR_COMPACTION_TOTAL"] += 1

    def _limits(self) -> Limits:
        c = self.conf
        rate = c.compaction_rate_by_bytes if c.is_throttle_by_bytes else c.compaction_rate_by_entries
        return Limits(Throttle(rate, self._stop), c.is_throttle_by_bytes,
                      Throttle(c.compaction_read_rate_by_bytes, self._stop), c.compaction_max_outstanding_requests,
                      self._stop)

    def _compact_logs(self, d: DirState, decision: pol.CompactionDecision) -> None:
        target = self.conf.log_size_limit if self.conf.use_target_entry_log_size_for_gc else 0
        usages = [self._usage(d, m) for m in d.cache.snapshot()]
        chosen = pol.select_for_compaction(usages, decision.threshold, target)
        log.info("%s: %s compaction (%s), threshold %.2f: %d of %d entry logs below it", d.ledger_dir,
                 decision.kind.value, decision.reason, decision.threshold, len(chosen), len(usages))
        deadline = time.monotonic() + decision.max_time_ms / 1000 if decision.max_time_ms > 0 else None
        limits = self._limits()
        for u in chosen:
            if self._stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                break
            meta = d.cache.logs.get(u.log_id)
            if meta is None or meta.pending_delete:
                continue
            free = disks.measure([d.ledger_dir])[0].free_bytes
            if not pol.free_space_allows(meta.remaining_bytes, free, COMPACTION_RESERVE_BYTES):
                log.warning("%s: not compacting %x.log: its %d live bytes do not fit in %d free bytes",
                            d.ledger_dir, u.log_id, meta.remaining_bytes, free)
                continue
            self._compact_one(d, meta, limits)

    def _usage(self, d: DirState, m: LogMeta) -> pol.LogUsage:
        eligible = not (m.quarantined or m.pending_delete or m.log_id == d.active_log_id)
        return pol.LogUsage(m.log_id, m.total_bytes, m.remaining_bytes, eligible)

    def _compact_one(self, d: DirState, meta: LogMeta, limits: Limits) -> None:
        usage = meta.remaining_bytes / max(1, meta.total_bytes)
        try:
            done = d.compactor.compact(meta, self._alive, limits)
        except Aborted:
            return
        except Unindexed as exc:
            log.warning("%s: not compacting %x.log this cycle: %s", d.ledger_dir, meta.log_id, exc)
            return
        except (ef.CorruptRecord, OSError) as exc:
            d.cache.put(quarantined(d, d.compactor.path_of(meta.log_id), meta.log_id,
                                    f"compaction failed: {exc}", self.counters))
            return
        # What replaced the old log's bytes: the new file (transactional) or the copies appended to the
        # current log (non-transactional; that log is read by GC once it rolls).
        d.retired_kind[meta.log_id] = done.new_meta.file_size if done.new_meta else done.copied_bytes
        if done.new_meta is not None:
            d.cache.put(done.new_meta)
        self.counters["COMPACTED_ENTRY_TOTAL"] += done.entries
        self.counters["COMPACTED_BYTES"] += done.copied_bytes
        log.info("%s: compacted %x.log (usage %.2f) into %s: %d live entries copied, %d index entries moved",
                 d.ledger_dir, meta.log_id, usage, done.into, done.entries, done.moved)
