"""With clean_forcibly (RocketMQ's cleanFileForciblyEnable), disk pressure across the fleet also deletes
ledgers that have not expired: the oldest closed one per stream per pass, never the one being written, and
only while the pressure lasts. Without it, pressure only lifts the daily window."""

from __future__ import annotations

import time

import pytest
from bookie.streams import Policies, Streams
from bookie.streams.retention import Retention

from tests.streams.stream_support import Clock
from tests.support.bookies import BookieSet

HOUR = 3600_000


async def _two_closed_young_ledgers(streams: Streams, clock: Clock) -> list[int]:
    """A stream with two closed ledgers far from expiry."""
    other_hour = f"{(time.localtime(clock.now / 1000).tm_hour + 12) % 24:02d}"
    await streams.create_namespace("f", Policies(retention_ms=100 * HOUR, delete_when=other_hour,
                                                 delete_pause_ms=0, ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("f", "s")
    for n in range(2):
        async with await streams.writer("f", "s") as w:
            await w.append(b"closed %d" % n)
    return [s.ledger for s in (await streams.metadata("f", "s")).segments]


async def test_pressure_with_clean_forcibly_deletes_the_oldest_unexpired_ledger_per_pass(
        streams: Streams, clock: Clock, bookies: BookieSet) -> None:
    closed = await _two_closed_young_ledgers(streams, clock)
    assert len(closed) == 2
    urls = [b.http_url for b in bookies.bookies]
    async with await streams.writer("f", "s") as writer:
        await writer.append(b"being written")
        open_ledger = (await streams.metadata("f", "s")).segments[-1].ledger
        await streams.set_policies("f", "s", Policies(disk_pressure_ratio=0.0, clean_forcibly=True))

        first = await Retention(streams, urls).run_once()
        assert first.deleted_ledgers == closed[:1] and first.streams[0].reason == "disk pressure, forcibly"
        second = await Retention(streams, urls).run_once()
        assert second.deleted_ledgers == closed[1:]
        third = await Retention(streams, urls).run_once()
        assert third.deleted_ledgers == []          # the open ledger is never deleted
        assert [s.ledger for s in (await streams.metadata("f", "s")).segments] == [open_ledger]

        # Pressure gone: nothing more goes, forcibly or not.
        await streams.set_policies("f", "s", Policies(disk_pressure_ratio=1.0))
        assert (await Retention(streams, urls).run_once()).deleted_ledgers == []


async def test_pressure_without_clean_forcibly_keeps_unexpired_ledgers(streams: Streams, clock: Clock,
                                                                        bookies: BookieSet) -> None:
    closed = await _two_closed_young_ledgers(streams, clock)
    await streams.set_policies("f", "s", Policies(disk_pressure_ratio=0.0))
    report = await Retention(streams, [b.http_url for b in bookies.bookies]).run_once()
    assert report.deleted_ledgers == [] and report.streams[0].reason == "disk pressure"
    assert [s.ledger for s in (await streams.metadata("f", "s")).segments] == closed


def test_the_policy_is_a_boolean_on_the_command_line() -> None:
    assert Policies.parse(["clean_forcibly=true"]).clean_forcibly is True
    assert Policies.parse(["clean-forcibly=false"]).clean_forcibly is False
    with pytest.raises(ValueError, match=r"clean_forcibly=maybe.*expected true or false"):
        Policies.parse(["clean_forcibly=maybe"])
