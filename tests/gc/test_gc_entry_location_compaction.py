"""PUT/GET /api/v1/bookie/entry_location_compact: RocksDB compaction of the locations index after mass
deletions (BookKeeper PR #3802), BookKeeper's request shape; bad requests answered 400."""

from __future__ import annotations

import asyncio

import aiohttp

from tests.gc.gcutil import GC_OVERRIDES, client, gc_now, metrics, read_all, rest, write_ledger
from tests.support.admin_api import ADMIN_HEADERS
from tests.support.bookies import BookieFactory


async def test_locations_index_compaction_over_rest(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)
    bookie = cluster[0]
    url = f"{bookie.http_url}/api/v1/bookie/entry_location_compact"
    async with client(cluster) as bk:
        keep, payloads = await write_ledger(bk, 20, 1024, 1)
        for seed in range(2, 12):
            lid, _ = await write_ledger(bk, 50, 1024, seed)
            await bk.delete_ledger(lid)
        await asyncio.sleep(1.2)
        await gc_now(bookie)  # ledger deletions: range tombstones in the locations index

        (path,) = (await rest("GET", url)).keys()
        assert path.endswith("/current/locations")
        answer = await rest("PUT", url, {"entryLocationRocksDBCompact": True, "entryLocations": path})
        assert "Triggered entry Location RocksDB" in answer
        deadline = asyncio.get_running_loop().time() + 30
        while any((await rest("GET", url)).values()):
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.1)
        details = (await rest("GET", f"{bookie.http_url}/api/v1/bookie/gc_details"))[0]
        assert details["entryLocationCompactionCounter"] == 1
        assert (await metrics(bookie))["bookie_ENTRY_LOCATION_COMPACTION_TOTAL"] == 1
        assert await read_all(bk, keep) == payloads

    async with aiohttp.ClientSession(headers=ADMIN_HEADERS) as session:
        for body in ("", '{"entryLocationRocksDBCompact": false}',
                     '{"entryLocationRocksDBCompact": true, "entryLocations": "/elsewhere/current/locations"}'):
            async with session.put(url, data=body) as response:
                assert response.status == 400, body
