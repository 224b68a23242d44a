"""Fail-stop: an fsync error in the journal makes the bookie leave ZooKeeper and exit non-zero, and no add is
acknowledged after the error (a later fsync that succeeds proves nothing about the pages of the failed one).

The error is injected once, through the ``journal.fsync`` failpoint, into a real bookie process under a
pipelined add load on several ledgers (one connection each, so groups are queued while one is fsynced);
each ledger's entries are journaled in order, so every acknowledged entry id must be below every failed one.
After a restart without the failpoint, every acknowledged entry reads back.
"""

from __future__ import annotations

import asyncio
import contextlib
import random

import pytest
from bookie import failpoints
from bookie.metadata.store import MetadataStore
from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.server import EXIT_STORAGE_FAILED

from tests.support.bookies import BookieFactory
from tests.support.raw_client import MASTER_KEY, RawConnection, entry

FAILING_FSYNC = 40  # the 40th group commit's fdatasync fails
WINDOW = 50
IN_FLIGHT = 400
WRITERS = 4


async def _add_until_refused(bookie_id: str, ledger: int, acked: dict[int, bytes], sent: set[int]) -> None:
    """Pipelined adds, sent while earlier ones are still in flight, until the bookie refuses one or goes away."""
    conn = await RawConnection.open(bookie_id, 3)
    bodies: dict[int, bytes] = {}
    in_flight = asyncio.Semaphore(IN_FLIGHT)
    refused = asyncio.Event()

    async def send() -> None:
        next_id = 0
        while not refused.is_set():
            for _ in range(WINDOW):
                await in_flight.acquire()
            batch = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, random.randbytes(500)))
                     for i in range(next_id, next_id + WINDOW)]
            next_id += WINDOW
            bodies.update((r.entry_id, bytes(r.body)) for r in batch)
            sent.update(r.entry_id for r in batch)
            await conn.send_raw(b"".join(client_codec.encode_request(r) for r in batch))

    async def receive() -> None:
        while True:  # until the bookie closes the connection: answers after a refusal count too
            response = _decode(await conn.read_frame(60))
            in_flight.release()
            if response.status == StatusCode.EOK:
                acked[response.entry_id] = bodies[response.entry_id]
            else:
                refused.set()

    tasks = [asyncio.create_task(send()), asyncio.create_task(receive())]
    try:
        # Ends when the bookie closes the connection while stopping (unanswered adds were not acknowledged).
        await asyncio.wait(tasks[1:])
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await conn.close()


def _decode(frame: bytes) -> m.AddResponse:
    response = client_codec.decode_response(frame, 3)
    assert isinstance(response, m.AddResponse)
    return response


async def test_journal_fsync_error_unregisters_and_exits(bookie_factory: BookieFactory,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # A long ZooKeeper session: the registration can only be gone at exit because the bookie removed it.
    monkeypatch.setenv(failpoints.ENV, f"journal.fsync:{FAILING_FSYNC}")
    cluster = bookie_factory(1, zkTimeout=60_000)
    monkeypatch.delenv(failpoints.ENV)
    bookie = cluster[0]
    assert bookie.proc is not None
    ledgers = [random.randrange(1, 2**40) for _ in range(WRITERS)]
    acked: dict[int, dict[int, bytes]] = {ledger: {} for ledger in ledgers}
    sent: dict[int, set[int]] = {ledger: set() for ledger in ledgers}
    await asyncio.gather(*(_add_until_refused(bookie.bookie_id, ledger, acked[ledger], sent[ledger])
                           for ledger in ledgers))

    code = bookie.proc.wait(timeout=90)
    store = MetadataStore(cluster.zk_connect, cluster.ledgers_root, session_timeout_ms=10_000)
    await store.connect()
    try:
        registered = await store.list_bookies(False) + await store.list_bookies(True)
    finally:
        await store.close()
    assert code == EXIT_STORAGE_FAILED, bookie.tail_log()
    assert bookie.bookie_id not in registered
    assert "journal I/O error" in bookie.log_path.read_text()

    assert any(acked.values()), "adds before the error were acknowledged"
    assert sum(map(len, acked.values())) < sum(map(len, sent.values())), "the fsync error failed no add"
    for ledger in ledgers:
        # Journaled in order: an acknowledged entry after one that failed was acknowledged after the error.
        assert sorted(acked[ledger]) == list(range(len(acked[ledger]))), f"ledger {ledger}: acked after a failure"

    bookie.proc = None
    bookie.start()
    async with await RawConnection.open(bookie.bookie_id, 3) as conn:
        for ledger in ledgers:
            for entry_id, body in acked[ledger].items():
                response = await conn.read(ledger, entry_id)
                assert response.status == StatusCode.EOK and bytes(response.body) == body, (ledger, entry_id)
