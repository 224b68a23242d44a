"""One bookie switched in place, stopped cleanly each time: Apache BookKeeper 4.17 (DbLedgerStorage) -> ours ->
Apache BookKeeper on the same journal and ledger directories, address and port (the same bookie id and cookie).
After each switch every acknowledged entry reads back byte-identical, new ledgers are written and read, and a
forced GC with compaction (some ledgers deleted first) reclaims entry logs without losing an entry."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.client import BookKeeper

from tests.compat.same_disk import Ledgers, SameDisk, gc_reclaims, start
from tests.support.java_bookies import BookieCluster


async def test_java_then_ours_then_java_on_one_disk(cluster_factory: Callable[..., BookieCluster],
                                                    tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 0)
    disk = SameDisk.plan(tmp_path / "bookie", cluster, "127.0.0.147")
    ledgers = Ledgers()

    await start(disk.java, cluster)
    await ledgers.write_with_java_client(cluster, 200)
    async with BookKeeper(cluster.client_config()) as bk:
        java_written = await ledgers.write(bk, 4, 100)
    await asyncio.to_thread(disk.java.stop)
    cookies = disk.cookies()

    await start(disk.ours, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "ours on Apache BookKeeper's disk")
        ours_written = await ledgers.write(bk, 4, 100)
        await ledgers.delete(bk, java_written[:2] + ours_written[:2])
        await gc_reclaims(disk, disk.ours)
        await ledgers.check(bk, "ours after its GC and compaction")
    await asyncio.to_thread(disk.ours.stop)
    assert disk.cookies() == cookies

    await start(disk.java, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "Apache BookKeeper on the disk ours left")
        java_again = await ledgers.write(bk, 4, 100)
        await ledgers.delete(bk, java_written[2:3] + ours_written[2:3] + java_again[:2])
        await gc_reclaims(disk, disk.java)
        await ledgers.check(bk, "Apache BookKeeper after its GC and compaction")
    await ledgers.write_with_java_client(cluster, 200)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "Apache BookKeeper at the end")
    assert disk.cookies() == cookies
