"""Rebalancing on real bookies: after a scale-up from 3 to 5 with data on the first three, spec.rebalance moves
closed ledgers' replicas onto the new bookies until every bookie's ledger data is within maxSpread; a reader
reads every entry throughout without an error, the operator killed while a move is in flight resumes it, and
no ledger is ever below its write quorum of distinct registered bookies. Afterwards Apache BookKeeper's Java
client reads every entry too, through the ensembles the moves rewrote."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Callable
from typing import Any

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import OperatorProcess, bookie_cluster, get_cluster, patch_spec, wait_ready
from tests.operator.java_reads import assert_java_reads_back
from tests.support.kube import KubeTarget, wait_for

ENTRY = 10 * 1024
ENTRIES = 40                    # 400 KiB a ledger, each replica the whole of it (ensemble 2, write quorum 2)
LEDGERS = 12


def _disk_total(kube: KubeTarget, ns: str) -> int:
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-0")
    assert pod is not None
    with urllib.request.urlopen(f"http://{pod['status']['podIP']}:8080/api/v1/bookie/info", timeout=10) as r:
        return int(json.loads(r.read())["totalSpace"])


async def _quorum_intact(bk: BookKeeper, ledgers: list[int]) -> None:
    registered = set(await bk.store.list_bookies()) | set(await bk.store.list_bookies(readonly=True))
    for lid in ledgers:
        for ensemble in (await bk.ledger_metadata(lid)).value.ensembles.values():
            assert len(set(ensemble)) == 2 and set(ensemble) <= registered, (lid, ensemble, registered)


async def test_a_scale_up_is_rebalanced_under_a_reader_through_an_operator_kill(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    op = operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=3), namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)
    written: dict[int, list[bytes]] = {}
    async with BookKeeper(ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)) as bk:
        for _ in range(100):
            if len(await bk.writable_bookies()) == 3:
                break
            await asyncio.sleep(0.2)
        for n in range(LEDGERS):
            handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2)
            written[handle.ledger_id] = [bytes([n, i]) * (ENTRY // 2) for i in range(ENTRIES)]
            for payload in written[handle.ledger_id]:
                await handle.add(payload)
            await handle.close()
        ledgers = sorted(written)

        patch_spec(kube, ns, "bk", {"replicas": 5})
        wait_ready(kube, ns, "bk", timeout=240)
        total = _disk_total(kube, ns)
        replica = ENTRY * ENTRIES
        max_spread = 1.5 * replica / total        # within one replica of each other: the finest a move can do

        reads, stop = [0], asyncio.Event()

        async def reader() -> None:
            while not stop.is_set():
                for lid in ledgers:
                    handle = await bk.open_ledger(lid, recovery=False)
                    assert [e.payload for e in await handle.read(0, ENTRIES - 1)] == written[lid], lid
                    reads[0] += 1

        reading = asyncio.create_task(reader())
        patch_spec(kube, ns, "bk", {"rebalance": {"enabled": True, "maxSpread": max_spread,
                                                  "bytesPerSecond": 100 * 1024}})

        def in_flight() -> dict[str, Any] | None:
            moves = (get_cluster(kube, ns, "bk")["status"].get("rebalance") or {}).get("moves") or []
            return next((m for m in moves if m.get("requested")), None)

        await asyncio.to_thread(wait_for, in_flight, 120, interval=0.2, what="a replica move in flight")
        op.kill()                                   # the operator dies while a bookie copies a replica
        await _quorum_intact(bk, ledgers)
        await asyncio.sleep(3)
        op.start()

        def balanced() -> dict[str, Any] | None:
            state = get_cluster(kube, ns, "bk")["status"].get("rebalance") or {}
            done = state.get("phase") == "Balanced" and not state.get("moves") and state.get("movesDone")
            return state if done else None

        state = await asyncio.to_thread(wait_for, balanced, 300, interval=1, what="a balanced cluster")
        stop.set()
        await reading
        print(f"rebalance: {state['movesDone']} moves, {state['bytesMoved']} bytes, spread {state['spread']:.2e}, "
              f"{reads[0]} ledger reads meanwhile")
        assert reads[0] >= LEDGERS
        await _quorum_intact(bk, ledgers)
        held: dict[str, int] = {}
        for lid in ledgers:
            for bookie in (await bk.ledger_metadata(lid)).value.bookies():
                held[bookie] = held.get(bookie, 0) + replica
            handle = await bk.open_ledger(lid, recovery=False)
            assert [e.payload for e in await handle.read(0, ENTRIES - 1)] == written[lid]
        assert len(held) == 5, held
        assert (max(held.values()) - min(held.values())) / total <= max_spread, held
        assert not await bk.store.list_underreplicated()
        # Apache BookKeeper's own client reads the moved replicas' metadata and every entry the same.
        await assert_java_reads_back(bk, written)
