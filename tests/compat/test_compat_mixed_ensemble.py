"""One cluster, one ensemble, two implementations: Apache BookKeeper bookies and ours side by side; both
clients write ledgers striped over all of them and read each other's. On both Apache BookKeeper versions of the
compatibility matrix (bookies and Java client of one version together)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from bookie.client import BookKeeper

from tests.support.java_bookies import BookieCluster, JavaBookie
from tests.support.java_client import VERSIONS, run_harness


@pytest.mark.parametrize("release", ["pinned", "other"])
async def test_ledgers_striped_over_java_and_python_bookies(cluster_factory: Callable[..., BookieCluster],
                                                            release: str) -> None:
    version = VERSIONS[release]
    cluster = await asyncio.to_thread(cluster_factory, "mixed", 4, java_lib=version.lib)
    assert await asyncio.to_thread(java_bookie_version, cluster) == version.version
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(4, 3, 2, password=b"pw")
        assert set(lh.ensemble) == set(cluster.bookie_ids)  # both kinds in the ensemble
        await asyncio.gather(*(lh.append(b"py-%d" % i) for i in range(200)))
        await lh.close()
        read = await run_harness(cluster, "read", "v3", str(lh.ledger_id), "pw", "recover", version=version)
        assert read.entries() == {i: f"py-{i}" for i in range(200)}

        written = await run_harness(cluster, "write", "v2", "4", "3", "2", "CRC32C", "pw", "200", version=version)
        java_ledger = int(written.result[0])
        jh = await bk.open_ledger(java_ledger, b"pw")
        assert set(jh.ensemble) == set(cluster.bookie_ids)
        assert [e.payload for e in await jh.read(0, 199)] == [b"java-%d" % i for i in range(200)]


def java_bookie_version(cluster: BookieCluster) -> str:
    """The Apache BookKeeper version the cluster's Java bookies run: the bookkeeper-server jar on the classpath
    of their processes, as the kernel has their command lines."""
    found = set()
    for bookie in cluster.bookies:
        if isinstance(bookie, JavaBookie):
            assert bookie.proc is not None
            argv = Path(f"/proc/{bookie.proc.pid}/cmdline").read_bytes().decode().split("\0")
            lib = Path(argv[argv.index("-cp") + 1].removesuffix("/*"))
            found |= {jar.name.removeprefix("bookkeeper-server-").removesuffix(".jar")
                      for jar in lib.glob("bookkeeper-server-[0-9]*.jar")}
    (version,) = found
    return version
