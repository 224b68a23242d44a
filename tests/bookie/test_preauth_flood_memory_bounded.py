"""With its default configuration, a bookie flooded by clients that never send a complete request (many
connections each holding part of a large frame) and by one that pipelines reads and never reads its answers
keeps its memory bounded: the incomplete frames of connections before their first request may hold
``unauthenticatedBufferBytes`` together (the connection that would pass it is closed) and the reads in progress
are capped by the default ``maxReadsInProgressLimit``. The bookie's RSS (``VmRSS`` of its process) is sampled for
the whole flood and its growth asserted below a byte bound; afterwards the bookie still serves a client."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
import time
from pathlib import Path

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection
from tests.support.rest import call

MIB = 1024 * 1024
CONNECTIONS = 150
DECLARED = 5 * MIB - 64  # just under nettyMaxFrameSizeBytes: a legal frame length
SENT = 3 * MIB           # of it sent, then nothing: 450 MiB held if nothing bounded it
ENTRY = 32 * 1024
ENTRIES = 16
READS = 10_000           # the pipelined reads of the client that never reads: 312 MiB of answers
# Defaults: unauthenticatedBufferBytes (64 MiB), the reads in progress (1024 x 32 KiB),
# maxUnsentResponseBytesPerConnection (1 MiB), and interpreter and allocator noise. Measured: 67 MiB for the
# partial frames alone, 452 MiB with the bounds off.
BOUND = 64 * MIB + 1024 * ENTRY + 1 * MIB + 48 * MIB


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _hold_partial_frame(address: tuple[str, int], held: list[socket.socket]) -> None:
    sock = socket.create_connection(address, timeout=30)
    held.append(sock)
    try:
        sock.sendall(struct.pack(">i", DECLARED) + random.randbytes(SENT))
    except OSError:
        pass  # closed by the bookie: the budget is full


def _never_read(address: tuple[str, int], ledger: int, held: list[socket.socket]) -> None:
    requests = b"".join(client_codec.encode_request(m.ReadRequest(m.Wire.v2(), ledger, i % ENTRIES))
                        for i in range(READS))
    sock = socket.create_connection(address, timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    held.append(sock)
    try:
        sock.sendall(requests)
    except OSError:
        pass  # the bookie stopped reading it (its answers are over budget), or closed it


def _flood(address: tuple[str, int], ledger: int, pid: int) -> int:
    """Run the flood from threads, sampling the bookie's RSS until it is over; the peak RSS."""
    held: list[socket.socket] = []
    threads = [threading.Thread(target=_never_read, args=(address, ledger, held))]
    threads += [threading.Thread(target=_hold_partial_frame, args=(address, held)) for _ in range(CONNECTIONS)]
    peak = _rss(pid)
    try:
        for t in threads:
            t.start()
        settle = time.monotonic() + 60
        while time.monotonic() < settle and any(t.is_alive() for t in threads):
            peak = max(peak, _rss(pid))
            time.sleep(0.05)
        for _ in range(40):  # what the bookie still does with the bytes it received
            peak = max(peak, _rss(pid))
            time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
        for t in threads:
            t.join(30)
    return peak


async def test_unauthenticated_flood_keeps_memory_bounded(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, dbStorage_readAheadCacheMaxSizeMb=0)[0]
    assert bookie.proc is not None
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    rng = random.Random(seed)
    ledger = rng.randrange(1, 2**40)
    payloads = {i: rng.randbytes(ENTRY) for i in range(ENTRIES)}
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i, payload in payloads.items():
            assert (await conn.add(ledger, i, payload)).status == StatusCode.EOK
        for i in payloads:  # warm the allocator with every entry read once in a normal way
            assert (await conn.read(ledger, i)).status == StatusCode.EOK
    baseline = _rss(bookie.proc.pid)

    host, port = bookie.bookie_id.rsplit(":", 1)
    peak = await asyncio.to_thread(_flood, (host, int(port)), ledger, bookie.proc.pid)
    print(f"RSS growth under the flood: {(peak - baseline) / MIB:.1f} MiB (bound {BOUND / MIB:.0f} MiB, "
          f"{CONNECTIONS * SENT / MIB:.0f} MiB of partial frames sent)")
    assert peak - baseline <= BOUND, f"seed {seed}: RSS grew by {(peak - baseline) / MIB:.0f} MiB"

    metrics = (await call("GET", bookie.http_url + "/metrics", token=None)).text
    assert 'bookie_limit_unauthenticatedBufferBytes_hits_total' in metrics
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i, payload in payloads.items():
            response = await conn.read(ledger, i)
            assert response.status == StatusCode.EOK and bytes(response.body).endswith(payload)
