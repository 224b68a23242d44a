"""A tailing reader waits for records appended after it caught up (long poll on the open ledger), follows the
writer across ledger rolls, and gets nothing (not an error) when nothing comes within its timeout."""

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
