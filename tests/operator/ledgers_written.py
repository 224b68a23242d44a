"""Ledgers written through our client onto a cluster's bookies before one of them leaves, for the tests that
check every entry reads back afterwards."""

from __future__ import annotations

import asyncio

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig


async def write_ledgers(config: ClientConfig, bookies: int, leaving: str, ledgers: int,
                        entries: int) -> dict[int, list[bytes]]:
    """``ledgers`` closed ledgers (3/3/2) of ``entries`` entries each, once ``bookies`` bookies are writable; at
    least one of them is on ``leaving``. Returns each ledger's payloads."""
    written: dict[int, list[bytes]] = {}
    async with BookKeeper(config) as bk:
        for _ in range(100):                      # Ready means registered; writable may follow a moment later
            if len(await bk.writable_bookies()) == bookies:
                break
            await asyncio.sleep(0.2)
        for n in range(ledgers):
            handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=2)
            written[handle.ledger_id] = [f"ledger {n} entry {i}".encode() for i in range(entries)]
            for payload in written[handle.ledger_id]:
                await handle.add(payload)
            await handle.close()
        on_leaving = [lid for lid in written
                      if any(leaving in e for e in (await bk.ledger_metadata(lid)).value.ensembles.values())]
    assert on_leaving, f"no ledger was placed on {leaving}, the bookie that leaves"
    return written
