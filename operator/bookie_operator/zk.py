"""What the operator reads and changes in the bookies' ZooKeeper metadata (through bookie.metadata).

Used only for what the REST API cannot tell: which ledgers still reference a bookie being decommissioned,
how many ledgers are under-replicated, and the bookie's cookie. One ``MetadataStore`` per metadata service,
kept open between ticks.
"""

from __future__ import annotations

import asyncio

from bookie.metadata.cookie_store import CookieStore
from bookie.metadata.ledger_manager import LedgerManager
from bookie.metadata.store import MetadataError, MetadataStore, NoNode
from bookie.metadata.underreplication import UnderreplicationManager


class MetadataService:
    def __init__(self) -> None:
        self._stores: dict[tuple[str, str], MetadataStore] = {}
        self._lock = asyncio.Lock()

    async def store(self, zk_servers: str, ledgers_root: str) -> MetadataStore:
        key = (zk_servers, ledgers_root)
        async with self._lock:
            store = self._stores.get(key)
            if store is not None and store.connected:
                return store
            if store is not None:
                await store.close()
            store = MetadataStore(zk_servers, ledgers_root, session_timeout_ms=10000, connect_timeout_s=10)
            await store.connect()
            self._stores[key] = store
            return store

    async def close(self) -> None:
        async with self._lock:
            for store in self._stores.values():
                await store.close()
            self._stores.clear()


async def ledgers_referencing(store: LedgerManager, bookie_id: str, parallel: int = 32) -> int:
    """How many ledgers have ``bookie_id`` in any ensemble (raises MetadataError when unsure)."""
    ids = await store.all_ledger_ids()
    gate = asyncio.Semaphore(parallel)

    async def references(ledger_id: int) -> bool:
        async with gate:
            try:
                md = (await store.read_ledger_metadata(ledger_id)).value
            except NoNode:
                return False  # deleted meanwhile
        return any(bookie_id in ensemble for ensemble in md.ensembles.values())

    found = await asyncio.gather(*(references(i) for i in ids))
    return sum(found)


async def under_replicated(store: UnderreplicationManager) -> int:
    return len(await store.list_underreplicated())


async def cookie_exists(store: CookieStore, bookie_id: str) -> bool:
    return await store.read_cookie(bookie_id) is not None


async def delete_cookie(store: CookieStore, bookie_id: str) -> None:
    try:
        await store.delete_cookie(bookie_id)
    except NoNode:
        pass


__all__ = ["MetadataError", "MetadataService", "cookie_exists", "delete_cookie", "ledgers_referencing",
           "under_replicated"]
