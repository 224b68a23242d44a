"""One cluster, one ensemble, two implementations: Apache BookKeeper bookies and ours side by side; both
clients write ledgers striped over all of them and read each other's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bookie.client import BookKeeper

from tests.compat.java_client import run_harness
from tests.support.java_bookies import BookieCluster


async def test_ledgers_striped_over_java_and_python_bookies(cluster_factory: Callable[..., BookieCluster]) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "mixed", 4)
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(4, 3, 2, password=b"pw")
        assert set(lh.ensemble) == set(cluster.bookie_ids)  # both kinds in the ensemble
        await asyncio.gather(*(lh.append(b"py-%d" % i) for i in range(200)))
        await lh.close()
        read = await run_harness(cluster, "read", "v3", str(lh.ledger_id), "pw", "recover")
        assert read.entries() == {i: f"py-{i}" for i in range(200)}

        written = await run_harness(cluster, "write", "v2", "4", "3", "2", "CRC32C", "pw", "200")
        java_ledger = int(written.result[0])
        jh = await bk.open_ledger(java_ledger, b"pw")
        assert set(jh.ensemble) == set(cluster.bookie_ids)
        assert [e.payload for e in await jh.read(0, 199)] == [b"java-%d" % i for i in range(200)]
