"""Opening a ledger whose writer is gone recovers it: fence, find the last entry, re-replicate the tail, close.

An entry the writer got onto ack-quorum bookies is recovered (and copied to its whole write quorum); an entry
on fewer than ack-quorum bookies (more than wq - aq replicas miss it) could not have been acknowledged and
is left out. Recovery answers the same for every client that runs it.
"""

from __future__ import annotations

import asyncio

from bookie.client import BookKeeper, LedgerHandle
from bookie.client.connection import BookieClient
from bookie.metadata.ledger_metadata import LedgerState
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.entry import package_entry

from tests.support.java_bookies import BookieCluster
from tests.support.waiting import eventually


async def _write_raw(bk: BookKeeper, lh: LedgerHandle, entry_id: int, payload: bytes, bookies: list[str]) -> None:
    """What a writer that crashed mid-add leaves behind: the entry on some bookies only."""
    body = package_entry(lh.digest, lh.ledger_id, entry_id, lh.last_add_confirmed, lh.length + len(payload),
                         payload)
    for bookie in bookies:
        response = await bk.client.add_entry(bookie, lh.ledger_id, entry_id, lh.master_key, body)
        assert response.status is StatusCode.EOK


async def _stored_on(client: BookieClient, bookie: str, ledger_id: int, entry_id: int) -> bool:
    response = await client.read_entry(bookie, ledger_id, entry_id)
    assert isinstance(response, m.ReadResponse)
    return response.status is StatusCode.EOK


async def _eventually_on_all(client: BookieClient, bookies: list[str], ledger_id: int, entry_id: int) -> None:
    """Recovery re-replicates the tail with recovery adds, which complete at the ack quorum like any add: the
    last bookie of the ensemble may store its copy just after the recovered handle is returned."""
    async def stored_on_all() -> bool:
        return all([await _stored_on(client, b, ledger_id, entry_id) for b in bookies])

    await eventually(stored_on_all, f"entry {entry_id} of ledger {ledger_id} stored on all of {bookies}", within=15)


async def test_recovery_closes_an_abandoned_ledger_at_its_last_acknowledged_entry(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as writer_bk:
        lh = await writer_bk.create_ledger(3, 3, 2, password=b"pw")
        acked = await asyncio.gather(*(lh.append(b"e%d" % i) for i in range(100)))
        ledger_id = lh.ledger_id
    # The writer's client is gone without closing the ledger.
    async with BookKeeper(cluster.client_config()) as bk:
        assert (await bk.ledger_metadata(ledger_id)).value.state is LedgerState.OPEN
        rh = await bk.open_ledger(ledger_id, b"pw")
        md = (await bk.ledger_metadata(ledger_id)).value
        assert md.state is LedgerState.CLOSED
        assert md.last_entry_id == max(acked) == 99
        assert md.length == sum(len(b"e%d" % i) for i in range(100))
        assert [e.payload for e in await rh.read(0, 99)] == [b"e%d" % i for i in range(100)]


async def test_tail_on_ack_quorum_bookies_is_recovered_and_re_replicated(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(10):
            await lh.add(b"x%d" % i)
        ensemble = list(lh.ensemble)
        await _write_raw(bk, lh, 10, b"tail", ensemble[:2])  # on 2 = ackQuorum bookies: may have been acked
        async with BookKeeper(cluster.client_config()) as other:
            recovered = await other.open_ledger(lh.ledger_id)
            assert recovered.last_add_confirmed == 10
            assert (await recovered.read(10))[0].payload == b"tail"
        await _eventually_on_all(bk.client, ensemble, lh.ledger_id, 10)


async def test_tail_on_fewer_than_ack_quorum_bookies_may_go_either_way_but_consistently(
        cluster: BookieCluster) -> None:
    # Never acknowledged, so dropping it and keeping it are both correct (as in BookKeeper, the first answers
    # decide); what must hold is that the outcome is final and, if kept, fully replicated.
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(5):
            await lh.add(b"y%d" % i)
        ensemble = list(lh.ensemble)
        await _write_raw(bk, lh, 5, b"never-acked", ensemble[:1])
        async with BookKeeper(cluster.client_config()) as other:
            recovered = await other.open_ledger(lh.ledger_id)
            last = recovered.last_add_confirmed
            assert last in (4, 5)
            assert (await other.ledger_metadata(lh.ledger_id)).value.last_entry_id == last
            if last == 5:
                assert (await recovered.read(5))[0].payload == b"never-acked"
                await _eventually_on_all(bk.client, ensemble, lh.ledger_id, 5)


async def test_concurrent_recoveries_agree(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        await asyncio.gather(*(lh.append(b"z") for _ in range(50)))
        async with BookKeeper(cluster.client_config()) as a, BookKeeper(cluster.client_config()) as b:
            ha, hb = await asyncio.gather(a.open_ledger(lh.ledger_id), b.open_ledger(lh.ledger_id))
        assert ha.last_add_confirmed == hb.last_add_confirmed == 49
        md = (await bk.ledger_metadata(lh.ledger_id)).value
        assert md.closed and md.last_entry_id == 49


async def test_open_without_recovery_leaves_the_writer_alone(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(5):
            await lh.add(b"w%d" % i)
        async with BookKeeper(cluster.client_config()) as reader_bk:
            reader = await reader_bk.open_ledger(lh.ledger_id, recovery=False)
            assert (await reader_bk.ledger_metadata(lh.ledger_id)).value.state is LedgerState.OPEN
            # The last entry carries the LAC the writer had when it sent it: one behind.
            assert await reader.read_last_add_confirmed() == 3
            assert [e.payload for e in await reader.read(0, 3)] == [b"w0", b"w1", b"w2", b"w3"]
        assert await lh.add(b"w5") == 5  # not fenced
        await lh.close()
