"""``PUT /api/v1/autorecovery/move_replica`` moves one closed ledger's replica from a named bookie to another:
copied, verified on the target, then the ensemble changed in the metadata; every entry stays readable, the
ledger keeps its write quorum of distinct bookies, the source's over-replicated GC deletes its copy, a
repeated request is a no-op, and bad requests are refused naming the problem."""

from __future__ import annotations

import asyncio
import time

from bookie.client import BookKeeper, ClientConfig
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support import rest
from tests.support.bookies import BookieFactory, BookieSet
from tests.support.waiting import eventually

BOUND_S = 60.0
MOVE = "/api/v1/autorecovery/move_replica"


async def _wait_move(url: str, ledger_id: int) -> dict[str, object]:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        answer = await rest.get(url + MOVE, ledger_id=str(ledger_id))
        assert answer.status == 200, answer.text
        move = answer.json()
        if move["state"] != "running":
            return dict(move)
        await asyncio.sleep(0.2)
    raise AssertionError(f"move of ledger {ledger_id} still running after {BOUND_S}s")


async def _source_has(bk: BookKeeper, bookie: str, ledger_id: int) -> bool:
    response = await bk.client.read_entry(bookie, ledger_id, 0)
    assert isinstance(response, m.ReadResponse)
    return response.status is StatusCode.EOK


async def test_a_replica_moves_to_the_named_bookie(bookie_factory: BookieFactory) -> None:
    # gcWaitTime and the over-replicated scan short, so the source's copy goes within the test.
    cluster: BookieSet = await asyncio.to_thread(
        bookie_factory, 4, autoRecoveryDaemonEnabled=True, gcWaitTime=1000, gcOverreplicatedLedgerWaitTime=1000)
    config = ClientConfig(zk_servers=cluster.zk_connect, ledgers_root=cluster.ledgers_root)
    async with BookKeeper(config) as bk:
        lh = await bk.create_ledger(3, 2, 2)
        payloads = [b"entry-%d-" % i + bytes(200) for i in range(300)]
        for p in payloads:
            await lh.add(p)
        await lh.close()
        source = lh.ensemble[1]
        target = next(b for b in cluster.ids if b not in lh.ensemble)
        runner = next(b for b in cluster.bookies if b.bookie_id == target)
        body = {"ledger_id": lh.ledger_id, "bookie_src": source, "bookie_dest": target,
                "rate_bytes_per_second": 1 << 20}
        answer = await rest.put(runner.http_url + MOVE, body)
        assert answer.status == 202, answer.text

        move = await _wait_move(runner.http_url, lh.ledger_id)
        assert move["state"] == "moved", move
        md = (await bk.ledger_metadata(lh.ledger_id)).value
        assert all(source not in e and target in e and len(set(e)) == 3 for e in md.ensembles.values())
        # position 1 of a 3/2 ensemble stores two thirds of the entries
        assert move["entries_copied"] == sum(1 for i in range(300) if i % 3 in (0, 1)), move
        assert move["bytes_copied"] == sum(len(payloads[i]) for i in range(300) if i % 3 in (0, 1))
        reader = await bk.open_ledger(lh.ledger_id)
        assert [e.payload for e in await reader.read(0, 299)] == payloads
        assert not await bk.store.list_underreplicated()

        again = await rest.put(runner.http_url + MOVE, body)   # redone after it finished: nothing changes
        assert again.status == 202, again.text
        assert (await _wait_move(runner.http_url, lh.ledger_id))["state"] == "moved"
        assert (await bk.ledger_metadata(lh.ledger_id)).value.ensembles == md.ensembles

        async def source_dropped_it() -> bool:
            return not await _source_has(bk, source, lh.ledger_id)

        await eventually(source_dropped_it, "the source's over-replicated GC to delete the moved ledger", BOUND_S)
        assert await _source_has(bk, target, lh.ledger_id)


async def test_bad_moves_are_refused_and_change_nothing(bookie_factory: BookieFactory) -> None:
    cluster: BookieSet = await asyncio.to_thread(bookie_factory, 4, autoRecoveryDaemonEnabled=True)
    config = ClientConfig(zk_servers=cluster.zk_connect, ledgers_root=cluster.ledgers_root)
    async with BookKeeper(config) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(10):
            await lh.add(b"e%d" % i)
        url = cluster[0].http_url
        outside = next(b for b in cluster.ids if b not in lh.ensemble)
        source = lh.ensemble[0]

        refused = await rest.put(url + MOVE, {"ledger_id": lh.ledger_id, "bookie_src": source, "bookie_dest": source})
        assert refused.status == 400 and "same bookie" in refused.text
        refused = await rest.put(url + MOVE, {"ledger_id": -1, "bookie_src": source, "bookie_dest": outside})
        assert refused.status == 400 and "ledger_id" in refused.text
        refused = await rest.put(url + MOVE, {"ledger_id": lh.ledger_id, "bookie_src": source,
                                              "bookie_dest": outside, "rate_bytes_per_second": 0})
        assert refused.status == 400 and "rate_bytes_per_second" in refused.text
        unauthorized = await rest.put(url + MOVE, {"ledger_id": lh.ledger_id, "bookie_src": source,
                                                   "bookie_dest": outside}, token=None)
        assert unauthorized.status == 401

        async def refused_by_the_mover(src: str, dst: str, why: str) -> None:
            answer = await rest.put(url + MOVE, {"ledger_id": lh.ledger_id, "bookie_src": src, "bookie_dest": dst})
            assert answer.status == 202, answer.text
            move = await _wait_move(url, lh.ledger_id)
            assert move["state"] == "failed" and why in str(move["error"]), (why, move)

        await refused_by_the_mover(source, outside, "not closed")   # still open: its writer owns the ensemble
        await lh.close()
        before = (await bk.ledger_metadata(lh.ledger_id)).value
        await refused_by_the_mover(source, lh.ensemble[1], "already has a replica")
        await refused_by_the_mover(source, "nobody.invalid:3181", "not registered")
        await refused_by_the_mover(outside, "nobody.invalid:3181", "no replica on")
        assert (await bk.ledger_metadata(lh.ledger_id)).value == before
