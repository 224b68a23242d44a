"""Connection limits close only the offending connection: one over ``maxConnections`` or
``maxConnectionsPerClientAddress``, one idle past ``connectionIdleTimeoutMs``, one holding an incomplete
frame past ``partialFrameTimeoutMs``; the others keep being served, and each hit is counted in /metrics."""

from __future__ import annotations

import asyncio
import struct

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from tests.support.bookies import BookieFactory
from tests.support.rest import get

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _connect(bookie_id: str, from_host: str) -> Stream:
    host, port = bookie_id.rsplit(":", 1)
    return await asyncio.open_connection(host, int(port), local_addr=(from_host, 0))


async def _served(stream: Stream) -> bool:
    """A read of a ledger nobody wrote: answered (ENOLEDGER) on a connection the bookie serves."""
    reader, writer = stream
    writer.write(client_codec.encode_request(m.ReadRequest(m.Wire.v3(1), 1, 0)))
    try:
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 30))[0]
        response = client_codec.decode_response(await asyncio.wait_for(reader.readexactly(size), 30), 3)
    except (ConnectionError, asyncio.IncompleteReadError):
        return False
    return bool(response.status == StatusCode.ENOLEDGER)


async def _closed_by_bookie(stream: Stream) -> bool:
    try:
        return await asyncio.wait_for(stream[0].read(1), 60) == b""
    except ConnectionError:
        return True


async def _hits(url: str) -> dict[str, float]:
    text = (await get(f"{url}/metrics")).text
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name.startswith("bookie_limit_")}


async def test_connections_over_the_limits_are_closed_alone(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, maxConnections=3, maxConnectionsPerClientAddress=2)[0]
    first = [await _connect(bookie.bookie_id, "127.0.0.1") for _ in range(2)]
    over_per_address = await _connect(bookie.bookie_id, "127.0.0.1")
    other_address = await _connect(bookie.bookie_id, "127.0.0.2")
    over_total = await _connect(bookie.bookie_id, "127.0.0.3")
    assert await _closed_by_bookie(over_per_address)
    assert await _closed_by_bookie(over_total)
    for stream in [*first, other_address]:
        assert await _served(stream)
    assert await _hits(bookie.http_url) == {"bookie_limit_maxConnectionsPerClientAddress_hits_total": 1.0,
                                            "bookie_limit_maxConnections_hits_total": 1.0}
    for _, writer in [*first, other_address, over_per_address, over_total]:
        writer.close()


async def test_idle_and_half_sent_connections_are_closed(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, connectionIdleTimeoutMs=1000, partialFrameTimeoutMs=1000)[0]
    idle = await _connect(bookie.bookie_id, "127.0.0.1")
    half = await _connect(bookie.bookie_id, "127.0.0.1")
    half[1].write(struct.pack(">i", 1000) + b"0123456789")  # 10 of 1000 bytes, then nothing
    assert await _closed_by_bookie(half)
    assert await _closed_by_bookie(idle)
    hits = await _hits(bookie.http_url)
    assert hits["bookie_limit_partialFrameTimeoutMs_hits_total"] == 1
    assert hits["bookie_limit_connectionIdleTimeoutMs_hits_total"] >= 1
    assert await _served(await _connect(bookie.bookie_id, "127.0.0.1")), "new connections are still served"
    for _, writer in (idle, half):
        writer.close()
