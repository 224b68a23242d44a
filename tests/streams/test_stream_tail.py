"""A tailing reader waits for records appended after it caught up (long poll on the open ledger), follows the
writer across ledger rolls, sees the last record of a writer that went idle (explicit LAC), and gets nothing
(not an error) when nothing comes within its timeout."""

from __future__ import annotations

import asyncio

from bookie.streams import Streams

from tests.streams.stream_support import SMALL


async def test_tail_follows_a_live_writer_across_rolls(streams: Streams) -> None:
    await streams.create_namespace("t", SMALL)
    await streams.create_stream("t", "live")
    writer = await streams.writer("t", "live")
    reader = streams.reader("t", "live")
    assert await reader.tail(timeout_s=0.2) == []

    async def produce() -> None:
        for i in range(40):
            await writer.append(f"record-{i:02d}".encode() * 4)
        await writer.close()

    producing = asyncio.ensure_future(produce())
    got: list[bytes | None] = []
    while len(got) < 40:
        batch = await reader.tail(timeout_s=30)
        assert batch, f"the tail stalled after {len(got)} records"
        got.extend(r.value for r in batch)
    await producing
    assert got == [f"record-{i:02d}".encode() * 4 for i in range(40)]
    assert len((await streams.metadata("t", "live")).segments) > 3


async def test_the_last_record_of_an_idle_writer_reaches_the_tail(streams: Streams) -> None:
    # The LAC normally travels on the next entry; the writer's explicit LAC lets a tail see its last record.
    await streams.create_namespace("t", SMALL)
    await streams.create_stream("t", "idle")
    async with await streams.writer("t", "idle") as writer:
        reader = streams.reader("t", "idle")
        assert await writer.append(b"only one") == 0
        got = await reader.tail(timeout_s=30)
        assert [r.value for r in got] == [b"only one"]
        assert (await streams.metadata("t", "idle")).open_segment is not None  # still being written
