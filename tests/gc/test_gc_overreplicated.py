"""Over-replicated ledger GC: a closed ledger whose ensembles no longer name this bookie is deleted locally,
under the ledger's under-replication lock, every gcOverreplicatedLedgerWaitTime; open ledgers and ledgers
whose lock someone else holds are left alone."""

from __future__ import annotations

import asyncio
import dataclasses

from bookie.metadata.store import MetadataStore
from bookie.protocol.codes import StatusCode

from tests.gc.gcutil import GC_OVERRIDES, client, gc_now, metrics, write_ledger
from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection

ELSEWHERE = "10.255.0.1:3181"


async def _move_away(store: MetadataStore, ledger_id: int) -> None:
    versioned = await store.read_ledger_metadata(ledger_id)
    moved = dataclasses.replace(versioned.value, ensembles={0: (ELSEWHERE,)})
    await store.write_ledger_metadata(ledger_id, moved, versioned.version)


async def test_closed_ledger_replicated_elsewhere_is_deleted_locally(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **{**GC_OVERRIDES, "gcOverreplicatedLedgerWaitTime": 1000})
    bookie = cluster[0]
    store = MetadataStore(cluster.zk_connect, cluster.ledgers_root)
    await store.connect()
    try:
        async with client(cluster) as bk:
            moved, _ = await write_ledger(bk, 5, 1024, 1)
            locked, _ = await write_ledger(bk, 5, 1024, 2)
            kept, _ = await write_ledger(bk, 5, 1024, 3)
            still_open = await bk.create_ledger(1, 1, 1, password=b"gc")
            await still_open.add(b"x")
        for lid in (moved, locked, still_open.ledger_id):
            await _move_away(store, lid)
        assert await store.acquire_underreplicated_lock(locked, "a-replication-worker")

        await asyncio.sleep(1.2)  # past gcOverreplicatedLedgerWaitTime since start
        await gc_now(bookie)
        assert (await metrics(bookie))["bookie_DELETED_LEDGER_TOTAL"] == 1, "only the unlocked closed one"
        everything = {moved, locked, kept, still_open.ledger_id}
        local = await _local_ledgers(bookie.bookie_id, everything)
        assert moved not in local and {locked, kept, still_open.ledger_id} <= local
        assert await store.ledger_exists(moved), "metadata untouched: only the local copy goes"

        await store.release_underreplicated_lock(locked)
        await asyncio.sleep(1.2)
        await gc_now(bookie)
        assert await _local_ledgers(bookie.bookie_id, everything) == {kept, still_open.ledger_id}
    finally:
        await store.close()


async def _local_ledgers(bookie_id: str, candidates: set[int]) -> set[int]:
    """Which of ``candidates`` the bookie still stores (a read of entry 0 answered EOK)."""
    async with await RawConnection.open(bookie_id, 3) as conn:
        return {lid for lid in candidates if (await conn.read(lid, 0)).status == StatusCode.EOK}
