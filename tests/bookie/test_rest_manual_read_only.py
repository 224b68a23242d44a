"""PUT state/readonly makes the bookie read-only in ZooKeeper and on the wire; only a manual PUT undoes it."""

from __future__ import annotations

import asyncio
import random

from bookie.metadata.store import MetadataStore
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.raw_client import MASTER_KEY, RawConnection
from tests.support.rest import get, put


async def test_manual_read_only_until_manually_undone(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1)
    bookie = cluster[0]
    ledger = random.randrange(1, 2**40)
    readonly_url = f"{bookie.http_url}/api/v1/bookie/state/readonly"
    async with MetadataStore(cluster.zk_connect, cluster.ledgers_root) as store, \
            await RawConnection.open(bookie.bookie_id) as conn:
        assert (await conn.add(ledger, 0)).status == StatusCode.EOK

        answer = await put(readonly_url, {"readOnly": True})
        assert (answer.status, answer.json()) == (200, {"readOnly": True})
        assert await store.list_bookies(readonly=True) == [bookie.bookie_id]
        assert await store.list_bookies(readonly=False) == []
        assert (await get(readonly_url)).json() == {"readOnly": True}
        state = (await get(f"{bookie.http_url}/api/v1/bookie/state")).json()
        assert (state["readOnly"], state["availableForHighPriorityWrites"]) == (True, True)
        ro = (await get(f"{bookie.http_url}/api/v1/bookie/list_bookies", type="ro")).json()
        assert ro == {bookie.bookie_id: None}
        info = (await get(f"{bookie.http_url}/api/v1/bookie/cluster_info")).json()
        assert (info["writableBookiesCount"], info["readonlyBookiesCount"]) == (0, 1)

        assert (await conn.add(ledger, 1)).status == StatusCode.EREADONLY
        assert (await conn.read(ledger, 0)).status == StatusCode.EOK
        assert (await conn.read(ledger, 0, fence=True, master_key=MASTER_KEY)).status == StatusCode.EOK

        await asyncio.sleep(1.5)  # three disk checks (diskCheckInterval 500 ms) on a disk with room to spare
        assert await store.list_bookies(readonly=True) == [bookie.bookie_id]
        assert (await conn.add(ledger + 1, 0)).status == StatusCode.EREADONLY

        answer = await put(readonly_url, {"readOnly": False})
        assert (answer.status, answer.json()) == (200, {"readOnly": False})
        assert await store.list_bookies(readonly=False) == [bookie.bookie_id]
        assert await store.list_bookies(readonly=True) == []
        assert (await conn.add(ledger + 1, 0)).status == StatusCode.EOK


async def test_forced_read_only_bookie_refuses_to_become_writable(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, forceReadOnlyBookie=True)[0]
    answer = await put(f"{bookie.http_url}/api/v1/bookie/state/readonly", {"readOnly": False})
    assert answer.status == 400
    assert "forceReadOnlyBookie" in answer.text
    assert (await get(f"{bookie.http_url}/api/v1/bookie/state/readonly")).json() == {"readOnly": True}
