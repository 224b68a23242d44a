"""The inspector: why another bookie's disk is full (an Apache BookKeeper bookie's, usually), answered from beside it.

It reads that bookie's ledger directories read-only (``bookie.inspector.volumes``) and ledger metadata from the
same ZooKeeper, and answers what our bookie answers about its own disk: the explain endpoint, our entry-log gauges
and ``bookie_pinned_garbage_bytes`` on ``/metrics``, and the entry-log files the storage audit reads. It only
explains: the bookie beside it decides and acts (its own GC, its REST API for forced GC and read-only).

A ledger is live while its metadata exists, which is what BookKeeper's GC compares the disk against. The disk is
read first and the ledger ids after (a ledger written meanwhile already has its metadata, so it is never taken for
garbage), whole: a metadata error fails the answer, naming ZooKeeper, and never reads as "nothing is live". An
inspection runs in one worker thread, one at a time; a background round every ``gcWaitTime`` keeps ``/metrics``
current, and every explain request gets a fresh one (cheap: finalized logs are read once, active logs from where
the last scan stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bookie import metrics
from bookie.config import BookieConfig
from bookie.gc import explain as ex
from bookie.gc import policy as pol
from bookie.gc.compaction_run import compaction_settings
from bookie.gc.throttle import Throttle
from bookie.http.backend import ExplainUnavailable
from bookie.inspector.volumes import InspectedLog, LedgerVolumes, VolumeMissing
from bookie.metadata.store import MetadataError, MetadataStore
from bookie.storage.logmeta import LogMeta

log = logging.getLogger(__name__)

RECONNECT_S = 5.0  # between attempts to reach ZooKeeper while it cannot be reached
# While not ready, the next inspection comes after FIRST_RETRY_S, then twice as long each time, up to a GC period
# (at most MAX_RETRY_S): a failure that keeps on (ZooKeeper's ledgers unreadable after a whole read of the disk) is
# not retried faster than that. A sidecar usually starts before its bookie has made the ledger directory; while
# that directory is what is missing, a readiness check looks again itself (``readiness``), so the pod is ready at
# the first probe after the bookie made it, whatever the retry has grown to.
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 60.0
ACTIVE_VERDICT = "active: the bookie appends to it; its GC considers it once it is full and rolled"


@dataclass(frozen=True)
class Inspection:
    """One look at the disk and the metadata: every log of every directory, and the ledgers alive then."""

    at: float
    dirs: list[tuple[str, list[InspectedLog]]]   # ledger directory -> its logs
    live: frozenset[int]

    def live_metas(self) -> list[LogMeta]:
        """Each readable log's metadata holding only its live ledgers, as GC's cache holds them for our bookie:
        flushed logs only (the active log is still being written; GC considers it once it has rolled)."""
        return [replace(i.meta, ledgers={lid: n for lid, n in i.meta.ledgers.items() if lid in self.live})
                for _, logs in self.dirs for i in logs if i.meta is not None and not i.active]


class Inspector:
    """The inspector's state: the volumes it reads, the metadata service, the last inspection."""

    def __init__(self, conf: BookieConfig, store: MetadataStore) -> None:
        self.conf = conf
        self.store = store
        self.volumes = LedgerVolumes([Path(d) for d in conf.ledger_directories])
        self.topics = ex.TopicNames(store)
        self.throttle = Throttle(conf.compaction_read_rate_by_bytes)  # the inspector's reads, all rounds together
        self.last: Inspection | None = None
        self.problem: str | None = "starting: the disk has not been inspected yet"
        self._connected = False
        self._volume_missing = False   # the last look found a ledger directory missing (not yet made)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="inspect")
        self._lock = asyncio.Lock()

    @property
    def bookie_id(self) -> str:
        return self.conf.effective_bookie_id

    def settings(self) -> pol.CompactionSettings:
        return compaction_settings(self.conf)

    # ------------------------------------------------------------------ inspecting
    async def inspect(self) -> Inspection:
        """A fresh inspection; raises ``ExplainUnavailable`` naming what is missing (a volume, ZooKeeper)."""
        async with self._lock:
            try:
                dirs = await asyncio.get_running_loop().run_in_executor(self._pool, self._read_volumes)
            except VolumeMissing as exc:
                self._volume_missing = True
                raise self._unavailable(str(exc)) from None
            self._volume_missing = False
            if not self._connected:
                raise self._unavailable(self.problem or f"ZooKeeper at {self.store.zk_servers} is not connected")
            try:
                live = frozenset(await self.store.all_ledger_ids())
            except MetadataError as exc:
                raise self._unavailable(f"ledger metadata cannot be read from ZooKeeper at {self.store.zk_servers}:"
                                        f" {exc}") from None
            self.last = Inspection(time.time(), dirs, live)
            if self.problem is not None:
                log.info("inspector ready: %s inspected", ", ".join(str(v.current) for v in self.volumes.volumes))
            self.problem = None
            return self.last

    async def readiness(self) -> str | None:
        """What keeps the inspector from being ready, None once it is. While that is a ledger directory not made
        yet, it looks again first if the directory is there now: the cost of a listing, at the probes' pace."""
        if self._volume_missing and await asyncio.to_thread(self._volumes_present):
            with contextlib.suppress(ExplainUnavailable):   # the new cause is in self.problem, and logged
                await self.inspect()
        return self.problem

    def _volumes_present(self) -> bool:
        try:
            self.volumes.check()
        except VolumeMissing:
            return False
        return True

    def _read_volumes(self) -> list[tuple[str, list[InspectedLog]]]:
        return [(str(v.current), v.inspect(self.throttle)) for v in self.volumes.volumes]

    def _unavailable(self, why: str) -> ExplainUnavailable:
        if why != self.problem:  # said once per cause, not at every retry or explain request
            log.warning("inspector not ready: %s", why)
        self.problem = why
        return ExplainUnavailable(why)

    async def run(self) -> None:
        """Connect to ZooKeeper (again and again while it cannot be reached), then inspect every ``gcWaitTime``,
        and sooner while not ready (``FIRST_RETRY_S``)."""
        while not self._connected:
            self.problem = f"ZooKeeper at {self.store.zk_servers} is not connected yet"
            try:
                await self.store.connect()
                self._connected = True
            except MetadataError as exc:
                self.problem = f"ZooKeeper at {self.store.zk_servers} cannot be reached: {exc}"
                log.warning("inspector: %s; trying again in %.0f s", self.problem, RECONNECT_S)
                await asyncio.sleep(RECONNECT_S)
        period_s = self.conf.gc_wait_time / 1000
        retry_s = FIRST_RETRY_S
        while True:
            try:
                await self.inspect()
            except ExplainUnavailable:  # said in self.problem (readiness) and logged
                await asyncio.sleep(retry_s)
                retry_s = min(retry_s * 2, period_s, MAX_RETRY_S)
                continue
            retry_s = FIRST_RETRY_S
            await asyncio.sleep(period_s)

    async def close(self) -> None:
        self.topics.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        await self.store.close()  # also ends a connection attempt still waiting for ZooKeeper

    # ------------------------------------------------------------------ answers
    async def explain(self, limit: int) -> dict[str, Any]:
        """The explain endpoint's answer for the disk beside us (our bookie's JSON, see ``bookie.gc.explain``)."""
        seen = await self.inspect()
        settings = self.settings()
        dirs = [ex.dir_answer(ledger_dir, _active_id(logs),
                              [_entry(i, seen, settings) for i in logs], limit)
                for ledger_dir, logs in seen.dirs]
        answer = ex.answer(self.bookie_id, settings, dirs)
        answer["inspector"] = {"inspectedAt": int(seen.at * 1000), "liveLedgers": len(seen.live),
                               "gc": "the bookie's own; verdicts use this inspector's compaction thresholds"}
        return await ex.name_topics(answer, self.topics)

    def metrics_text(self) -> tuple[bytes, str]:
        """Our entry-log families for the last inspection (none before the first)."""
        text = metrics.Text()
        seen = self.last
        if seen is not None:
            metas = seen.live_metas()
            on_disk = {lid for m in metas for lid in m.ledgers}
            target = self.conf.log_size_limit if self.conf.use_target_entry_log_size_for_gc else 0
            gauges = ex.log_gauges(metas, 0, target, len(on_disk))
            gauges["UNREADABLE_ENTRY_LOGS"] = float(sum(1 for _, logs in seen.dirs for i in logs if i.unreadable))
            ages = [max(0.0, time.time() - m.mtime) for m in metas]
            top = self.conf.pinned_garbage_top_ledgers
            pins = ex.rank_pinned(metas, top) if top > 0 else []
            metrics.write_entry_log_families(text, gauges, ages, self.topics.labelled(pins))
        text.gauge("bookie_inspector_ready", 1 if self.problem is None else 0)
        return metrics.with_process(text)


def _active_id(logs: list[InspectedLog]) -> int:
    return max((i.log_id for i in logs if i.active), default=-1)


def _entry(i: InspectedLog, seen: Inspection, settings: pol.CompactionSettings) -> dict[str, Any]:
    base: dict[str, Any] = {"logId": f"{i.log_id:x}", "file": str(i.path), "sizeBytes": i.size,
                            "ageSeconds": round(seen.at - i.mtime, 1)}
    if i.meta is None:
        return {**base, "active": False, "figures": {"state": "unreadable", "why": i.unreadable},
                "verdict": f"unreadable: {i.unreadable}"}
    m = i.meta
    ledgers = {lid: n for lid, n in m.ledgers.items() if lid in seen.live}
    figures = ex.log_figures(ledgers, m.total_bytes, "scan" if m.from_scan else "ledgers map")
    state = {"state": "fresh", "extractedAt": int(seen.at * 1000)}
    if i.active:
        return {**base, **figures, "active": True, "figures": state, "verdict": ACTIVE_VERDICT}
    usage = sum(ledgers.values()) / m.total_bytes if m.total_bytes else 0.0
    return {**base, **figures, "active": False, "figures": state,
            "verdict": ex.threshold_verdict(len(ledgers), usage, settings)}
