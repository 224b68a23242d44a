"""``GarbageCollector``: the bookie's GC controller (BookKeeper's ``GarbageCollectorThread``, one per bookie,
state per ledger directory).

Each cycle, every ``gcWaitTime`` or when forced over REST:

1. ledger GC on the event loop (ZooKeeper): local ledgers gone from metadata are deleted from the index;
   the over-replicated scan every ``gcOverreplicatedLedgerWaitTime``;
2. per ledger directory, in the GC thread: finish or drop interrupted compactions, read the metadata of new
   entry logs, delete logs whose ledgers are all gone, compact (major or minor, ``policy``), and unlink
   retired logs nobody reads any more (``refs``), pausing between deletions;
3. if space was freed, ask the server for a disk check right away (a read-only bookie becomes writable).

Nothing here can leave GC stuck: every step is in try/finally, a corrupt log is quarantined and skipped,
and a failing cycle is logged and retried at the next one (BookKeeper #2103, #4596).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie import disks
from bookie.config import BookieConfig
from bookie.gc import policy as pol
from bookie.gc.compactor import Aborted, Compactor, Limits, Unindexed
from bookie.gc.ledgers import LedgerGc, LedgerGcAborted
from bookie.gc.logmeta import CorruptLog, LogMeta, MetaCache, read_meta
from bookie.gc.refs import Destroy, LogRefs
from bookie.gc.throttle import Throttle
from bookie.metadata.store import MetadataStore
from bookie.state import BookieStatus, ReadOnlyReason, StateManager
from bookie.storage import entrylog_format as ef
from bookie.storage.engine import StorageEngine

log = logging.getLogger(__name__)

COMPACTION_RESERVE_BYTES = 1024 * 1024  # free space kept after a compaction's copy
READER_GRACE_S = 0.5  # an unlinked log's cached reader stays open this long: reads already under way finish


@dataclass
class ForceRequest:
    major: bool
    minor: bool


@dataclass
class DirState:
    """One ledger directory's GC state (what ``gc_details`` reports per directory)."""

    index: int
    ledger_dir: Path
    cache: MetaCache
    refs: LogRefs
    compactor: Compactor
    major_compacting: bool = False
    minor_compacting: bool = False
    force_compacting: bool = False
    last_major_ms: int = 0
    last_minor_ms: int = 0
    major_count: int = 0
    minor_count: int = 0
    active_log_id: int = -1
    retired_kind: dict[int, int] = field(default_factory=dict)  # log id -> bytes of its replacement, -1: dead
    locations_path: str = ""
    location_compact_requested: bool = False
    location_compacting: bool = False
    last_location_compaction_ms: int = 0
    location_compaction_count: int = 0


class GarbageCollector:
    """Ledger GC, entry-log GC and compaction for one bookie (see the module docstring)."""

    def __init__(self, conf: BookieConfig, engine: StorageEngine | Callable[[], StorageEngine],
                 store: MetadataStore, *, bookie_id: str,
                 on_space_freed: Callable[[], Awaitable[None]] | None = None,
                 state: StateManager | None = None) -> None:
        """``engine`` may be a function returning it: the server opens storage only after its cookie check.
        ``state``: when the bookie turns read-only for a full disk, a cycle runs at once (not gcWaitTime later)."""
        self.conf = conf
        if state is not None:
            state.on_change.append(self._on_state_change)
        self._engine_source = engine
        self._engine: StorageEngine | None = None
        self.bookie_id = bookie_id
        self.on_space_freed = on_space_freed
        self.ledger_gc = LedgerGc(store, bookie_id, verify=conf.verify_metadata_on_gc,
                                  op_rate=conf.gc_metadata_op_rate_limit, timeout_s=2 * conf.zk_timeout / 1000,
                                  overreplicated_concurrency=conf.gc_overreplicated_ledger_max_concurrent_requests)
        self.dirs: list[DirState] = []
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="gc")
        self._stop = threading.Event()
        self._reader_closers: set[threading.Timer] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._force: ForceRequest | None = None
        self._in_force = False
        self._suspend_major = False
        self._suspend_minor = False
        self._last_overreplicated = time.monotonic()
        self.last_error = ""
        self.counters: dict[str, float] = dict.fromkeys((
            "MINOR_COMPACTION_TOTAL", "MAJOR_COMPACTION_TOTAL", "RECLAIMED_DELETION_SPACE_BYTES",
            "RECLAIMED_COMPACTION_SPACE_BYTES", "RECLAIM_FAILED_TO_DELETE", "DELETED_LEDGER_TOTAL",
            "GC_CYCLE_TOTAL", "GC_METADATA_ERROR_TOTAL", "GC_CYCLE_FAILED_TOTAL", "COMPACTED_ENTRY_TOTAL",
            "COMPACTED_BYTES", "FORCED_DESTROY_TOTAL", "QUARANTINED_ENTRY_LOG_TOTAL",
            "THREAD_RUNTIME_SECONDS", "GC_LEDGER_RUNTIME_SECONDS", "COMPACT_RUNTIME_SECONDS",
            "EXTRACT_META_RUNTIME_SECONDS", "GC_LEDGER_DELETE_FAILED_TOTAL", "ENTRY_LOG_META_READ_TOTAL",
            "ENTRY_LOG_SCAN_TOTAL", "ENTRY_LOCATION_COMPACTION_TOTAL"), 0.0)

    def _on_state_change(self, status: BookieStatus) -> None:
        """RocketMQ's "clean at once under disk pressure": a full disk is not left waiting for the schedule."""
        if status.read_only and status.reason is ReadOnlyReason.DISK_FULL and self._task is not None:
            log.warning("ledger disk full: running GC now")
            self._wake.set()

    def _dir_state(self, i: int) -> DirState:
        d = self.engine.dirs[i]
        cache = MetaCache(d.current)
        refs = LogRefs(self.conf.gc_entry_log_forced_destroy_interval_ms / 1000)
        compactor = Compactor(i, d.current, self.engine, d.locations, refs, cache,
                              transactional=self.conf.use_transactional_compaction)
        now_ms = int(time.time() * 1000)  # BookKeeper starts both compaction clocks at start-up
        return DirState(i, d.ledger_dir, cache, refs, compactor, last_major_ms=now_ms, last_minor_ms=now_ms,
                        locations_path=str(d.locations.db.path()), last_location_compaction_ms=now_ms)

    # ------------------------------------------------------------------ lifecycle
    @property
    def engine(self) -> StorageEngine:
        if self._engine is None:
            source = self._engine_source
            self._engine = source if isinstance(source, StorageEngine) else source()
        return self._engine

    async def start(self) -> None:
        """Load persisted log metadata and repair interrupted compactions, then schedule cycles."""
        self.dirs = [self._dir_state(i) for i in range(len(self.engine.dirs))]
        for d in self.dirs:
            await self._in_thread(self._load_dir, d)
        self._task = asyncio.create_task(self._loop(), name="gc")

    def _load_dir(self, d: DirState) -> None:
        loaded = d.cache.load(d.compactor.path_of)
        for meta in d.cache.logs.values():
            if meta.pending_delete:
                d.refs.retire(meta.log_id, d.compactor.path_of(meta.log_id))
        for action in d.compactor.recover():
            log.warning("%s: %s", d.ledger_dir, action)
        log.info("%s: GC metadata of %d entry logs loaded", d.ledger_dir, loaded)

    async def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 60)
            except TimeoutError:
                self._task.cancel()
        self._pool.shutdown(wait=True)
        for timer in list(self._reader_closers):  # the engine closes its readers itself when it stops
            timer.cancel()

    async def _loop(self) -> None:
        interval = self.conf.gc_wait_time / 1000
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), interval)
            except TimeoutError:
                pass
            self._wake.clear()
            if self._stop.is_set():
                return
            await self.run_cycle()

    async def run_cycle(self) -> None:
        """One GC cycle; a forced request pending is consumed. Never raises (logged, retried next time)."""
        request, self._force = self._force, None
        self._in_force = request is not None
        started = time.monotonic()
        try:
            await self._cycle(request)
        except Exception as exc:
            self.counters["GC_CYCLE_FAILED_TOTAL"] += 1
            self.last_error = repr(exc)
            log.exception("GC cycle failed; retrying at the next cycle")
        finally:
            self._in_force = self._force is not None  # a trigger that came in during this cycle still pends
            self.counters["GC_CYCLE_TOTAL"] += 1
            self.counters["THREAD_RUNTIME_SECONDS"] += time.monotonic() - started

    async def _cycle(self, request: ForceRequest | None) -> None:
        await self._gc_ledgers()
        freed = 0
        for d in self.dirs:
            if self._stop.is_set():
                return
            freed += await self._in_thread(self._dir_cycle, d, request)
        if freed and self.on_space_freed is not None:
            await self.on_space_freed()

    # ------------------------------------------------------------------ ledger GC (event loop)
    async def _gc_ledgers(self) -> None:
        started = time.monotonic()
        local = self.engine.ledger_ids()  # before listing metadata: see LedgerGc.run
        try:
            result = await self.ledger_gc.run(local, self._delete_ledger)
            if result.deleted:
                log.info("ledger GC deleted %d ledgers gone from metadata: %s", len(result.deleted),
                         _ids_text(result.deleted))
            await self._overreplicated_if_due()
        except LedgerGcAborted as exc:
            self.counters["GC_METADATA_ERROR_TOTAL"] += 1
            self.last_error = str(exc)
            log.warning("ledger GC aborted, nothing more deleted this cycle: %s", exc)
        finally:
            self.counters["GC_LEDGER_RUNTIME_SECONDS"] += time.monotonic() - started

    async def _overreplicated_if_due(self) -> None:
        wait_ms = self.conf.gc_overreplicated_ledger_wait_time
        if wait_ms <= 0 or time.monotonic() - self._last_overreplicated < wait_ms / 1000:
            return
        self._last_overreplicated = time.monotonic()
        deleted = await self.ledger_gc.overreplicated(self.engine.ledger_ids(), self._delete_ledger)
        if deleted:
            log.info("over-replicated ledger GC deleted %s", _ids_text(deleted))

    async def _delete_ledger(self, ledger_id: int) -> None:
        """BookKeeper's garbageCleaner: a failed index delete (a disk so full RocksDB cannot append its WAL) is
        logged and GC goes on; the ledger is already gone from memory, so its logs can still be reclaimed."""
        try:
            await self.engine.delete_ledger(ledger_id)
        except Exception as exc:
            self.counters["GC_LEDGER_DELETE_FAILED_TOTAL"] += 1
            log.error("deleting ledger %d from the index failed (%r); its entry logs are still reclaimed",
                      ledger_id, exc)
            return
        self.counters["DELETED_LEDGER_TOTAL"] += 1

    # ------------------------------------------------------------------ one directory (GC thread)
    def _dir_cycle(self, d: DirState, request: ForceRequest | None) -> int:
        for action in d.compactor.recover():
            log.warning("%s: %s", d.ledger_dir, action)
        self._extract_meta(d)
        self._gc_entry_logs(d)
        freed = self._destroy_retired(d)
        self._compact(d, request)
        freed += self._destroy_retired(d)
        d.cache.save()
        self._compact_locations_if_due(d)
        return freed

    def _compact_locations_if_due(self, d: DirState) -> None:
        """RocksDB compaction of the locations index on request or every entryLocationCompactionInterval s:
        mass ledger deletions leave tombstones that slow every seek (BookKeeper PR #3802, #2686)."""
        interval_ms = self.conf.entry_location_compaction_interval * 1000
        now_ms = int(time.time() * 1000)
        due = interval_ms > 0 and now_ms - d.last_location_compaction_ms >= interval_ms
        if not (d.location_compact_requested or due) or self._stop.is_set():
            return
        d.location_compacting = True
        started = time.monotonic()
        try:
            self.engine.gc_compact_locations(d.index)
        finally:
            d.location_compacting = d.location_compact_requested = False
        d.last_location_compaction_ms = int(time.time() * 1000)
        d.location_compaction_count += 1
        self.counters["ENTRY_LOCATION_COMPACTION_TOTAL"] += 1
        log.info("%s: locations index compacted in %.2f s", d.locations_path, time.monotonic() - started)

    def _extract_meta(self, d: DirState) -> None:
        """Metadata of logs not seen yet (ledgers map, else throttled scan); forget vanished logs."""
        started = time.monotonic()
        ids, active = self.engine.gc_flushed_logs(d.index)
        d.active_log_id = active
        present = set(ids)
        for gone in [i for i in d.cache.logs if i not in present]:
            d.cache.drop(gone)
        read_throttle = Throttle(self.conf.compaction_read_rate_by_bytes, self._stop)
        for log_id in ids:
            if log_id == active or log_id in d.cache.logs or self._stop.is_set():
                continue
            path = d.compactor.path_of(log_id)
            try:
                meta = read_meta(path, log_id, read_throttle)
            except CorruptLog as exc:
                meta = self._quarantine_meta(d, path, log_id, exc.reason)
            except FileNotFoundError:
                continue
            self.counters["ENTRY_LOG_META_READ_TOTAL"] += 1
            self.counters["ENTRY_LOG_SCAN_TOTAL"] += meta.from_scan
            d.cache.put(meta)
        self.counters["EXTRACT_META_RUNTIME_SECONDS"] += time.monotonic() - started

    def _quarantine_meta(self, d: DirState, path: Path, log_id: int, reason: str) -> LogMeta:
        st = path.stat()
        log.error("%s: entry log %x.log QUARANTINED, GC will neither compact nor delete it: %s. "
                  "Inspect it with `bookie entrylog dump %s`; GC goes on with the other logs.",
                  d.ledger_dir, log_id, reason, path)
        self.counters["QUARANTINED_ENTRY_LOG_TOTAL"] += 1
        return LogMeta(log_id, 0, {}, st.st_size, st.st_mtime, quarantined=reason)

    def _gc_entry_logs(self, d: DirState) -> None:
        """doGcEntryLogs: drop dead ledgers from each log's map; logs left empty are retired."""
        for meta in list(d.cache.logs.values()):
            if meta.quarantined or meta.pending_delete:
                continue
            if meta.remove_dead(self.engine.has_ledger):
                d.cache.dirty = True
            if not meta.ledgers:
                log.info("%s: entry log %x.log holds no live ledger any more: deleting it", d.ledger_dir,
                         meta.log_id)
                self._retire(d, meta, replacement_bytes=-1)

    def _retire(self, d: DirState, meta: LogMeta, replacement_bytes: int) -> None:
        meta.pending_delete = True
        d.cache.dirty = True
        d.retired_kind[meta.log_id] = replacement_bytes
        d.refs.retire(meta.log_id, d.compactor.path_of(meta.log_id))

    def _destroy_retired(self, d: DirState) -> int:
        """Unlink retired logs nobody reads (or whose forced-destroy time is over), pausing in between; then,
        after a grace period, close the engine's cached readers of them (in-flight reads complete)."""
        unlinked: list[int] = []
        try:
            return self._unlink_retired(d, unlinked)
        finally:
            if unlinked:
                self._close_readers_later(d.index, unlinked)

    def _close_readers_later(self, dir_index: int, log_ids: list[int]) -> None:
        """Close the engine's readers of unlinked logs after READER_GRACE_S (their space is freed then) on a
        timer, so the GC cycle goes on instead of waiting; reads already under way meanwhile complete."""
        def close() -> None:
            self._reader_closers.discard(timer)
            for log_id in log_ids:
                self.engine.gc_close_reader(dir_index, log_id)

        timer = threading.Timer(READER_GRACE_S, close)
        timer.daemon = True
        self._reader_closers.add(timer)
        timer.start()

    def _unlink_retired(self, d: DirState, unlinked: list[int]) -> int:
        freed = 0
        pause = self.conf.gc_entry_log_deletion_pause_ms / 1000
        for log_id in sorted(d.refs.retired()):
            if self._stop.is_set():
                break
            size = _size(d.compactor.path_of(log_id))
            try:
                outcome = d.refs.try_destroy(log_id, lambda i: self.engine.gc_delete_log(d.index, i))
            except OSError as exc:
                self.counters["RECLAIM_FAILED_TO_DELETE"] += 1
                log.error("%s: deleting entry log %x.log failed (%s); retrying next cycle", d.ledger_dir, log_id,
                          exc)
                continue
            if outcome is Destroy.HELD:
                continue
            d.cache.drop(log_id)
            replacement = d.retired_kind.pop(log_id, -1)
            if outcome is Destroy.GONE:
                continue
            unlinked.append(log_id)
            if outcome is Destroy.FORCED:
                self.counters["FORCED_DESTROY_TOTAL"] += 1
                log.warning("%s: entry log %x.log still held by a reader after %.0f s: destroyed anyway",
                            d.ledger_dir, log_id, d.refs.forced_destroy_s)
            key = "RECLAIMED_DELETION_SPACE_BYTES" if replacement < 0 else "RECLAIMED_COMPACTION_SPACE_BYTES"
            self.counters[key] += max(0, size - max(0, replacement))
            freed += size
            if pause > 0:
                self._stop.wait(pause)
        return freed

    # ------------------------------------------------------------------ compaction (GC thread)
    def settings(self) -> pol.CompactionSettings:
        c = self.conf
        return pol.CompactionSettings(
            c.minor_compaction_threshold, c.minor_compaction_interval, c.minor_compaction_max_time_millis,
            c.major_compaction_threshold, c.major_compaction_interval, c.major_compaction_max_time_millis,
            c.force_allow_compaction, c.is_force_gc_allow_when_no_space, c.disk_usage_threshold,
            c.disk_usage_warn_threshold, c.gc_disk_pressure_ratio, pol.parse_window(c.major_compaction_window))

    def _decide(self, d: DirState, request: ForceRequest | None, used: float) -> pol.CompactionDecision:
        s = self.settings()
        pressure = pol.disk_pressure(used, s)
        if request is not None:  # a REST trigger: its own flags, like BookKeeper's triggerGC(force, ...)
            force, sus_major, sus_minor = True, not request.major, not request.minor
        else:
            force = pressure.force
            sus_major = self._suspend_major or pressure.suspend_major
            sus_minor = self._suspend_minor or pressure.suspend_minor
        now = time.time()
        return pol.choose_compaction(pol.CompactionRequest(
            now, datetime.datetime.now().time(), d.last_major_ms / 1000, d.last_minor_ms / 1000, force,
            sus_major, sus_minor, pressure.ignore_window), s)

    def _compact(self, d: DirState, request: ForceRequest | None) -> None:
        used = disks.measure([d.ledger_dir])[0].used_fraction
        decision = self._decide(d, request, used)
        if decision.kind is pol.Compaction.NONE:
            if decision.reason:
                log.info("%s: %s", d.ledger_dir, decision.reason)
            return
        major = decision.kind is pol.Compaction.MAJOR
        d.force_compacting = request is not None
        d.major_compacting, d.minor_compacting = major, not major
        started = time.monotonic()
        try:
            self._compact_logs(d, decision)
        finally:  # never leave a "compacting" flag set (BookKeeper #2103)
            d.major_compacting = d.minor_compacting = d.force_compacting = False
            self.counters["COMPACT_RUNTIME_SECONDS"] += time.monotonic() - started
        now_ms = int(time.time() * 1000)
        if major:
            d.last_major_ms, d.major_count = now_ms, d.major_count + 1
            self.counters["MAJOR_COMPACTION_TOTAL"] += 1
        else:
            d.last_minor_ms, d.minor_count = now_ms, d.minor_count + 1
            self.counters["MINOR_COMPACTION_TOTAL"] += 1

    def _limits(self) -> Limits:
        c = self.conf
        rate = c.compaction_rate_by_bytes if c.is_throttle_by_bytes else c.compaction_rate_by_entries
        return Limits(Throttle(rate, self._stop), c.is_throttle_by_bytes,
                      Throttle(c.compaction_read_rate_by_bytes, self._stop), c.compaction_max_outstanding_requests,
                      self._stop)

    def _compact_logs(self, d: DirState, decision: pol.CompactionDecision) -> None:
        target = self.conf.log_size_limit if self.conf.use_target_entry_log_size_for_gc else 0
        usages = [self._usage(d, m) for m in list(d.cache.logs.values())]
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
            done = d.compactor.compact(meta, self.engine.has_ledger, limits)
        except Aborted:
            return
        except Unindexed as exc:
            log.warning("%s: not compacting %x.log this cycle: %s", d.ledger_dir, meta.log_id, exc)
            return
        except (ef.CorruptRecord, OSError) as exc:
            d.cache.put(self._quarantine_meta(d, d.compactor.path_of(meta.log_id), meta.log_id,
                                              f"compaction failed: {exc}"))
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

    # ------------------------------------------------------------------ REST (BookKeeper's shapes)
    def trigger(self, force_major: bool | None = None, force_minor: bool | None = None) -> None:
        """PUT /api/v1/bookie/gc: one forced cycle; forceMajor/forceMinor default to "not suspended"."""
        major = (not self._suspend_major) if force_major is None else force_major
        minor = (not self._suspend_minor) if force_minor is None else force_minor
        self._force = ForceRequest(major, minor)
        self._in_force = True
        self._wake.set()

    def is_in_force_gc(self) -> bool:
        return self._in_force or self._force is not None

    def suspended(self) -> tuple[bool, bool]:
        return self._suspend_major, self._suspend_minor

    def suspend(self, major: bool, minor: bool) -> None:
        self._suspend_major = self._suspend_major or major
        self._suspend_minor = self._suspend_minor or minor

    def resume(self, major: bool, minor: bool) -> None:
        self._suspend_major = self._suspend_major and not major
        self._suspend_minor = self._suspend_minor and not minor

    def details(self) -> list[dict[str, Any]]:
        return [{"forceCompacting": d.force_compacting, "majorCompacting": d.major_compacting,
                 "minorCompacting": d.minor_compacting, "lastMajorCompactionTime": d.last_major_ms,
                 "lastMinorCompactionTime": d.last_minor_ms,
                 "lastEntryLocationCompactionTime": d.last_location_compaction_ms,
                 "majorCompactionCounter": d.major_count, "minorCompactionCounter": d.minor_count,
                 "entryLocationCompactionCounter": d.location_compaction_count} for d in self.dirs]

    def entry_location_compact(self, paths: list[str] | None) -> list[str]:
        """PUT entry_location_compact: compact these locations indexes (all when None) at once; returns
        the paths that are not this bookie's (nothing is triggered then)."""
        known = {d.locations_path: d for d in self.dirs}
        unknown = [p for p in paths or [] if p not in known]
        if unknown:
            return unknown
        for path in paths or list(known):
            known[path].location_compact_requested = True
        self._wake.set()
        return []

    def entry_location_compacting(self) -> dict[str, bool]:
        """GET entry_location_compact: locations index path -> compaction requested or running."""
        return {d.locations_path: d.location_compacting or d.location_compact_requested for d in self.dirs}

    # ------------------------------------------------------------------ metrics and explain
    def metrics(self) -> tuple[dict[str, float], dict[str, float]]:
        from bookie.gc.explain import gauges
        return dict(self.counters), gauges(self)

    async def explain(self, limit: int) -> dict[str, Any]:
        from bookie.gc.explain import entry_logs, name_topics
        return await name_topics(await asyncio.to_thread(entry_logs, self, limit), self.ledger_gc.store)

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _ids_text(ids: list[int], shown: int = 20) -> str:
    text = ", ".join(str(i) for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
