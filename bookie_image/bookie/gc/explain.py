"""Why is this entry log still on disk? Gauges for Prometheus (the ledgers pinning the most garbage among them)
and the ``GET /api/v1/bookie/entry_logs`` answer.

Both read a snapshot of GC's per-directory metadata (copied whole, so the GC thread can keep working) and
never touch the disk except ``stat`` for sizes and ages. The answer lists every log on disk at the time of
the request and says for each where its figures come from: ``fresh`` (its file read for this answer or
since the last GC cycle, live ledgers as of now), ``lastGcCycle`` (as that cycle left them, with its time)
or ``unknown`` (with why).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from bookie.gc import policy as pol
from bookie.gc.extract import Listing
from bookie.gc.state import DirState
from bookie.metadata.ledger_manager import LedgerManager
from bookie.metadata.pulsar import pulsar_owner
from bookie.metadata.store import MetadataError, NoSuchLedger
from bookie.storage.logmeta import LogMeta

log = logging.getLogger(__name__)

PINNING_LEDGERS_SHOWN = 10
TOPIC_LOOKUPS = 16  # concurrent ledger-metadata reads while naming topics
TOPIC_LOOKUP_TIMEOUT_S = 5.0
TOPICS_REMEMBERED = 4096  # ledgers whose topic is kept between requests


def gauges(dirs: list[DirState], target_log_size: int, ledger_count: int) -> dict[str, float]:
    """BookKeeper's GC gauges (summed over ledger directories) plus ours (quarantined, pending, oldest)."""
    logs: list[LogMeta] = []
    pending = 0
    for d in dirs:
        logs += d.cache.snapshot()
        pending += len(d.refs.retired())
    return log_gauges(logs, pending, target_log_size, ledger_count)


def log_gauges(logs: list[LogMeta], pending: int, target_log_size: int, ledger_count: int) -> dict[str, float]:
    """The entry-log gauges of a set of logs as GC (or the inspector) last read them; ``pending``: logs waiting
    for their readers before deletion."""
    live = [m for m in logs if not m.pending_delete]
    usages = [pol.LogUsage(m.log_id, m.total_bytes, m.remaining_bytes) for m in live if not m.quarantined]
    out = {
        "ACTIVE_ENTRY_LOG_TOTAL": float(len(live)),
        "ACTIVE_ENTRY_LOG_SPACE_BYTES": float(sum(m.remaining_bytes for m in live)),
        "ENTRY_LOG_SPACE_BYTES": float(sum(m.file_size for m in logs)),
        "ACTIVE_LEDGER_TOTAL": float(ledger_count),
        "ENTRY_LOG_COMPACT_RATIO": _compact_ratio(usages),
        "QUARANTINED_ENTRY_LOGS": float(sum(1 for m in logs if m.quarantined)),
        "PENDING_DELETION_ENTRY_LOGS": float(pending),
        "OLDEST_ENTRY_LOG_AGE_SECONDS": max((time.time() - m.mtime for m in live), default=0.0),
    }
    for i, count in enumerate(pol.usage_buckets(usages, target_log_size)):
        out[f"entry_log_usage_buckets_le_{(i + 1) * 10}"] = float(count)
    return out


@dataclass(frozen=True)
class PinnedLedger:
    """A ledger that keeps garbage on disk: the dead bytes of the flushed entry logs it still has entries in."""

    ledger_id: int
    garbage_bytes: int
    entry_logs: int
    topic: str | None = None


def pinned_garbage(dirs: list[DirState], top: int) -> list[PinnedLedger]:
    """The ``top`` ledgers keeping the most garbage, most first (as of GC's last look at each log)."""
    return rank_pinned((m for d in dirs for m in d.cache.snapshot()), top)


def rank_pinned(logs: Iterable[LogMeta], top: int) -> list[PinnedLedger]:
    """The ``top`` ledgers keeping the most garbage in ``logs``, most first.

    A flushed log with dead bytes goes only when compaction rewrites it or its last live ledger is deleted, so
    each of its live ledgers is charged all of its dead bytes (the storage audit's pinning table counts the
    same way): a ledger with a few entries in many old logs comes out on top. Quarantined logs and logs
    waiting for deletion are not counted: no ledger keeps those."""
    garbage: dict[int, int] = {}
    logs_of: dict[int, int] = {}
    for m in logs:
        dead = m.total_bytes - m.remaining_bytes
        if dead <= 0 or m.quarantined or m.pending_delete:
            continue
        for ledger_id in m.ledgers:
            garbage[ledger_id] = garbage.get(ledger_id, 0) + dead
            logs_of[ledger_id] = logs_of.get(ledger_id, 0) + 1
    ranked = heapq.nsmallest(top, garbage.items(), key=lambda kv: (-kv[1], kv[0]))
    return [PinnedLedger(ledger_id, dead, logs_of[ledger_id]) for ledger_id, dead in ranked]


class TopicNames:
    """The Pulsar topic of ledgers (``pulsar_owner``), read from their metadata once: a ledger's custom
    metadata never changes. A ledger whose metadata is gone has none; a lookup that failed (ZooKeeper away,
    a timeout) is tried again next time. At most ``TOPICS_REMEMBERED`` ledgers are remembered."""

    def __init__(self, store: LedgerManager) -> None:
        self.store = store
        self.known: dict[int, str | None] = {}
        self.failed: set[int] = set()
        self._task: asyncio.Task[dict[int, str | None]] | None = None

    async def resolve(self, ids: Iterable[int]) -> dict[int, str | None]:
        """Each ledger's topic (None: not a Pulsar ledger, or not known), reading the metadata not read yet."""
        wanted = set(ids)
        missing = wanted - self.known.keys()
        if len(self.known) + len(missing) > TOPICS_REMEMBERED:
            self.known = {i: t for i, t in self.known.items() if i in wanted}
        limit = asyncio.Semaphore(TOPIC_LOOKUPS)

        async def lookup(ledger_id: int) -> None:
            async with limit:
                try:
                    async with asyncio.timeout(TOPIC_LOOKUP_TIMEOUT_S):
                        md = await self.store.read_ledger_metadata(ledger_id)
                except NoSuchLedger:
                    self.known[ledger_id] = None
                except (MetadataError, TimeoutError):
                    self.failed.add(ledger_id)
                    return
                else:
                    self.known[ledger_id] = pulsar_owner(md.value.custom_metadata)
            self.failed.discard(ledger_id)

        await asyncio.gather(*(lookup(i) for i in missing))
        return {i: self.known.get(i) for i in wanted}

    def resolve_soon(self, ids: Iterable[int]) -> None:
        """Looks up in the background the ledgers not known yet (one lookup at a time): for callers that must
        not wait, such as a scrape."""
        missing = [i for i in ids if i not in self.known]
        if missing and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self.resolve(missing), name="topic-names")
            self._task.add_done_callback(_log_failure)

    def labelled(self, pins: list[PinnedLedger]) -> list[PinnedLedger]:
        """``pins`` with their topics, for a scrape (no waiting): topics not known yet are looked up in the
        background, and a ledger is listed once its lookup has ended, so that its series does not change labels
        from one scrape to the next (unless the lookup failed: then without a topic)."""
        self.resolve_soon(p.ledger_id for p in pins)
        return [replace(p, topic=self.known.get(p.ledger_id)) for p in pins
                if p.ledger_id in self.known or p.ledger_id in self.failed]

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("naming the topics of pinning ledgers failed: %r", task.exception())


def _compact_ratio(usages: list[pol.LogUsage]) -> float:
    """Dead bytes / all bytes of the flushed logs: what compaction could still reclaim."""
    total = sum(u.total_bytes for u in usages)
    return (total - sum(u.remaining_bytes for u in usages)) / total if total else 0.0


@dataclass
class ExplainInput:
    bookie_id: str
    settings: pol.CompactionSettings
    pending: str             # why logs not read yet are not: extraction still under way ("" if it finished)


@dataclass
class DirListing:
    """One directory at request time: GC's state, the logs on disk, what the active log holds so far."""

    state: DirState
    listing: Listing
    active_ledgers: dict[int, int]
    alive: Callable[[int], bool]


def entry_logs(req: ExplainInput, dirs: list[DirListing], limit: int) -> dict[str, Any]:
    """Every entry log on disk, oldest first, with what keeps it: the ``explain`` endpoint's JSON."""
    now = time.time()
    out = []
    for dl in dirs:
        known = {m.log_id: m for m in dl.state.cache.snapshot()}
        found = (_entry(req, dl, known.get(log_id), log_id, now) for log_id in dl.listing.log_ids)
        out.append(dir_answer(str(dl.state.ledger_dir), dl.listing.active,
                              [e for e in found if e is not None], limit))
    return answer(req.bookie_id, req.settings, out)


def dir_answer(ledger_dir: str, active: int, logs: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """One ledger directory of the answer: its logs oldest first, at most ``limit`` of them (0: all)."""
    logs.sort(key=lambda e: -e["ageSeconds"])
    return {"ledgerDir": ledger_dir, "activeLogId": f"{active:x}" if active >= 0 else None,
            "entryLogCount": len(logs), "entryLogs": logs[:limit] if limit > 0 else logs}


def answer(bookie_id: str, settings: pol.CompactionSettings, dirs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"bookieId": bookie_id, "minorCompactionThreshold": settings.minor_threshold,
            "majorCompactionThreshold": settings.major_threshold, "ledgerDirs": dirs}


def _entry(req: ExplainInput, dl: DirListing, meta: LogMeta | None, log_id: int,
           now: float) -> dict[str, Any] | None:
    d = dl.state
    path = d.compactor.path_of(log_id)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None  # deleted since the listing
    base = {"logId": f"{log_id:x}", "file": str(path), "sizeBytes": st.st_size,
            "ageSeconds": round(now - st.st_mtime, 1), "readers": d.refs.holders(log_id)}
    if log_id == dl.listing.active:
        live = {lid: size for lid, size in dl.active_ledgers.items() if dl.alive(lid)}
        return {**base, **log_figures(live, sum(dl.active_ledgers.values()), "checkpoints so far"),
                "active": True, "figures": {"state": "fresh", "extractedAt": _ms(now)},
                "verdict": "active: checkpoints append to it; GC considers it once it is full and rolls"}
    if meta is None:
        why = req.pending or "written after the metadata extraction this request waited for: ask again"
        return {**base, "active": False, "figures": {"state": "unknown", "why": why},
                "verdict": "not known yet"}
    from_cycle = d.last_cycle_at > 0 and meta.read_at <= d.last_cycle_at
    if from_cycle:
        ledgers, figures = meta.ledgers, {"state": "lastGcCycle", "gcCycleAt": _ms(d.last_cycle_at)}
    else:
        ledgers = {lid: size for lid, size in list(meta.ledgers.items()) if dl.alive(lid)}
        figures = {"state": "fresh", "extractedAt": _ms(meta.read_at)}
    usage = sum(ledgers.values()) / meta.total_bytes if meta.total_bytes else 0.0
    return {**base, **log_figures(ledgers, meta.total_bytes, "scan" if meta.from_scan else "ledgers map"),
            "active": False, "figures": figures, "verdict": _verdict(d, meta, ledgers, usage, req.settings)}


def log_figures(ledgers: dict[int, int], total: int, source: str) -> dict[str, Any]:
    remaining = sum(ledgers.values())
    pinning = sorted(ledgers.items(), key=lambda kv: -kv[1])[:PINNING_LEDGERS_SHOWN]
    return {"totalBytes": total, "remainingBytes": remaining,
            "usage": round(remaining / total, 4) if total else 0.0, "liveLedgerCount": len(ledgers),
            "pinningLedgers": [{"ledgerId": lid, "bytes": size} for lid, size in pinning],
            "metadataFrom": source}


def _ms(t: float) -> int:
    return int(t * 1000)


def _verdict(d: DirState, m: LogMeta, ledgers: dict[int, int], usage: float, s: pol.CompactionSettings) -> str:
    retired = d.refs.retired()
    if m.quarantined:
        return f"quarantined: {m.quarantined}"
    if m.log_id in retired:
        return (f"deleted as soon as its readers release it (retired {retired[m.log_id]:.0f} s ago; "
                f"forced after {d.refs.forced_destroy_s:.0f} s)")
    return threshold_verdict(len(ledgers), usage, s)


def threshold_verdict(live_ledgers: int, usage: float, s: pol.CompactionSettings) -> str:
    """What GC does with a flushed log that no reader holds: BookKeeper's rules, by its usage."""
    if not live_ledgers:
        return "no live ledger: deleted at the next GC cycle"
    if s.minor_enabled and usage < s.minor_threshold:
        return f"usage {usage:.2f} < minorCompactionThreshold {s.minor_threshold}: compacted at the next minor"
    if s.major_enabled and usage < s.major_threshold:
        return f"usage {usage:.2f} < majorCompactionThreshold {s.major_threshold}: compacted at the next major"
    return (f"kept: {live_ledgers} live ledgers hold {usage:.0%} of it, above every compaction threshold "
            f"(deleted when those ledgers are deleted)")


async def name_topics(answer: dict[str, Any], topics: TopicNames) -> dict[str, Any]:
    """Adds ``topic`` to each pinning ledger a Pulsar broker wrote (``bookie.metadata.pulsar``), read from its
    ledger metadata. A ledger whose metadata cannot be read (deleted meanwhile, ZooKeeper away) gets none:
    explaining the disk never depends on the metadata service."""
    # Logs whose figures are not known yet list no pinning ledgers.
    pins = [p for d in answer["ledgerDirs"] for log in d["entryLogs"] for p in log.get("pinningLedgers", ())]
    named = await topics.resolve(p["ledgerId"] for p in pins)
    for p in pins:
        if named.get(p["ledgerId"]):
            p["topic"] = named[p["ledgerId"]]
    return answer
