"""A bookie killed while a writer adds (ensemble 3, write quorum 3, ack quorum 2): the ledger carries on
through an ensemble change (new segment in the metadata, the dead bookie replaced) and no acknowledged entry
is lost. With no spare bookie the writer carries on under-replicated instead."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bookie.client import BookKeeper

from tests.support.java_bookies import BookieCluster


async def _write_while_killing(bk: BookKeeper, cluster: BookieCluster, victim_position: int,
                               total: int = 3000) -> tuple[int, list[int], str]:
    lh = await bk.create_ledger(3, 3, 2)
    victim = lh.ensemble[victim_position]
    acked: list[int] = []
    futures = []
    for i in range(total):
        futures.append(lh.append(b"entry-%d" % i))
        if i % 100 == 99:
            acked.extend(await asyncio.gather(*futures))
            futures = []
        if i == total // 3:
            await asyncio.to_thread(cluster.by_id(victim).kill)
    acked.extend(await asyncio.gather(*futures))
    await lh.close()
    return lh.ledger_id, acked, victim


async def test_killed_bookie_is_replaced_and_no_acknowledged_entry_is_lost(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4)
    async with BookKeeper(cluster.client_config(add_timeout_s=3.0)) as bk:
        ledger_id, acked, victim = await _write_while_killing(bk, cluster, 1)
        assert acked == list(range(3000))
        md = (await bk.ledger_metadata(ledger_id)).value
        assert md.last_entry_id == 2999
        assert len(md.ensembles) >= 2, md.ensembles
        last_ensemble = list(md.ensembles.values())[-1]
        assert victim not in last_ensemble and len(set(last_ensemble)) == 3
        async with BookKeeper(cluster.client_config()) as reader:
            rh = await reader.open_ledger(ledger_id)
            entries = await rh.read(0, 2999)
        assert [e.payload for e in entries] == [b"entry-%d" % i for i in range(3000)]


async def test_without_a_spare_bookie_the_writer_continues_on_ack_quorum(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3)
    async with BookKeeper(cluster.client_config(add_timeout_s=3.0)) as bk:
        ledger_id, acked, _ = await _write_while_killing(bk, cluster, 0, total=1500)
        assert acked == list(range(1500))
        md = (await bk.ledger_metadata(ledger_id)).value
        assert md.closed and md.last_entry_id == 1499
        async with BookKeeper(cluster.client_config()) as reader:
            rh = await reader.open_ledger(ledger_id)
            assert [e.payload for e in await rh.read(0, 1499)] == [b"entry-%d" % i for i in range(1500)]
