"""Prometheus metrics of a bookie in Apache BookKeeper's exposition (its ``PrometheusMetricsProvider``).

Dashboards and alert rules written for BookKeeper read these names unchanged: the same names, types and
labels (``success``/``quantile`` on summaries, ``threadPool``/``thread``, ``journalIndex``,
``ledgerDir``/``indexDir``), latencies in milliseconds, counters without a ``_total`` suffix, no ``# HELP``.
prometheus-client cannot print that (it appends ``_total`` to counters, writes ``# HELP`` and has no
windowed quantiles), so this module writes the text itself; prometheus-client only supplies the standard
``process_*`` families, rendered by its own registry and appended.

Recording is cheap on the hot path (``bookie.stats``: bucketed windows, no lock, no object per sample).

Names of our own (GC quarantine, pending deletions, oldest entry log, read-only reason, entry-log age
histogram) are listed in ``docs/monitoring.md``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from bookie.client.autorecovery import AuditorStats, Autorecovery
from bookie.config import BookieConfig
from bookie.gc.explain import PinnedLedger
from bookie.processor import RequestProcessor
from bookie.security import BookieSecurity
from bookie.state import DiskUsage, StateManager
from bookie.stats import QUANTILES, FlushStats, JournalStats, OpStat, RequestStats
from bookie.storage.engine import StorageEngine
from bookie.storage.ledger_dir import LedgerDirStorage


class MetricsSource(Protocol):
    """What a scrape reads of a running bookie (``bookie.server.BookieServer``)."""

    conf: BookieConfig
    state: StateManager
    usages: list[DiskUsage]
    gc: Any                 # the garbage collector, or None when GC is off
    autorecovery: Autorecovery | None  # autoRecoveryDaemonEnabled: the auditor and replication worker
    security: BookieSecurity | None  # the bookie port's TLS and authorization (refusal counts)

    @property
    def connections(self) -> Sized: ...

    @property
    def engine(self) -> StorageEngine: ...

    @property
    def processor(self) -> RequestProcessor: ...

    def metrics_text(self) -> tuple[bytes, str]: ...

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
@dataclass
class DirSnapshot:
    """One ledger directory (and its index directory) as read at scrape time."""

    ledger_dir: str
    index_dir: str
    write_cache_size: int
    write_cache_count: int
    read_cache_size: int
    read_cache_count: int
    read_cache_hits: int
    read_cache_misses: int
    ledgers_count: int
    entries_count: int
    usage_percent: float
    writable: bool
    read_entry: OpStat
    readahead_count: OpStat
    readahead_size: OpStat
    flush: FlushStats


@dataclass
class JournalSnapshot:
    index: int
    stats: JournalStats
    queue_size: int
    write_bytes: int
    syncing: int  # records of the group being fsynced: BookKeeper's force-write queue


@dataclass
class Snapshot:
    """Everything one scrape prints, gathered by the server from its components."""

    status: int  # 1 writable, 0 read-only, -1 not registered
    read_only_reason: str
    requests: RequestStats
    adds_in_progress: int
    reads_in_progress: int
    adds_blocked: int
    reads_blocked: int
    read_threads: int
    max_pending_adds: int
    max_pending_reads: int
    connections: int
    journals: list[JournalSnapshot]
    dirs: list[DirSnapshot]
    gc_counters: dict[str, float] = field(default_factory=dict)
    gc_gauges: dict[str, float] = field(default_factory=dict)
    gc_runtimes: dict[str, OpStat] = field(default_factory=dict)  # BookKeeper's GC run-time summaries
    entry_log_ages: list[float] = field(default_factory=list)
    ledgers: int = 0
    engine_counters: dict[str, int] = field(default_factory=dict)
    disk_thresholds: dict[str, float] = field(default_factory=dict)
    limit_hits: dict[str, int] = field(default_factory=dict)     # limit key -> times hit (docs/limits.md)
    long_polls_parked: int = 0
    journal_damaged_groups: int = 0
    auditor: AuditorStats | None = None  # when autorecovery runs in this bookie
    pinned: list[PinnedLedger] = field(default_factory=list)  # pinnedGarbageTopLedgers of them at most
    refusals: dict[str, int] = field(default_factory=dict)  # kind -> clients refused (docs/security.md)


# BookKeeper's GC stats: counters and gauges under ``bookie_``. Everything else the GC reports is ours.
GC_COUNTERS = ("MAJOR_COMPACTION_TOTAL", "MINOR_COMPACTION_TOTAL", "ENTRY_LOCATION_COMPACTION_TOTAL",
               "DELETED_LEDGER_TOTAL", "RECLAIM_FAILED_TO_DELETE", "RECLAIMED_COMPACTION_SPACE_BYTES",
               "RECLAIMED_DELETION_SPACE_BYTES")
GC_GAUGES = ("ACTIVE_ENTRY_LOG_TOTAL", "ACTIVE_ENTRY_LOG_SPACE_BYTES", "ACTIVE_LEDGER_TOTAL")
# The auditor's stats in a bookie running autorecovery (BookKeeper's ``replication`` then ``auditor`` scopes;
# a standalone BookKeeper autorecovery prints them without ``replication_``).
AUDITOR = "replication_auditor_"
# Upper bounds (s) of ``bookie_entry_log_age_seconds``: an hour, six hours, a day, a week, 30 and 90 days.
AGE_BUCKETS = (3600.0, 21600.0, 86400.0, 604800.0, 2592000.0, 7776000.0)


def _number(value: float) -> str:
    """Java's ``Number.toString`` for what BookKeeper prints: integers without a fraction."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int) or (math.isfinite(value) and value == int(value) and abs(value) < 1e15):
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def _labels(pairs: Sequence[tuple[str, str]]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def sanitize(name: str) -> str:
    """BookKeeper's (prometheus client_java's) metric name sanitizer."""
    return "".join(c if (c.isalnum() and c.isascii()) or c in "_:" else "_" for c in name)


class Text:
    """Builds one exposition: ``# TYPE`` once per family, samples in BookKeeper's layout."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._typed: set[str] = set()

    def _type(self, name: str, kind: str) -> None:
        if name not in self._typed:
            self._typed.add(name)
            self.lines.append(f"# TYPE {name} {kind}")

    def simple(self, kind: str, name: str, value: float, labels: Sequence[tuple[str, str]] = ()) -> None:
        self._type(name, kind)
        self.lines.append(f"{name}{{{_labels(labels)}}} {_number(value)}" if labels
                          else f"{name} {_number(value)}")

    def counter(self, name: str, value: float, labels: Sequence[tuple[str, str]] = ()) -> None:
        self.simple("counter", name, value, labels)

    def gauge(self, name: str, value: float, labels: Sequence[tuple[str, str]] = ()) -> None:
        self.simple("gauge", name, value, labels)

    def summary(self, name: str, stat: OpStat, labels: Sequence[tuple[str, str]] = ()) -> None:
        """``writeOpStat``: failures then successes; 7 quantiles, then ``_count`` and ``_sum``. Extra labels
        follow ``, `` as BookKeeper prints them."""
        self._type(name, "summary")
        extra = f", {_labels(labels)}" if labels else ""
        for success, side in (("false", stat.failed), ("true", stat.ok)):
            for q, value in zip(QUANTILES, side.quantiles(), strict=True):
                self.lines.append(f'{name}{{success="{success}",quantile="{q}"{extra}}} {_number(value)}')
            self.lines.append(f'{name}_count{{success="{success}"{extra}}} {side.count}')
            self.lines.append(f'{name}_sum{{success="{success}"{extra}}} {float(side.sum)!r}')

    def histogram(self, name: str, values: Sequence[float], bounds: Sequence[float],
                  labels: Sequence[tuple[str, str]] = ()) -> None:
        self._type(name, "histogram")
        for bound in (*bounds, math.inf):
            count = sum(1 for v in values if v <= bound)
            le = "+Inf" if math.isinf(bound) else _number(bound)
            self.lines.append(f"{name}_bucket{{{_labels([*labels, ('le', le)])}}} {count}")
        suffix = f"{{{_labels(labels)}}}" if labels else ""
        self.lines.append(f"{name}_count{suffix} {len(values)}")
        self.lines.append(f"{name}_sum{suffix} {float(sum(values))!r}")

    def render(self) -> str:
        return "\n".join(self.lines) + "\n"


def ledger_dir_usage_name(ledger_dir: str) -> str:
    """``bookie_ledger_dir_<path>_usage``: BookKeeper names the gauge after the ledger directory's path (the
    parent of its ``current``)."""
    return sanitize(f"bookie_ledger_dir_{ledger_dir.replace('/', '_').replace('-', '_')}_usage")


def write_bookie(text: Text, s: Snapshot) -> None:
    """Every family in BookKeeper's order (gauges, counters, summaries), then ours."""
    _gauges(text, s)
    _counters(text, s)
    _summaries(text, s)
    _ours(text, s)


def _dir_labels(d: DirSnapshot) -> list[tuple[str, str]]:
    return [("indexDir", d.index_dir), ("ledgerDir", d.ledger_dir)]


def _gc_labels(s: Snapshot) -> list[tuple[str, str]]:
    """BookKeeper's GC stats are per ledger directory; ours are counted for the whole bookie, so they carry
    the directory's labels only when there is one directory."""
    return _dir_labels(s.dirs[0]) if len(s.dirs) == 1 else []


def _gauges(text: Text, s: Snapshot) -> None:
    text.gauge("bookie_SERVER_STATUS", s.status)
    for kind, in_progress, blocked in (("ADD", s.adds_in_progress, s.adds_blocked),
                                       ("READ", s.reads_in_progress, s.reads_blocked)):
        text.gauge(f"bookkeeper_server_{kind}_ENTRY_IN_PROGRESS", in_progress)
        text.gauge(f"bookkeeper_server_{kind}_ENTRY_BLOCKED", blocked)
    # One event loop processes adds and high-priority requests: BookKeeper's write and high-priority pools
    # with one thread each and an always empty queue. Reads queue for the read threads.
    pools = (("BookieWriteThreadPool", 1, s.max_pending_adds, 0, s.requests.add.ok.count),
             ("BookieHighPriorityThread", 1, s.max_pending_adds, 0, 0),
             ("BookieReadThreadPool", s.read_threads, s.max_pending_reads, s.reads_in_progress,
              s.requests.request["read"].ok.count + s.requests.request["read"].failed.count))
    for pool, threads, max_queue, _, _ in pools:
        text.gauge(f"bookkeeper_server_{pool}_threads", threads)
        text.gauge(f"bookkeeper_server_{pool}_max_queue_size", max_queue)
    for pool, _, _, queued, completed in pools:
        thread = [("thread", f"{pool}-OrderedExecutor-0-0")]
        text.gauge("bookkeeper_server_thread_executor_queue", queued, thread)
        text.gauge("bookkeeper_server_thread_executor_completed", completed, thread)
        text.gauge("bookkeeper_server_thread_executor_tasks_completed", completed, thread)
    for d in s.dirs:
        labels = _dir_labels(d)
        text.gauge("bookie_write_cache_size", d.write_cache_size, labels)
        text.gauge("bookie_write_cache_count", d.write_cache_count, labels)
        text.gauge("bookie_read_cache_size", d.read_cache_size, labels)
        text.gauge("bookie_read_cache_count", d.read_cache_count, labels)
        text.gauge("bookie_ledgers_count", d.ledgers_count, labels)
        text.gauge("bookie_entries_count", d.entries_count, labels)
    text.gauge("bookie_ledger_writable_dirs", sum(1 for d in s.dirs if d.writable))
    text.gauge("bookie_ledger_num_dirs", len(s.dirs))
    for d in s.dirs:
        text.gauge(ledger_dir_usage_name(str(PurePath(d.ledger_dir).parent)), d.usage_percent)
    for name in GC_GAUGES:
        if name in s.gc_gauges:
            text.gauge(f"bookie_{name}", s.gc_gauges[name], _gc_labels(s))
    if s.auditor is not None and s.auditor.under_replicated is not None:  # this bookie is the auditor
        text.gauge(f"{AUDITOR}NUM_UNDER_REPLICATED_LEDGERS_GUAGE", s.auditor.under_replicated)


def _counters(text: Text, s: Snapshot) -> None:
    r = s.requests
    text.counter("bookkeeper_server_ADD_ENTRY_REJECTED", r.add_rejected)
    text.counter("bookkeeper_server_READ_ENTRY_REJECTED", r.read_rejected)
    text.counter("bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR", r.read_noentry)
    text.counter("bookie_WRITE_BYTES", r.write_bytes)
    text.counter("bookie_READ_BYTES", r.read_bytes)
    text.counter("bookie_BOOKIE_FORCE_LEDGER", r.request["force_ledger"].ok.count)
    for j in s.journals:
        label = [("journalIndex", str(j.index))]
        # BookKeeper's queue sizes are counters it increments and decrements, hence the type.
        text.counter("bookie_journal_JOURNAL_QUEUE_SIZE", j.queue_size, label)
        text.counter("bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE", j.syncing, label)
        text.counter("bookie_journal_JOURNAL_WRITE_BYTES", j.write_bytes, label)
    text.counter("bookie_throttled_write_requests", s.engine_counters.get("throttled_adds", 0))
    for d in s.dirs:
        text.counter("bookie_read_cache_hits", d.read_cache_hits, _dir_labels(d))
        text.counter("bookie_read_cache_misses", d.read_cache_misses, _dir_labels(d))
    for name in GC_COUNTERS:
        text.counter(f"bookie_{name}", s.gc_counters.get(name, 0), _gc_labels(s))


def _summaries(text: Text, s: Snapshot) -> None:
    r = s.requests
    for kind, (request_name, name, pool) in RequestStats.KINDS.items():
        text.summary(f"bookkeeper_server_{request_name}", r.request[kind])
        # Only adds and reads are thread-scoped in BookKeeper (threadPool/thread labels).
        labels = [("threadPool", pool), ("thread", "0")] if kind in ("add", "read") else []
        text.summary(f"bookkeeper_server_{name}", r.processing[kind], labels)
    for j in s.journals:
        label = [("journalIndex", str(j.index))]
        text.summary("bookie_journal_JOURNAL_ADD_ENTRY", j.stats.add_entry, label)
        text.summary("bookie_journal_JOURNAL_SYNC", j.stats.sync, label)
        text.summary("bookie_journal_JOURNAL_FLUSH_LATENCY", j.stats.flush, label)
        text.summary("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES", j.stats.batch_entries, label)
        text.summary("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES", j.stats.batch_bytes, label)
    for d in s.dirs:
        labels = _dir_labels(d)
        text.summary("bookie_read_entry", d.read_entry,
                     [*labels, ("thread", "0"), ("threadPool", "BookieReadThreadPool")])
        text.summary("bookie_readahead_batch_count", d.readahead_count, labels)
        text.summary("bookie_readahead_batch_size", d.readahead_size, labels)
        text.summary("bookie_flush", d.flush.whole, labels)
        text.summary("bookie_flush_entrylog", d.flush.entry_log, labels)
        text.summary("bookie_flush_locations_index", d.flush.locations_index, labels)
        text.summary("bookie_flush_ledger_index", d.flush.ledger_index, labels)
        text.summary("bookie_flush_size", d.flush.size, labels)
    for name, stat in s.gc_runtimes.items():
        text.summary(f"bookie_{name}", stat, _gc_labels(s))
    if s.auditor is not None:
        text.summary(f"{AUDITOR}NUM_UNDER_REPLICATED_LEDGERS", s.auditor.num_under_replicated)
        text.summary(f"{AUDITOR}UNDER_REPLICATED_LEDGERS_TOTAL_SIZE", s.auditor.under_replicated_total_size)


def _ours(text: Text, s: Snapshot) -> None:
    """Families BookKeeper has no equivalent of (documented in docs/monitoring.md)."""
    text.gauge("bookie_read_only", 1 if s.status == 0 else 0)
    if s.read_only_reason:
        text.gauge("bookie_read_only_reason", 1, [("reason", s.read_only_reason)])
    text.gauge("bookie_connections", s.connections)
    text.gauge("bookie_ledgers", s.ledgers)
    text.counter("bookie_checkpoints_total", s.engine_counters.get("checkpoints", 0))
    text.counter("bookie_journal_replayed_records_total", s.engine_counters.get("replayed_records", 0))
    for d in s.dirs:
        text.gauge("bookie_ledger_dir_used_ratio", d.usage_percent / 100, [("dir", d.ledger_dir)])
    for level, ratio in s.disk_thresholds.items():  # the water marks, for dashboards to draw against usage
        text.gauge("bookie_disk_usage_threshold_ratio", ratio, [("level", level)])
    for name, value in sorted(s.gc_counters.items()):
        if name not in GC_COUNTERS:
            text.counter(f"bookie_{name}", value)
    write_entry_log_families(text, s.gc_gauges, s.entry_log_ages, s.pinned)
    text.gauge("bookie_long_polls_parked", s.long_polls_parked)
    text.gauge("bookie_journal_damaged_groups", s.journal_damaged_groups)
    for limit, hits in sorted(s.limit_hits.items()):
        text.counter(f"bookie_limit_{limit}_hits_total", hits)
    for kind, refused in sorted(s.refusals.items()):
        text.counter("bookie_connection_refusals_total", refused, [("reason", kind.replace(" ", "_"))])


def write_entry_log_families(text: Text, gauges: dict[str, float], ages: Sequence[float],
                             pinned: Sequence[PinnedLedger]) -> None:
    """Our entry-log families (``bookie.gc.explain.log_gauges`` but BookKeeper's own ``GC_GAUGES``, the age
    histogram, the ledgers pinning the most garbage): a bookie's, or the inspector's beside a Java bookie, which
    exports BookKeeper's GC gauges itself."""
    for name, value in sorted(gauges.items()):
        if name not in GC_GAUGES:
            text.gauge(f"bookie_{name}", value)
    text.histogram("bookie_entry_log_age_seconds", ages, AGE_BUCKETS)
    for p in pinned:  # bounded: pinnedGarbageTopLedgers series
        labels = [("ledger", str(p.ledger_id))] + ([("topic", p.topic)] if p.topic else [])
        text.gauge("bookie_pinned_garbage_bytes", p.garbage_bytes, labels)


_PROCESS = CollectorRegistry(auto_describe=False)
ProcessCollector(registry=_PROCESS)
PlatformCollector(registry=_PROCESS)
GCCollector(registry=_PROCESS)


def render(snapshot: Snapshot) -> tuple[bytes, str]:
    """The ``/metrics`` body: BookKeeper's families and ours, then the process's (CPU, memory, Python GC)."""
    text = Text()
    write_bookie(text, snapshot)
    return with_process(text)


def with_process(text: Text) -> tuple[bytes, str]:
    """``text`` followed by the process's families (CPU, memory, Python GC), and the content type."""
    return text.render().encode() + generate_latest(_PROCESS), CONTENT_TYPE


# ---------------------------------------------------------------------------------------------- the server side
def snapshot_of(server: MetricsSource) -> Snapshot:
    """Read every component's numbers for one scrape (event loop; no disk access but RocksDB's estimates)."""
    engine, processor, conf = server.engine, server.processor, server.conf
    processor.drain_stats()
    state = server.state.status
    status = -1 if not state.running or state.shutting_down else (0 if state.read_only else 1)
    usage = {u.path: u.used_fraction for u in server.usages}
    per_dir = [0] * len(engine.dirs)
    index = {id(d): i for i, d in enumerate(engine.dirs)}
    for lid in engine.ledgers:
        per_dir[index[id(engine.dir_of(lid))]] += 1
    dirs = [_dir_snapshot(d, usage.get(str(d.ledger_dir), 0.0), conf.disk_usage_threshold, per_dir[i])
            for i, d in enumerate(engine.dirs)]
    journals = [JournalSnapshot(i, j.stats, j.queue_size(), j.bytes_written, j.syncing)
                for i, j in enumerate(engine.journals)]
    gc_counters: dict[str, float] = {}
    gc_gauges: dict[str, float] = {}
    gc_runtimes: dict[str, OpStat] = {}
    ages: list[float] = []
    pinned: list[PinnedLedger] = []
    if server.gc is not None and hasattr(server.gc, "metrics"):
        gc_counters, gc_gauges = server.gc.metrics()
        if hasattr(server.gc, "runtimes"):
            seconds, gc_runtimes = server.gc.runtimes.snapshot()
            gc_counters.update(seconds)
        ages = entry_log_ages(server.gc)
        pinned = server.gc.pinned_ledgers(conf.pinned_garbage_top_ledgers)
    return Snapshot(
        status=status, read_only_reason=str(state.reason.value) if state.read_only else "",
        requests=processor.stats, adds_in_progress=processor.adds.count, reads_in_progress=processor.reads.count,
        adds_blocked=processor.adds.blocked, reads_blocked=processor.reads.blocked,
        read_threads=max(1, conf.num_read_worker_threads), max_pending_adds=conf.max_pending_add_requests_per_thread,
        max_pending_reads=conf.max_pending_read_requests_per_thread, connections=len(server.connections),
        journals=journals, dirs=dirs, gc_counters=gc_counters, gc_gauges=gc_gauges, gc_runtimes=gc_runtimes,
        entry_log_ages=ages,
        ledgers=len(engine.ledgers), engine_counters=dict(engine.stats),
        disk_thresholds={"full": conf.disk_usage_threshold, "warn": conf.disk_usage_warn_threshold,
                         "writable_below": conf.effective_lwm_threshold},
        limit_hits=dict(processor.limits.counts), long_polls_parked=processor.long_polls.count,
        journal_damaged_groups=len(engine.journal_damage),
        auditor=server.autorecovery.stats if server.autorecovery is not None else None, pinned=pinned,
        refusals=dict(server.security.refusals.counts) if server.security is not None else {})


def _dir_snapshot(d: LedgerDirStorage, used: float, full_threshold: float, ledgers: int) -> DirSnapshot:
    return DirSnapshot(
        ledger_dir=str(d.current), index_dir=str(d.index_dir / "current"),
        write_cache_size=d.write_cache.size + (d.flushing.size if d.flushing is not None else 0),
        write_cache_count=d.write_cache.count + (d.flushing.count if d.flushing is not None else 0),
        read_cache_size=d.read_cache.size, read_cache_count=len(d.read_cache),
        read_cache_hits=d.read_cache.hits, read_cache_misses=d.read_cache.misses,
        ledgers_count=ledgers, entries_count=_estimated_keys(d.locations.db),
        usage_percent=used * 100.0, writable=used < full_threshold,
        read_entry=d.read_entry_stat, readahead_count=d.readahead_count_stat, readahead_size=d.readahead_size_stat,
        flush=d.flush_stats)


def _estimated_keys(db: Any) -> int:
    """RocksDB's ``estimate-num-keys``, as BookKeeper's ``bookie_entries_count`` reads it."""
    try:
        return int(db.property_int_value("rocksdb.estimate-num-keys") or 0)
    except Exception:  # a closed or compacting database: the gauge says 0 rather than failing the scrape
        return 0


def entry_log_ages(gc: Any) -> list[float]:
    """Age (s since last modified) of every entry log GC knows of and has not deleted yet."""
    now = time.time()
    ages = []
    for d in gc.dirs:
        for meta in list(d.cache.logs.values()):  # one C-level copy: atomic with respect to the GC thread
            if not meta.pending_delete:
                ages.append(max(0.0, now - meta.mtime))
    return ages


def all_op_stats(server: MetricsSource) -> list[OpStat]:
    stats = list(server.processor.stats.all_stats())
    for journal in server.engine.journals:
        stats += journal.stats.all_stats()
    for d in server.engine.dirs:
        stats += (d.read_entry_stat, d.readahead_count_stat, d.readahead_size_stat)
        stats += d.flush_stats.all_stats()
    if server.autorecovery is not None:
        stats += server.autorecovery.stats.op_stats()
    return stats


async def rollover_forever(server: MetricsSource) -> None:
    """Close a quantile window every ``prometheusStatsLatencyRolloverSeconds``, as BookKeeper's provider."""
    while True:
        await asyncio.sleep(server.conf.prometheus_stats_latency_rollover_seconds)
        server.processor.drain_stats()  # the hot path's adds belong to the window that closes
        for stat in all_op_stats(server):
            stat.rotate()
        if server.gc is not None and hasattr(server.gc, "runtimes"):
            server.gc.runtimes.rotate()  # under the GC's lock: its threads record into them


async def serve_dedicated_port(conf: BookieConfig, metrics_text: Callable[[], tuple[bytes, str]],
                               middlewares: Sequence[Any] = ()) -> web.AppRunner:
    """``/metrics`` alone on ``prometheusStatsHttpAddress:prometheusStatsHttpPort`` (a bookie's, or an
    inspector's): monitoring reaches it without reaching the admin API. ``middlewares``: the admin API's credential
    check, so that /metrics asks here what it asks there."""
    async def metrics(_: web.Request) -> web.Response:
        body, content_type = metrics_text()
        return web.Response(body=body, headers={"Content-Type": content_type})

    app = web.Application(middlewares=list(middlewares))
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, conf.prometheus_stats_http_address, conf.prometheus_stats_http_port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner
