"""Retention by age (fileReservedTime: a ledger expires retention_ms after it was closed) and by total size
deletes whole ledgers from the oldest, never the one being written, pausing delete_pause_ms between two
deletions; the stream's start moves past them and the rest reads as before."""

from __future__ import annotations

import time

from bookie.streams import Policies, Streams
from bookie.streams.retention import Retention

from tests.streams.stream_support import Clock

HOUR = 3600_000


def window_at(now_ms: int) -> str:
    return f"{time.localtime(now_ms / 1000).tm_hour:02d}"


async def _three_ledgers(streams: Streams, clock: Clock, policies: Policies) -> None:
    """Ledgers closed at t0+1h, t0+5h, t0+9h, then an open one."""
    await streams.create_namespace("r", policies)
    await streams.create_stream("r", "s")
    w = await streams.writer("r", "s")
    for gap in (1, 4, 4):
        await w.append_many([(None, f"at+{clock.now}-{i}".encode(), None) for i in range(5)])
        clock.advance(gap * HOUR)
        await w.roll()
    await w.append(b"being written")


async def test_ledgers_older_than_the_retention_are_deleted_newer_kept(streams: Streams, clock: Clock) -> None:
    now = clock.now + 10 * HOUR
    await _three_ledgers(streams, clock, Policies(retention_ms=6 * HOUR, delete_when=window_at(now),
                                                  delete_pause_ms=250, ensemble=3, write_quorum=2, ack_quorum=2))
    before = await streams.metadata("r", "s")
    pauses: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        pauses.append(seconds)

    report = await Retention(streams, sleep=fake_sleep).run_once(now_ms=now)

    assert report.deleted_ledgers == [before.segments[0].ledger]  # closed at +1h: 9h old; +5h: 5h old, kept
    after = await streams.metadata("r", "s")
    assert after.segments == before.segments[1:] and after.start == 5
    assert before.segments[0].ledger not in await streams.bk.list_ledgers()
    assert [r.position for r in await streams.reader("r", "s", 5).read_all()] == list(range(5, 15))
    assert pauses == []  # one deletion: no pause

    report = await Retention(streams, sleep=fake_sleep).run_once(now_ms=now + 24 * HOUR)  # same window, a day later
    assert report.deleted_ledgers == [s.ledger for s in before.segments[1:3]]  # never the open ledger
    assert pauses == [0.25]
    assert (await streams.metadata("r", "s")).segments == before.segments[3:]


async def test_size_retention_keeps_the_newest_ledgers_within_the_limit(streams: Streams, clock: Clock) -> None:
    now = clock.now + 10 * HOUR
    await _three_ledgers(streams, clock, Policies(retention_ms=-1, delete_when=window_at(now), delete_pause_ms=0,
                                                  ensemble=3, write_quorum=2, ack_quorum=2))
    before = await streams.metadata("r", "s")
    limit = before.total_bytes - before.segments[0].bytes - 1  # one ledger is not enough, two are
    await streams.set_policies("r", "s", Policies(retention_bytes=limit))

    report = await Retention(streams).run_once(now_ms=now)

    assert report.deleted_ledgers == [s.ledger for s in before.segments[:2]]
    after = await streams.metadata("r", "s")
    assert after.total_bytes <= limit and after.start == before.segments[2].first
