"""What moving bookies between StatefulSets or implementations must not change, read from ZooKeeper: the
registered bookies, their cookies (value and version), the metadata of given ledgers (an ensemble change would
mean autorecovery re-replicated them) and the under-replicated ledgers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bookie.metadata.store import MetadataStore


async def identities(zk: str, root: str, ledgers: Iterable[int]) -> dict[str, Any]:
    async with MetadataStore(zk, root) as store:
        bookies = sorted(await store.list_bookies())
        cookies = {b: await store.read_cookie(b) for b in bookies}
        metadata = {lid: await store.read_ledger_metadata(lid) for lid in ledgers}
        return {"bookies": bookies, "under_replicated": await store.list_underreplicated(),
                "cookies": {b: (c.value, c.version) if c else None for b, c in cookies.items()},
                "metadata": {lid: (m.value, m.version) for lid, m in metadata.items()}}
