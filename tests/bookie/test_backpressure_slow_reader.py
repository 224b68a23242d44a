"""Response backpressure: a client that pipelines reads of large entries and never reads its socket cannot
raise the bookie's memory by more than its unsent-response budget plus the responses its read slots hold.

The bookie's RSS (``VmRSS`` in ``/proc/<pid>/status``) is sampled for the whole life of such a connection, and
its largest value is asserted as a bound. The connection is closed by the bookie once it has drained nothing
for ``waitTimeoutOnResponseBackpressureMs`` (``closeChannelOnResponseTimeout``), which frees its read slots:
another client then reads every entry.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from pathlib import Path

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection

MIB = 1024 * 1024
ENTRY = MIB
ENTRIES = 16
READ_SLOTS = 8
BUDGET = 4 * MIB
REQUESTS = 400  # 400 MiB of responses if nothing held them back
# Interpreter and allocator noise around one read of a 1 MiB entry (copies in the codec, free lists).
SLACK = 48 * MIB


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _flood_and_never_read(address: tuple[str, int], ledger: int, pid: int, peak: list[int]) -> bool:
    """Send the reads, never read an answer; sample RSS until the bookie closes the connection (True) or
    a minute has passed (False)."""
    requests = b"".join(client_codec.encode_request(m.ReadRequest(m.Wire.v3(i + 1), ledger, i % ENTRIES))
                        for i in range(REQUESTS))
    with socket.create_connection(address, timeout=60) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.settimeout(0.2)
        sent = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            peak[0] = max(peak[0], _rss(pid))
            if _closed_by_peer(sock):
                return True
            if sent == len(requests):
                time.sleep(0.2)
                continue
            try:
                sent += sock.send(requests[sent:sent + 65536])
            except TimeoutError:
                continue
            except OSError:
                return True  # reset by the bookie
    return False


def _closed_by_peer(sock: socket.socket) -> bool:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)
    return info[0] in (7, 8)  # TCP_CLOSE, TCP_CLOSE_WAIT: the bookie reset the connection or sent its FIN


async def test_slow_reader_cannot_grow_bookie_memory(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, maxUnsentResponseBytesPerConnection=BUDGET, maxReadsInProgressLimit=READ_SLOTS,
                             waitTimeoutOnResponseBackpressureMs=3000, closeChannelOnResponseTimeout=True,
                             dbStorage_readAheadCacheMaxSizeMb=0)
    bookie = cluster[0]
    assert bookie.proc is not None
    ledger = random.randrange(1, 2**40)
    payloads = {i: random.randbytes(ENTRY) for i in range(ENTRIES)}
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i, payload in payloads.items():
            assert (await conn.add(ledger, i, payload)).status == StatusCode.EOK
        await asyncio.sleep(2)  # past a checkpoint: the write cache is flushed
        for _ in range(2):  # warm the allocator up with every entry read once in a normal way
            for i in payloads:
                assert (await conn.read(ledger, i)).status == StatusCode.EOK
    baseline = _rss(bookie.proc.pid)

    peak = [baseline]
    host, port = bookie.bookie_id.rsplit(":", 1)
    closed = await asyncio.to_thread(_flood_and_never_read, (host, int(port)), ledger, bookie.proc.pid, peak)
    print(f"RSS growth with a client that reads nothing: {(peak[0] - baseline) / MIB:.1f} MiB")
    bound = BUDGET + READ_SLOTS * ENTRY + SLACK
    assert peak[0] - baseline <= bound, f"RSS grew by {(peak[0] - baseline) / MIB:.0f} MiB"
    assert closed, "the bookie never closed a connection that drained nothing"

    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i, payload in payloads.items():
            response = await conn.read(ledger, i)
            assert response.status == StatusCode.EOK and bytes(response.body).endswith(payload)
