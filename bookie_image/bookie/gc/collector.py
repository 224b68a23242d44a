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
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bookie.config import BookieConfig
from bookie.gc import explain as ex
from bookie.gc import policy as pol
from bookie.gc.compaction_run import CompactionRun, compaction_settings
from bookie.gc.compactor import Compactor
from bookie.gc.extract import BackgroundExtraction, Listing, MetaExtractor
from bookie.gc.ledgers import LedgerGc, LedgerGcAborted
from bookie.gc.metacache import MetaCache
from bookie.gc.refs import Destroy, LogRefs
from bookie.gc.runtimes import Runtimes
from bookie.gc.state import DirState, ForceRequest
from bookie.metadata.store import MetadataStore
from bookie.state import BookieStatus, ReadOnlyReason, StateManager
from bookie.storage.gc_api import GcStorageApi
from bookie.storage.logmeta import LogMeta
from bookie.waits import wait_event

log = logging.getLogger(__name__)

COMPACTION_RESERVE_BYTES = 1024 * 1024  # free space kept after a compaction's copy
READER_GRACE_S = 0.5  # an unlinked log's cached reader stays open this long: reads already under way finish


class GarbageCollector:
    """Ledger GC, entry-log GC and compaction for one bookie (see the module docstring)."""

    def __init__(self, conf: BookieConfig, engine: GcStorageApi | Callable[[], GcStorageApi],
                 store: MetadataStore, *, bookie_id: str,
                 on_space_freed: Callable[[], Awaitable[None]] | None = None,
                 state: StateManager | None = None) -> None:
        """``engine`` may be a function returning it: the server opens storage only after its cookie check.
        ``state``: when the bookie turns read-only for a full disk, a cycle runs at once (not gcWaitTime later)."""
        self.conf = conf
        if state is not None:
            state.on_change.append(self._on_state_change)
        self._engine_source = engine
        self._engine: GcStorageApi | None = None
        self.bookie_id = bookie_id
        self.on_space_freed = on_space_freed
        self.ledger_gc = LedgerGc(store, bookie_id, verify=conf.verify_metadata_on_gc,
                                  op_rate=conf.gc_metadata_op_rate_limit, timeout_s=2 * conf.zk_timeout / 1000,
                                  overreplicated_concurrency=conf.gc_overreplicated_ledger_max_concurrent_requests)
        self.dirs: list[DirState] = []
        self.topics = ex.TopicNames(store)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="gc")
        self._background: BackgroundExtraction | None = None
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
        self.runtimes = Runtimes(self.counters)

    def _on_state_change(self, status: BookieStatus) -> None:
        """RocketMQ's "clean at once under disk pressure": a full disk is not left waiting for the schedule."""
        if status.read_only and status.reason is ReadOnlyReason.DISK_FULL and self._task is not None:
            log.warning("ledger disk full: running GC now")
            self._wake.set()

    def _dir_state(self, i: int) -> DirState:
        paths = self.engine.gc_dir_paths(i)
        cache = MetaCache(paths.current)
        refs = LogRefs(self.conf.gc_entry_log_forced_destroy_interval_ms / 1000)
        compactor = Compactor(i, self.engine, refs, cache, transactional=self.conf.use_transactional_compaction)
        now_ms, now = int(time.time() * 1000), time.monotonic()  # BookKeeper starts both compaction clocks at start-up
        return DirState(i, paths.ledger_dir, cache, refs, compactor, last_major_ms=now_ms, last_minor_ms=now_ms,
                        last_major_at=now, last_minor_at=now, locations_path=paths.locations_index,
                        last_location_compaction_ms=now_ms, last_location_compaction_at=now)

    # ------------------------------------------------------------------ lifecycle
    @property
    def engine(self) -> GcStorageApi:
        if self._engine is None:
            source = self._engine_source
            self._engine = source if isinstance(source, GcStorageApi) else source()
        return self._engine

    async def start(self) -> None:
        """Load persisted log metadata and repair interrupted compactions, then schedule cycles."""
        self.dirs = [self._dir_state(i) for i in range(self.engine.dir_count())]
        self._extractor = MetaExtractor(self.engine.gc_flushed_logs, self.engine.has_ledger, self.counters,
                                        self.conf.compaction_read_rate_by_bytes, self._stop, self.runtimes)
        self._background = BackgroundExtraction(self._extractor, self.dirs, self._stop)
        self._compaction = CompactionRun(self.conf, self.counters, self._stop, self.engine.has_ledger, self.runtimes)
        for d in self.dirs:
            await self._in_thread(self._load_dir, d)
        self._background.request()  # what the persisted metadata lacks, in the background
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
        self.topics.close()
        if self._task is not None:
            try:
                async with asyncio.timeout(60):
                    await self._task
            except TimeoutError:
                self._task.cancel()
        self._pool.shutdown(wait=True)
        if self._background is not None:
            self._background.shutdown()
        for timer in list(self._reader_closers):  # the engine closes its readers itself when it stops
            timer.cancel()

    async def _loop(self) -> None:
        interval = self.conf.gc_wait_time / 1000
        while not self._stop.is_set():
            await wait_event(self._wake, interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            await self.run_cycle()

    async def run_cycle(self) -> None:
        """One GC cycle; a forced request pending is consumed. Never raises (logged, retried next time)."""
        request, self._force = self._force, None
        self._in_force = request is not None
        started = time.monotonic()
        success = False
        try:
            await self._cycle(request)
            success = True
        except Exception as exc:
            self.counters["GC_CYCLE_FAILED_TOTAL"] += 1
            self.last_error = repr(exc)
            log.exception("GC cycle failed; retrying at the next cycle")
        finally:
            self._in_force = self._force is not None  # a trigger that came in during this cycle still pends
            self.counters["GC_CYCLE_TOTAL"] += 1
            self.runtimes.record("THREAD_RUNTIME", started, success)

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
        success = False
        local = self.engine.ledger_ids()  # before listing metadata: see LedgerGc.run
        try:
            result = await self.ledger_gc.run(local, self._delete_ledger)
            if result.deleted:
                log.info("ledger GC deleted %d ledgers gone from metadata: %s", len(result.deleted),
                         _ids_text(result.deleted))
            await self._overreplicated_if_due()
            success = True
        except LedgerGcAborted as exc:
            self.counters["GC_METADATA_ERROR_TOTAL"] += 1
            self.last_error = str(exc)
            log.warning("ledger GC aborted, nothing more deleted this cycle: %s", exc)
        finally:
            self.runtimes.record("GC_LEDGER_RUNTIME", started, success)

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
        d.last_cycle_at = time.time()
        freed = self._destroy_retired(d)
        self._compact(d, request)
        freed += self._destroy_retired(d)
        d.cache.save()
        self._compact_locations_if_due(d)
        return freed

    def _compact_locations_if_due(self, d: DirState) -> None:
        """RocksDB compaction of the locations index on request or every entryLocationCompactionInterval s:
        mass ledger deletions leave tombstones that slow every seek (BookKeeper PR #3802, #2686)."""
        interval = self.conf.entry_location_compaction_interval
        due = interval > 0 and time.monotonic() - d.last_location_compaction_at >= interval
        if not (d.location_compact_requested or due) or self._stop.is_set():
            return
        d.location_compacting = True
        started = time.monotonic()
        try:
            self.engine.gc_compact_locations(d.index)
        finally:
            d.location_compacting = d.location_compact_requested = False
        d.last_location_compaction_ms, d.last_location_compaction_at = int(time.time() * 1000), time.monotonic()
        d.location_compaction_count += 1
        self.counters["ENTRY_LOCATION_COMPACTION_TOTAL"] += 1
        log.info("%s: locations index compacted in %.2f s", d.locations_path, time.monotonic() - started)

    def _extract_meta(self, d: DirState) -> None:
        """Forget vanished logs, then read the metadata of logs not seen yet (ledgers map, else throttled
        scan): the extractor's code, so a log read here or for a request is read the same way."""
        ids, _ = self.engine.gc_flushed_logs(d.index)
        present = set(ids)
        for gone in [i for i in list(d.cache.logs) if i not in present]:
            d.cache.drop(gone)
        self._extractor.extract_missing(d)

    def _gc_entry_logs(self, d: DirState) -> None:
        """doGcEntryLogs: drop dead ledgers from each log's map; logs left empty are retired."""
        for meta in d.cache.snapshot():
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
        return compaction_settings(self.conf)

    def _compact(self, d: DirState, request: ForceRequest | None) -> None:
        self._compaction.run(d, request, self._suspend_major, self._suspend_minor)

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
        """Counters and gauges; a scrape also starts reading logs not seen yet, for the next scrape."""
        if self._background is not None and not self._stop.is_set():
            self._background.request()
        target = self.conf.log_size_limit if self.conf.use_target_entry_log_size_for_gc else 0
        return dict(self.counters), ex.gauges(self.dirs, target, len(self.engine.ledger_ids()))

    def pinned_ledgers(self, top: int) -> list[ex.PinnedLedger]:
        """The ``top`` ledgers pinning the most garbage, for a scrape (event loop, no waiting), with their topics
        as far as they are known (``TopicNames.labelled``)."""
        if top <= 0 or not self.dirs:
            return []
        return self.topics.labelled(ex.pinned_garbage(self.dirs, top))

    async def explain(self, limit: int) -> dict[str, Any]:
        """Every entry log on disk now: logs no cycle has read yet are read first (up to EXPLAIN_WAIT_S; the
        rest are listed as not known yet), on the extractor's thread, never the event loop or the GC thread."""
        pending = ""
        if self._background is not None:
            round_ = self._background.request()
            try:
                async with asyncio.timeout(EXPLAIN_WAIT_S):
                    await asyncio.shield(round_.done)
            except TimeoutError:
                pending = (f"metadata extraction under way for {time.time() - round_.started_at:.0f} s "
                           "(start-up or a large backlog of logs): ask again shortly")
        answer = await asyncio.to_thread(self._explain_now, pending, limit)
        return await ex.name_topics(answer, self.topics)

    def _explain_now(self, pending: str, limit: int) -> dict[str, Any]:
        """The answer from the logs on disk now (listing and ``stat`` calls: a worker thread, not the loop)."""
        listings = []
        for d in self.dirs:
            ids, active = self.engine.gc_flushed_logs(d.index)
            active_map = self.engine.gc_active_log_ledgers(d.index) if active >= 0 else {}
            listings.append(ex.DirListing(d, Listing(ids, active), active_map, self.engine.has_ledger))
        return ex.entry_logs(ex.ExplainInput(self.bookie_id, self.settings(), pending), listings, limit)

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)


EXPLAIN_WAIT_S = 10.0  # how long the explain endpoint waits for logs to be read before answering without them


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _ids_text(ids: list[int], shown: int = 20) -> str:
    text = ", ".join(str(i) for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
