"""A connection writes its requests at the end of the loop iteration that made them, in one write, or as soon as
64 KiB of them are waiting: a burst of appends starts reaching the bookie while the rest of it is still being
encoded, so the bookie works on it meanwhile instead of waiting for the whole burst. Either way every request
arrives once, whole, in the order it was made."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator

from bookie.client.connection import WRITE_EARLY_BYTES, BookieConnection
from bookie.protocol import codec
from bookie.protocol import messages as m
from bookie.protocol.framing import FrameReader

BODY = b"e" * 1024


@contextlib.contextmanager
def listening_peer() -> Iterator[socket.socket]:
    """A plain socket listening on loopback: the test reads what reached it without running the event loop."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        yield listener


def arrived(peer: socket.socket) -> bytes:
    """Everything the kernel has delivered to ``peer`` so far (no waiting)."""
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := peer.recv(1 << 20, socket.MSG_DONTWAIT):
            chunks.append(chunk)
    return b"".join(chunks)


async def connected(listener: socket.socket) -> tuple[BookieConnection, socket.socket]:
    address = listener.getsockname()
    _, conn = await asyncio.get_running_loop().create_connection(
        lambda: BookieConnection(f"{address[0]}:{address[1]}", 3, 1 << 20), *address)
    peer, _ = listener.accept()
    return conn, peer


def add(entry_id: int) -> Callable[[m.Wire], m.Request]:
    return lambda wire: m.AddRequest(wire, 7, entry_id, b"key", BODY)


def requests_in(data: bytes) -> list[m.Request]:
    return [codec.decode_request(frame) for frame in FrameReader(1 << 20).feed(data)]


async def test_a_burst_starts_leaving_before_the_loop_iteration_ends() -> None:
    with listening_peer() as listener:
        conn, peer = await connected(listener)
        with peer:
            count = 3 * WRITE_EARLY_BYTES // len(BODY)
            for entry_id in range(count):
                conn.send_then(add(entry_id), 30.0, lambda _: None)
            early = arrived(peer)  # the loop has not run since the first of them was made
            assert len(early) >= WRITE_EARLY_BYTES
            for _ in range(100):
                await asyncio.sleep(0.01)
                early += arrived(peer)
                if len(requests_in(early)) == count:
                    break
            sent = requests_in(early)
            assert [r.entry_id for r in sent if isinstance(r, m.AddRequest)] == list(range(count))
            assert [r.wire.txn_id for r in sent] == list(range(1, count + 1))
            assert all(isinstance(r, m.AddRequest) and r.body == BODY for r in sent)
            conn.close()


async def test_a_few_requests_leave_together_at_the_end_of_the_iteration() -> None:
    with listening_peer() as listener:
        conn, peer = await connected(listener)
        with peer:
            for entry_id in range(3):
                conn.send_then(add(entry_id), 30.0, lambda _: None)
            assert arrived(peer) == b"", "written before the loop iteration ended"
            await asyncio.sleep(0.05)
            data = arrived(peer)
            assert [r.entry_id for r in requests_in(data) if isinstance(r, m.AddRequest)] == [0, 1, 2]
            conn.close()
