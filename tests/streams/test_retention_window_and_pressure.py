"""Retention runs only in its daily window (deleteWhen) unless the fleet is under disk pressure: the fullest
bookie's disk usage, from every bookie's /api/v1/bookie/info, above disk_pressure_ratio; then at once."""

from __future__ import annotations

import time

from bookie.streams import Policies, Streams
from bookie.streams.retention import Retention, fleet_disk_usage

from tests.streams.stream_support import Clock
from tests.support.bookies import BookieSet

HOUR = 3600_000


async def _expired_stream(streams: Streams, clock: Clock, delete_when: str) -> list[int]:
    await streams.create_namespace("w", Policies(retention_ms=HOUR, delete_when=delete_when, delete_pause_ms=0,
                                                 ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("w", "s")
    async with await streams.writer("w", "s") as w:
        await w.append(b"old")
    clock.advance(2 * HOUR)
    return [s.ledger for s in (await streams.metadata("w", "s")).segments]


def _other_hour(now_ms: int) -> str:
    return f"{(time.localtime(now_ms / 1000).tm_hour + 12) % 24:02d}"


async def test_outside_the_window_nothing_is_deleted(streams: Streams, clock: Clock) -> None:
    await _expired_stream(streams, clock, _other_hour(clock.now + 2 * HOUR))
    report = await Retention(streams).run_once()
    assert report.deleted_ledgers == [] and "outside the window" in report.streams[0].reason


async def test_in_the_window_expired_ledgers_go(streams: Streams, clock: Clock) -> None:
    ledgers = await _expired_stream(streams, clock, f"{time.localtime((clock.now + 2 * HOUR) / 1000).tm_hour:02d}")
    report = await Retention(streams).run_once()
    assert report.deleted_ledgers == ledgers and report.streams[0].reason == "in the window"


async def test_disk_pressure_across_the_fleet_overrides_the_window(streams: Streams, clock: Clock,
                                                                    bookies: BookieSet) -> None:
    ledgers = await _expired_stream(streams, clock, _other_hour(clock.now + 2 * HOUR))
    urls = [b.http_url for b in bookies.bookies]
    usage = await fleet_disk_usage(urls)
    assert usage is not None and 0.0 < usage < 1.0

    # Usage below the ratio: no pressure, still outside the window.
    await streams.set_policies("w", "s", Policies(disk_pressure_ratio=1.0))
    assert (await Retention(streams, urls).run_once()).deleted_ledgers == []

    # Usage above the ratio: retention runs at once.
    await streams.set_policies("w", "s", Policies(disk_pressure_ratio=0.0))
    report = await Retention(streams, urls).run_once()
    assert report.disk_usage is not None and report.disk_usage > 0.0
    assert report.deleted_ledgers == ledgers and report.streams[0].reason == "disk pressure"
