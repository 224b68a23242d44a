"""A ledger is created, written with pipelined adds, closed and read back, for every digest type and both
protocol versions; its metadata in ZooKeeper is BookKeeper's (ensemble, quorums, state, last entry, length)."""

from __future__ import annotations

import asyncio

import pytest
from bookie.client import BookKeeper
from bookie.metadata.ledger_metadata import LedgerState
from bookie.protocol.entry import DigestType

from tests.support.java_bookies import BookieCluster


@pytest.mark.parametrize("digest", list(DigestType))
async def test_pipelined_adds_are_acknowledged_in_order_and_read_back(cluster: BookieCluster,
                                                                      digest: DigestType) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 3, 2, digest_type=digest, password=b"secret",
                                    custom_metadata={"app": b"spec"})
        payloads = [f"entry-{i}".encode() * (i % 7 + 1) for i in range(500)]
        completed: list[int] = []
        futures = [lh.append(p) for p in payloads]
        for f in futures:
            f.add_done_callback(lambda f: completed.append(f.result()))
        assert await asyncio.gather(*futures) == list(range(500))
        assert completed == list(range(500))  # acknowledgements strictly in entry order
        assert lh.last_add_confirmed == 499
        await lh.close()

        md = (await bk.ledger_metadata(lh.ledger_id)).value
        assert md.state is LedgerState.CLOSED and md.last_entry_id == 499
        assert md.length == sum(len(p) for p in payloads)
        assert (md.ensemble_size, md.write_quorum_size, md.ack_quorum_size) == (3, 3, 2)
        assert md.digest_type is digest and md.password == b"secret"
        assert md.custom_metadata == {"app": b"spec"}
        assert set(md.ensembles[0]) <= set(cluster.bookie_ids)

        rh = await bk.open_ledger(lh.ledger_id, b"secret")
        entries = await rh.read(0, 499)
        assert [e.payload for e in entries] == payloads
        assert [e.entry_id for e in entries] == list(range(500))
        assert entries[-1].length == md.length


@pytest.mark.parametrize("v2", [False, True], ids=["v3", "v2"])
async def test_striped_ledger_round_trip_over_each_protocol(cluster: BookieCluster, v2: bool) -> None:
    async with BookKeeper(cluster.client_config(use_v2_protocol=v2)) as bk:
        lh = await bk.create_ledger(4, 2, 2)  # striping: each entry on 2 of 4 bookies
        for i in range(40):
            assert await lh.add(b"%d" % i) == i
        await lh.close()
        rh = await bk.open_ledger(lh.ledger_id)
        assert [e.payload for e in await rh.read(0, 39)] == [b"%d" % i for i in range(40)]
        assert [e.payload for e in await rh.read(17, 18)] == [b"17", b"18"]


async def test_adds_after_close_are_refused(cluster: BookieCluster) -> None:
    from bookie.client.errors import LedgerClosedError

    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(2, 2, 2)
        await lh.add(b"a")
        await lh.close()
        with pytest.raises(LedgerClosedError):
            await lh.add(b"b")
        assert (await bk.ledger_metadata(lh.ledger_id)).value.last_entry_id == 0


async def test_empty_ledger_closes_with_no_entries(cluster: BookieCluster) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 2, 2)
        await lh.close()
        md = (await bk.ledger_metadata(lh.ledger_id)).value
        assert md.closed and md.last_entry_id == -1 and md.length == 0
        rh = await bk.open_ledger(lh.ledger_id)
        assert rh.last_add_confirmed == -1
