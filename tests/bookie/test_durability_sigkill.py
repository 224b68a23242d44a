"""Durability: a bookie SIGKILLed at random moments under write load loses no acknowledged entry.

After every restart each acknowledged entry reads back byte-identical, and an entry whose add was not
acknowledged is either absent or complete: never a different or partial body. The kill moments, ledger ids
and bodies come from one seed, printed with the test's output and replayed by ``BOOKIE_FLEET_SEED``
(tests/support/seeds.py); where a kill lands in the bookie's work still depends on the machine's timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import random

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.raw_client import MASTER_KEY, RawConnection, entry

KILLS = 20
LEDGERS = 4


async def _write_until_killed(bookie_id: str, ledgers: list[int], next_entry: dict[int, int],
                              acked: dict[tuple[int, int], bytes], attempted: dict[tuple[int, int], bytes],
                              rng: random.Random) -> None:
    """Pipelined adds on several ledgers until the connection dies (``rng``: this round's own, so that how
    many adds fit before the kill does not shift the next rounds' kill moments)."""
    conn = await RawConnection.open(bookie_id, rng.choice([2, 3]))
    try:
        while True:
            batch = []
            for ledger in ledgers:
                entry_id = next_entry[ledger]
                next_entry[ledger] += 1
                body = entry(ledger, entry_id, rng.randbytes(rng.choice([10, 1000, 20000])))
                attempted[(ledger, entry_id)] = body
                batch.append(m.AddRequest(conn.wire(), ledger, entry_id, MASTER_KEY, body))
            for response in await conn.pipeline(batch):
                assert response.status == StatusCode.EOK, response
                acked[(response.ledger_id, response.entry_id)] = attempted[(response.ledger_id, response.entry_id)]
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


async def test_acknowledged_entries_survive_repeated_sigkill(bookie_factory: BookieFactory,
                                                             seeded_rng: random.Random) -> None:
    # Small write cache and logs so kills land in journal writes, checkpoints and entry-log rolls alike.
    cluster = bookie_factory(1, flushInterval=300, dbStorage_writeCacheMaxSizeMb=1, logSizeLimit=2_000_000,
                             journalMaxSizeMB=4, zkTimeout=1000)
    bookie = cluster[0]
    ledgers = [seeded_rng.randrange(1, 2**40) for _ in range(LEDGERS)]
    next_entry = dict.fromkeys(ledgers, 0)
    acked: dict[tuple[int, int], bytes] = {}
    attempted: dict[tuple[int, int], bytes] = {}
    for _ in range(KILLS):
        round_rng = random.Random(seeded_rng.getrandbits(64))
        writer = asyncio.create_task(_write_until_killed(bookie.bookie_id, ledgers, next_entry, acked, attempted,
                                                         round_rng))
        await asyncio.sleep(seeded_rng.uniform(0.2, 1.2))
        await asyncio.to_thread(bookie.kill)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            await writer
        await asyncio.to_thread(bookie.start)
        await _verify(bookie.bookie_id, acked, attempted)
        # Entries never acknowledged are forgotten by the writer: the next round continues after them.
    assert len(acked) > KILLS * LEDGERS


async def _verify(bookie_id: str, acked: dict[tuple[int, int], bytes],
                  attempted: dict[tuple[int, int], bytes]) -> None:
    async with await RawConnection.open(bookie_id, 3) as conn:
        for (ledger, entry_id), body in attempted.items():
            response = await conn.read(ledger, entry_id)
            if (ledger, entry_id) in acked:
                assert response.status == StatusCode.EOK, (ledger, entry_id, response.status)
                assert bytes(response.body) == body, f"entry {ledger}/{entry_id} changed"
            elif response.status == StatusCode.EOK:
                assert bytes(response.body) == body, f"unacknowledged entry {ledger}/{entry_id} is half-visible"
            else:
                assert response.status in (StatusCode.ENOENTRY, StatusCode.ENOLEDGER)
