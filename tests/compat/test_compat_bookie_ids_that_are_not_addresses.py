"""Bookie ids that are names nobody can resolve (as on Kubernetes without cluster DNS, where the operator gives
each pod a stable hostname id) still work: our bookies publish their endpoints in the registration znode
(``BookieServiceInfoFormat``), and both our client and Apache BookKeeper's Java client dial those."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
from bookie.client import BookKeeper
from bookie.metadata import service_info
from bookie.metadata.store import MetadataStore

from tests.support.bookies import BookieSet
from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness

NAMES = [f"bookie-{i}.bookies.fleet.invalid:3181" for i in range(3)]


@pytest.fixture
def named_cluster(bookie_factory: Callable[..., BookieSet]) -> BookieCluster:
    sets = [bookie_factory(1, bookieId=name) for name in NAMES]
    for name in NAMES:  # the premise: the ids really are not resolvable here
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo(name.rpartition(":")[0], 3181)
    return BookieCluster(sets[0].zk_connect, sets[0].ledgers_root, [s[0] for s in sets], kind="python")


async def test_each_bookie_publishes_where_it_listens(named_cluster: BookieCluster) -> None:
    store = MetadataStore(named_cluster.zk_connect, named_cluster.ledgers_root)
    await store.connect()
    try:
        assert sorted(await store.list_bookies()) == sorted(NAMES)
        for bookie in named_cluster.bookies:
            endpoints = service_info.decode(await store.bookie_service_info(bookie.bookie_id) or b"")
            assert {(e.protocol, e.host, e.port) for e in endpoints} == {
                ("bookie-rpc", bookie.address, bookie.port), ("http", bookie.address, bookie.http_port)}
    finally:
        await store.close()


async def test_the_python_client_writes_and_the_java_client_recovers_and_reads(
        named_cluster: BookieCluster) -> None:
    async with BookKeeper(named_cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 3, 2, password=b"pw")
        assert sorted(lh.metadata.ensembles[0]) == sorted(NAMES)
        for i in range(40):
            await lh.add(b"py-%d" % i)
    # Left open: the Java client must fence and recover it through the published endpoints.
    read = await run_harness(named_cluster, "read", "v3", str(lh.ledger_id), "pw", "recover")
    assert read.result[0] == "39" and read.result[2] == "true"
    assert read.entries() == {i: f"py-{i}" for i in range(40)}


@pytest.mark.parametrize("protocol", ["v3", "v2"])
async def test_the_java_client_writes_and_the_python_client_reads(named_cluster: BookieCluster,
                                                                   protocol: str) -> None:
    written = await run_harness(named_cluster, "write", protocol, "3", "3", "2", "CRC32C", "pw", "60")
    ledger_id = int(written.result[0])
    async with BookKeeper(named_cluster.client_config(use_v2_protocol=protocol == "v2")) as bk:
        lh = await bk.open_ledger(ledger_id, b"pw")
        assert [e.payload for e in await lh.read(0, 59)] == [b"java-%d" % i for i in range(60)]


async def test_apache_bookkeeper_registrations_read_the_same_way(java_cluster: BookieCluster) -> None:
    store = MetadataStore(java_cluster.zk_connect, java_cluster.ledgers_root)
    await store.connect()
    try:
        for bookie_id in java_cluster.bookie_ids:
            data = await store.bookie_service_info(bookie_id)
            assert data, f"Java bookie {bookie_id} published no service info"
            assert service_info.address_of(bookie_id, data) == service_info.parse_bookie_id(bookie_id)
            assert {e.protocol for e in service_info.decode(data)} >= {"bookie-rpc"}
    finally:
        await store.close()
