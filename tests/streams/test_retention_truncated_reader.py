"""A reader positioned in a ledger that retention deleted gets a clear StreamTruncated error naming the new
start of the stream, never garbage; a reader from the new start reads on."""

from __future__ import annotations

import time

import pytest
from bookie.streams import Policies, Streams, StreamTruncated
from bookie.streams.retention import Retention

from tests.streams.stream_support import Clock

HOUR = 3600_000


async def test_reader_in_a_deleted_ledger_is_told_it_was_truncated(streams: Streams, clock: Clock) -> None:
    now = clock.now + 5 * HOUR // 2  # first ledger closed 2.5h before, second 0.5h
    await streams.create_namespace("t", Policies(retention_ms=HOUR, roll_bytes=10**9, delete_pause_ms=0,
                                                 delete_when=f"{time.localtime(now / 1000).tm_hour:02d}",
                                                 ensemble=3, write_quorum=2, ack_quorum=2))
    await streams.create_stream("t", "s")
    async with await streams.writer("t", "s") as w:
        await w.append_many([(None, f"first-{i}".encode(), None) for i in range(10)])
        await w.roll()
        clock.advance(2 * HOUR)
        await w.append_many([(None, f"second-{i}".encode(), None) for i in range(10)])

    reader = streams.reader("t", "s")
    assert [r.value for r in await reader.read(4)] == [f"first-{i}".encode() for i in range(4)]

    await Retention(streams).run_once(now_ms=now)

    with pytest.raises(StreamTruncated, match="position 4 was truncated by retention; the stream now starts at "
                                              "position 10") as info:
        await reader.read(4)
    assert (info.value.position, info.value.start) == (4, 10)
    assert [r.value for r in await streams.reader("t", "s", info.value.start).read_all()] == \
        [f"second-{i}".encode() for i in range(10)]
