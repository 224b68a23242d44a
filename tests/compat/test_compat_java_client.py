"""Apache BookKeeper's Java client on our bookies (v3 and v2, both versions of the compatibility matrix), and
ledgers shared both ways between the Java and the Python client (metadata in ZooKeeper in BookKeeper's
format)."""

from __future__ import annotations

import pytest
from bookie.client import BookKeeper
from bookie.protocol.entry import DigestType

from tests.support.java_bookies import BookieCluster
from tests.support.java_client import VERSIONS, run_harness


@pytest.mark.parametrize("release", ["pinned", "other"])
@pytest.mark.parametrize("protocol", ["v3", "v2"])
async def test_java_client_writes_and_reads(python_cluster: BookieCluster, protocol: str, release: str) -> None:
    cluster, version = python_cluster, VERSIONS[release]
    written = await run_harness(cluster, "write", protocol, "3", "3", "2", "CRC32C", "pw", "200", version=version)
    ledger_id, last, length = (int(x) for x in written.result)
    assert last == 199 and written.values("ACKED")[-1] == ["199"]
    read = await run_harness(cluster, "read", protocol, str(ledger_id), "pw", "recover", version=version)
    assert read.result[0] == "199" and read.result[2] == "true"
    assert read.entries() == {i: f"java-{i}" for i in range(200)}
    async with BookKeeper(cluster.client_config(use_v2_protocol=protocol == "v2")) as bk:
        lh = await bk.open_ledger(ledger_id, b"pw")
        assert lh.length == length
        assert [e.payload for e in await lh.read(0, 199)] == [b"java-%d" % i for i in range(200)]


@pytest.mark.parametrize(("protocol", "digest"), [
    ("v3", DigestType.CRC32C), ("v3", DigestType.CRC32), ("v3", DigestType.HMAC), ("v3", DigestType.DUMMY),
    ("v2", DigestType.CRC32C)])
async def test_java_client_reads_what_the_python_client_wrote(python_cluster: BookieCluster, protocol: str,
                                                             digest: DigestType) -> None:
    cluster = python_cluster
    async with BookKeeper(cluster.client_config(use_v2_protocol=protocol == "v2")) as bk:
        lh = await bk.create_ledger(3, 2, 2, digest_type=digest, password=b"pw")
        for i in range(50):
            await lh.add(b"py-%d" % i)
        await lh.close()
    read = await run_harness(cluster, "read", protocol, str(lh.ledger_id), "pw", "recover")
    assert read.result == ["49", str(lh.length), "true"]
    assert read.entries() == {i: f"py-{i}" for i in range(50)}
