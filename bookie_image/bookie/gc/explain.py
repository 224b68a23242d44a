"""Why is this entry log still on disk? Gauges for Prometheus and the ``GET /api/v1/bookie/entry_logs`` answer.

Both read a snapshot of GC's per-directory metadata (copied whole, so the GC thread can keep working) and
never touch the disk except ``stat`` for sizes and ages.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from bookie.gc import policy as pol
from bookie.gc.logmeta import LogMeta
from bookie.metadata.pulsar import pulsar_owner
from bookie.metadata.store import MetadataError

if TYPE_CHECKING:
    from bookie.gc.collector import DirState, GarbageCollector
    from bookie.metadata.store import MetadataStore

PINNING_LEDGERS_SHOWN = 10
TOPIC_LOOKUPS = 16  # concurrent ledger-metadata reads while naming topics
TOPIC_LOOKUP_TIMEOUT_S = 5.0


def _snapshot(d: DirState) -> list[LogMeta]:
    return list(d.cache.logs.values())  # one C-level copy: atomic with respect to the GC thread


def gauges(gc: GarbageCollector) -> dict[str, float]:
    """BookKeeper's GC gauges (summed over ledger directories) plus ours (quarantined, pending, oldest)."""
    target = gc.conf.log_size_limit if gc.conf.use_target_entry_log_size_for_gc else 0
    logs: list[LogMeta] = []
    pending = 0
    for d in gc.dirs:
        logs += _snapshot(d)
        pending += len(d.refs.retired())
    live = [m for m in logs if not m.pending_delete]
    usages = [pol.LogUsage(m.log_id, m.total_bytes, m.remaining_bytes) for m in live if not m.quarantined]
    out = {
        "ACTIVE_ENTRY_LOG_TOTAL": float(len(live)),
        "ACTIVE_ENTRY_LOG_SPACE_BYTES": float(sum(m.remaining_bytes for m in live)),
        "ENTRY_LOG_SPACE_BYTES": float(sum(m.file_size for m in logs)),
        "ACTIVE_LEDGER_TOTAL": float(len(gc.engine.ledger_ids())),
        "ENTRY_LOG_COMPACT_RATIO": _compact_ratio(usages),
        "QUARANTINED_ENTRY_LOGS": float(sum(1 for m in logs if m.quarantined)),
        "PENDING_DELETION_ENTRY_LOGS": float(pending),
        "OLDEST_ENTRY_LOG_AGE_SECONDS": max((time.time() - m.mtime for m in live), default=0.0),
    }
    for i, count in enumerate(pol.usage_buckets(usages, target)):
        out[f"entry_log_usage_buckets_le_{(i + 1) * 10}"] = float(count)
    return out


def _compact_ratio(usages: list[pol.LogUsage]) -> float:
    """Dead bytes / all bytes of the flushed logs: what compaction could still reclaim."""
    total = sum(u.total_bytes for u in usages)
    return (total - sum(u.remaining_bytes for u in usages)) / total if total else 0.0


def entry_logs(gc: GarbageCollector, limit: int) -> dict[str, Any]:
    """Every entry log, oldest first, with what keeps it: the ``explain`` endpoint's JSON."""
    s = gc.settings()
    now = time.time()
    dirs = []
    for d in gc.dirs:
        retired = d.refs.retired()
        metas = sorted(_snapshot(d), key=lambda m: m.mtime)
        logs = [_describe(d, m, s, now, retired) for m in metas]
        active = d.active_log_id
        dirs.append({"ledgerDir": str(d.ledger_dir), "activeLogId": f"{active:x}" if active >= 0 else None,
                     "entryLogCount": len(logs), "entryLogs": logs[:limit] if limit > 0 else logs})
    return {"bookieId": gc.bookie_id, "minorCompactionThreshold": s.minor_threshold,
            "majorCompactionThreshold": s.major_threshold, "ledgerDirs": dirs}


def _describe(d: DirState, m: LogMeta, s: pol.CompactionSettings, now: float,
              retired: dict[int, float]) -> dict[str, Any]:
    usage = m.remaining_bytes / m.total_bytes if m.total_bytes else 0.0
    pinning = sorted(m.ledgers.items(), key=lambda kv: -kv[1])[:PINNING_LEDGERS_SHOWN]
    return {
        "logId": f"{m.log_id:x}", "file": str(d.compactor.path_of(m.log_id)), "sizeBytes": m.file_size,
        "totalBytes": m.total_bytes, "remainingBytes": m.remaining_bytes, "usage": round(usage, 4),
        "ageSeconds": round(now - m.mtime, 1), "liveLedgerCount": len(m.ledgers),
        "pinningLedgers": [{"ledgerId": lid, "bytes": size} for lid, size in pinning],
        "metadataFrom": "scan" if m.from_scan else "ledgers map",
        "readers": d.refs.holders(m.log_id),
        "verdict": _verdict(d, m, usage, s, retired),
    }


def _verdict(d: DirState, m: LogMeta, usage: float, s: pol.CompactionSettings,
             retired: dict[int, float]) -> str:
    if m.quarantined:
        return f"quarantined: {m.quarantined}"
    if m.log_id in retired:
        return (f"deleted as soon as its readers release it (retired {retired[m.log_id]:.0f} s ago; "
                f"forced after {d.refs.forced_destroy_s:.0f} s)")
    if not m.ledgers:
        return "no live ledger: deleted at the next GC cycle"
    if s.minor_enabled and usage < s.minor_threshold:
        return f"usage {usage:.2f} < minorCompactionThreshold {s.minor_threshold}: compacted at the next minor"
    if s.major_enabled and usage < s.major_threshold:
        return f"usage {usage:.2f} < majorCompactionThreshold {s.major_threshold}: compacted at the next major"
    return (f"kept: {len(m.ledgers)} live ledgers hold {usage:.0%} of it, above every compaction threshold "
            f"(deleted when those ledgers are deleted)")


async def name_topics(answer: dict[str, Any], store: MetadataStore) -> dict[str, Any]:
    """Adds ``topic`` to each pinning ledger a Pulsar broker wrote (``bookie.metadata.pulsar``), read from its
    ledger metadata. A ledger whose metadata cannot be read (deleted meanwhile, ZooKeeper away) gets none:
    explaining the disk never depends on the metadata service."""
    pins = [p for d in answer["ledgerDirs"] for log in d["entryLogs"] for p in log["pinningLedgers"]]
    limit = asyncio.Semaphore(TOPIC_LOOKUPS)

    async def topic_of(ledger_id: int) -> tuple[int, str | None]:
        async with limit:
            try:
                md = await asyncio.wait_for(store.read_ledger_metadata(ledger_id), TOPIC_LOOKUP_TIMEOUT_S)
            except (MetadataError, TimeoutError):
                return ledger_id, None
        return ledger_id, pulsar_owner(md.value.custom_metadata)

    topics = dict(await asyncio.gather(*(topic_of(i) for i in {p["ledgerId"] for p in pins})))
    for p in pins:
        if topics.get(p["ledgerId"]):
            p["topic"] = topics[p["ledgerId"]]
    return answer
