"""A connection that has not sent a complete request within ``unauthenticatedTimeoutMs`` of connecting is closed,
whether it stays silent or trickles in part of a frame; a connection that sent one stays open past that time
and keeps being served. Each such close is counted in /metrics."""

from __future__ import annotations

import asyncio
import struct

from tests.bookie.test_connection_limits import _closed_by_bookie, _connect, _hits, _served
from tests.support.bookies import BookieFactory


async def _trickle(stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], stop: asyncio.Event) -> None:
    """A frame of 1,000 bytes, 10 of them at a time: never complete within the timeout."""
    writer = stream[1]
    writer.write(struct.pack(">i", 1000))
    while not stop.is_set() and not writer.is_closing():
        writer.write(b"0123456789")
        await asyncio.sleep(0.2)


async def test_connections_without_a_request_are_closed(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, unauthenticatedTimeoutMs=1500)[0]
    served = await _connect(bookie.bookie_id, "127.0.0.1")
    assert await _served(served)
    silent = await _connect(bookie.bookie_id, "127.0.0.1")
    trickling = await _connect(bookie.bookie_id, "127.0.0.1")
    stop = asyncio.Event()
    trickle = asyncio.create_task(_trickle(trickling, stop))
    try:
        assert await _closed_by_bookie(silent)
        assert await _closed_by_bookie(trickling)
    finally:
        stop.set()
        await trickle
    assert await _served(served)  # open past the timeout: it is not pre-authentication any more
    hits = await _hits(bookie.http_url)
    assert hits["bookie_limit_unauthenticatedTimeoutMs_hits_total"] == 2
    for _, writer in (served, silent, trickling):
        writer.close()
