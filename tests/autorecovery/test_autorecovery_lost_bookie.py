"""Kill one of the bookies while a writer adds (E3/W3/A2): no acknowledged entry is lost, and autorecovery
(auditor + replication worker) brings every ledger back to full replication within a bounded time, with the
under-replication marks gone. Decommission through REST ends with no ledger referencing the bookie and, asked
with Apache BookKeeper 4.18's ``delete_cookie``, with the bookie's cookie deleted; a ``delete_cookie`` that is
not a boolean is refused before anything is marked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
from aiohttp import web
from bookie.client import BookKeeper
from bookie.client.autorecovery import Autorecovery
from bookie.http import AdminAuth, build_autorecovery_app
from bookie_fleet.local_bookies import free_port

from tests.support.admin_api import ADMIN_HEADERS, TEST_ADMIN_TOKEN
from tests.support.java_bookies import BookieCluster

BOUND_S = 60.0


async def _holders(bk: BookKeeper, bookie: str) -> list[int]:
    return [i for i in await bk.list_ledgers() if bookie in (await bk.ledger_metadata(i)).value.bookies()]


async def test_lost_bookie_is_re_replicated_within_a_bound(cluster_factory: Callable[..., BookieCluster],
                                                           bookie_kind: str) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4)
    async with BookKeeper(cluster.client_config(add_timeout_s=3.0)) as bk:
        closed = await bk.create_ledger(3, 3, 2)  # a finished ledger on the victim too
        victim = closed.ensemble[0]
        for i in range(100):
            await closed.add(b"old-%d" % i)
        await closed.close()
        lh = await bk.create_ledger(3, 3, 2)
        if victim not in lh.ensemble:
            lh = await bk.create_ledger(3, 3, 2)
        acked = []
        for i in range(600):
            acked.append(await lh.add(b"live-%d" % i))
            if i == 200:
                await asyncio.to_thread(cluster.by_id(victim).kill)
        await lh.close()
        assert acked == list(range(600))

        ar = await Autorecovery(bk, "autorecovery-1", check_interval_s=0.5).start()
        started = time.monotonic()
        try:
            while time.monotonic() - started < BOUND_S:
                if not await _holders(bk, victim) and not await bk.store.list_underreplicated():
                    break
                await asyncio.sleep(0.5)
            took = time.monotonic() - started
        finally:
            await ar.stop()
        print(f"autorecovery: every ledger fully replicated {took:.1f}s after start")
        assert await _holders(bk, victim) == [], "ledgers still reference the lost bookie"
        assert await bk.store.list_underreplicated() == []
        for ledger_id, count, prefix in ((closed.ledger_id, 100, b"old-"), (lh.ledger_id, 600, b"live-")):
            md = (await bk.ledger_metadata(ledger_id)).value
            assert all(len(set(e)) == 3 and victim not in e for e in md.ensembles.values())
            reader = await bk.open_ledger(ledger_id)
            assert [e.payload for e in await reader.read(0, count - 1)] == [prefix + b"%d" % i
                                                                              for i in range(count)]


async def test_decommission_through_rest(cluster_factory: Callable[..., BookieCluster], tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 4)
    async with BookKeeper(cluster.client_config()) as bk:
        ledgers = []
        for _ in range(3):
            lh = await bk.create_ledger(3, 2, 2)
            await asyncio.gather(*(lh.append(b"d%d" % i) for i in range(50)))
            await lh.close()
            ledgers.append(lh.ledger_id)
        holders = {b: await _holders(bk, b) for b in cluster.bookie_ids}
        target = max(holders, key=lambda b: len(holders[b]))
        held = holders[target]
        ar = await Autorecovery(bk, "autorecovery-rest", check_interval_s=0.5).start()
        token_file = tmp_path / "admin-token"
        token_file.write_text(TEST_ADMIN_TOKEN)
        auth = AdminAuth(token_file)
        await auth.start()
        runner = web.AppRunner(build_autorecovery_app(ar, auth))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        base = f"http://127.0.0.1:{port}/api/v1/autorecovery"
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30), headers=ADMIN_HEADERS) as http:
                async with http.put(f"{base}/decommission", json={"bookie_src": target, "delete_cookie": "maybe"}) as r:
                    assert r.status == 400 and "delete_cookie must be true or false" in await r.text()
                assert await bk.store.list_underreplicated() == []
                assert await bk.store.read_cookie(target) is not None
                async with http.put(f"{base}/decommission", json={"bookie_src": target, "delete_cookie": "true"}) as r:
                    assert r.status == 200 and "Success send decommission" in await r.text()
                report: dict[str, object] = {}
                deadline = time.monotonic() + BOUND_S
                while time.monotonic() < deadline:
                    async with http.get(f"{base}/decommission", params={"bookie_src": target}) as r:
                        report = await r.json()
                    if report["done"] and report["cookie_deleted"]:
                        break
                    await asyncio.sleep(0.5)
                assert report["done"] is True, report
                assert report["ledgers_moved"] == sorted(held) and report["remaining"] == []
                assert report["delete_cookie"] is True and report["cookie_deleted"] is True, report
                assert await bk.store.read_cookie(target) is None
                async with http.get(f"{base}/who_is_auditor") as r:
                    assert await r.text() == "Auditor: autorecovery-rest"
                async with http.get(f"{base}/list_under_replicated_ledger") as r:
                    assert r.status == 404
        finally:
            await runner.cleanup()
            await ar.stop()
        assert await _holders(bk, target) == []
        for ledger_id in ledgers:
            reader = await bk.open_ledger(ledger_id)
            assert len(await reader.read(0, 49)) == 50
