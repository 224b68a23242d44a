"""Time and size retention of streams (RocketMQ's commit-log cleanup, applied to ledgers).

* A closed segment expires ``retention_ms`` after it was closed (``fileReservedTime`` against the file's
  last modification); while the stream is larger than ``retention_bytes`` its oldest segments go too. Whole
  ledgers are deleted, oldest first, never the one being written.
* Deletion runs in the daily window ``delete_when`` (hours, ``"04"`` or ``"02;04"``, local time), unless the
  fleet is under disk pressure: the fullest bookie's disk usage (``/api/v1/bookie/info`` of every bookie) is
  above ``disk_pressure_ratio``; then it runs at once (``diskSpaceCleanForciblyRatio``).
* With ``clean_forcibly`` (RocketMQ's ``cleanFileForciblyEnable``, off by default here), disk pressure also
  deletes the oldest closed ledger that has not expired yet, one per stream per pass: data is given up,
  oldest first, to keep the fleet writable; passes repeat while the pressure lasts.
* ``delete_pause_ms`` between two ledger deletions (``deletePhysicFilesInterval``).
* The stream's metadata moves first (segment out, ``start`` forward, ledger into ``pending_deletes``), then
  the ledger is deleted: a reader below ``start`` gets ``StreamTruncated``, never garbage.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bookie.streams.metadata import StreamMetadata
from bookie.streams.policies import Policies, delete_hours
from bookie.streams.stream import Streams

log = logging.getLogger(__name__)


def _bookie_usage(url: str) -> float:
    with urllib.request.urlopen(url.rstrip("/") + "/api/v1/bookie/info", timeout=10) as response:
        info = json.loads(response.read())
    total = int(info["totalSpace"])
    return 1.0 - int(info["freeSpace"]) / total if total else 0.0


async def fleet_disk_usage(bookie_http_urls: Sequence[str]) -> float | None:
    """The highest disk usage ratio among the bookies (None without bookies to ask)."""
    if not bookie_http_urls:
        return None
    usages = await asyncio.gather(*(asyncio.to_thread(_bookie_usage, u) for u in bookie_http_urls))
    return max(usages)


@dataclass
class StreamRetention:
    stream: str
    ran: bool
    reason: str
    deleted_ledgers: list[int] = field(default_factory=list)
    bytes_deleted: int = 0
    start: int = 0


@dataclass
class RetentionReport:
    disk_usage: float | None
    streams: list[StreamRetention] = field(default_factory=list)

    @property
    def deleted_ledgers(self) -> list[int]:
        return [lid for s in self.streams for lid in s.deleted_ledgers]

    def to_json(self) -> dict[str, object]:
        return {"disk_usage": self.disk_usage, "streams": [dataclasses.asdict(s) for s in self.streams],
                "deleted_ledgers": self.deleted_ledgers,
                "bytes_deleted": sum(s.bytes_deleted for s in self.streams)}


def expired_head(md: StreamMetadata, policies: Policies, now_ms: int, *, forcibly: bool = False) -> list[int]:
    """Ledgers of the closed head segments that retention removes now, oldest first; ``forcibly``: plus the
    first closed one that has not expired (never the open one)."""
    total = md.total_bytes
    out: list[int] = []
    for seg in md.segments:
        if seg.open:
            break
        too_old = (policies.retention_ms is not None and policies.retention_ms >= 0 and seg.closed_ms is not None
                   and now_ms - seg.closed_ms >= policies.retention_ms)
        too_big = policies.retention_bytes is not None and 0 <= policies.retention_bytes < total
        if not (too_old or too_big):
            if forcibly:
                out.append(seg.ledger)
            break
        out.append(seg.ledger)
        total -= seg.bytes
    return out


class Retention:
    """``await Retention(streams, bookie_http_urls).run_once()`` applies every stream's delete policy."""

    def __init__(self, streams: Streams, bookie_http_urls: Sequence[str] = (), *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.streams = streams
        self.store = streams.store
        self.bookie_http_urls = list(bookie_http_urls)
        self.sleep = sleep

    async def run_once(self, *, now_ms: int | None = None,
                       only: Sequence[tuple[str, str]] | None = None) -> RetentionReport:
        now = now_ms if now_ms is not None else self.streams.clock()
        report = RetentionReport(await fleet_disk_usage(self.bookie_http_urls))
        for ns, name in (only if only is not None else await self.store.all_streams()):
            report.streams.append(await self.apply(ns, name, now, report.disk_usage))
        return report

    async def apply(self, namespace: str, name: str, now_ms: int, disk_usage: float | None) -> StreamRetention:
        md = (await self.store.get(namespace, name)).value
        policies = await self.store.effective_policies(md)
        out = StreamRetention(md.full_name, False, "", start=md.start)
        if not policies.delete:
            out.reason = f"cleanup_policy={policies.cleanup_policy}"
            return out
        hour = time.localtime(now_ms / 1000).tm_hour
        in_window = hour in delete_hours(policies.delete_when or "04")
        pressure = (disk_usage is not None and policies.disk_pressure_ratio is not None
                    and disk_usage > policies.disk_pressure_ratio)
        if not (in_window or pressure):
            out.reason = f"outside the window (hour {hour:02d}, delete_when={policies.delete_when})"
            return out
        out.ran = True
        forcibly = bool(pressure and policies.clean_forcibly)
        out.reason = "disk pressure, forcibly" if forcibly else \
            "disk pressure" if pressure and not in_window else "in the window"
        for i, ledger_id in enumerate(expired_head(md, policies, now_ms, forcibly=forcibly)):
            if i:
                await self.sleep((policies.delete_pause_ms or 0) / 1000)
            removed = await self._truncate(namespace, name, ledger_id)
            if removed is None:
                break  # the head changed under us (a cleaner swap): next pass
            out.bytes_deleted += removed
            await self.streams.delete_ledgers([ledger_id])
            await self._forget(namespace, name, ledger_id)
            out.deleted_ledgers.append(ledger_id)
        out.start = (await self.store.get(namespace, name)).value.start
        if out.deleted_ledgers:
            log.info("retention of %s: deleted ledgers %s (%s)", md.full_name, out.deleted_ledgers, out.reason)
        return out

    async def _truncate(self, namespace: str, name: str, ledger_id: int) -> int | None:
        removed: list[int] = []

        def change(md: StreamMetadata) -> StreamMetadata | None:
            removed.clear()
            if not md.segments or md.segments[0].ledger != ledger_id or md.segments[0].open:
                return None
            head, rest = md.segments[0], md.segments[1:]
            assert head.last is not None
            start = rest[0].first if rest else head.last + 1
            removed.append(head.bytes)
            return dataclasses.replace(md, segments=rest, start=max(md.start, start),
                                       cleaned_to=max(md.cleaned_to, start),
                                       pending_deletes=(*md.pending_deletes, ledger_id), epoch=md.epoch + 1)

        await self.store.update(namespace, name, change)
        return removed[0] if removed else None

    async def _forget(self, namespace: str, name: str, ledger_id: int) -> None:
        def change(md: StreamMetadata) -> StreamMetadata | None:
            if ledger_id not in md.pending_deletes:
                return None
            return dataclasses.replace(md, pending_deletes=tuple(x for x in md.pending_deletes if x != ledger_id))

        await self.store.update(namespace, name, change)
