"""The way back for a bookie that began as ours: a disk our bookie created (its RocksDB indexes included) is
taken over by Apache BookKeeper 4.17, whose RocksDB (7.10) reads table formats up to version 5, and then by
ours again. Every acknowledged entry reads back byte-identical at each step; each side writes new ledgers and
runs a forced GC with compaction."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.client import BookKeeper

from tests.compat.same_disk import Ledgers, SameDisk, gc_reclaims, start
from tests.support.java_bookies import BookieCluster


async def test_ours_then_java_then_ours_on_one_disk(cluster_factory: Callable[..., BookieCluster],
                                                    tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 0)
    disk = SameDisk.plan(tmp_path / "bookie", cluster, "127.0.0.149")
    ledgers = Ledgers()

    await start(disk.ours, cluster)
    await ledgers.write_with_java_client(cluster, 200)
    async with BookKeeper(cluster.client_config()) as bk:
        ours_written = await ledgers.write(bk, 4, 100)
    await asyncio.to_thread(disk.ours.stop)
    cookies = disk.cookies()

    await start(disk.java, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "Apache BookKeeper on a disk our bookie created")
        java_written = await ledgers.write(bk, 4, 100)
        await ledgers.delete(bk, ours_written[:2] + java_written[:2])
        await gc_reclaims(disk, disk.java)
        await ledgers.check(bk, "Apache BookKeeper after its GC and compaction")
    await asyncio.to_thread(disk.java.stop)

    await start(disk.ours, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "ours again on the disk Apache BookKeeper left")
        await ledgers.write(bk, 2, 100)
        await ledgers.delete(bk, ours_written[2:3] + java_written[2:3])
        await gc_reclaims(disk, disk.ours)
        await ledgers.check(bk, "ours again after its GC and compaction")
    assert disk.cookies() == cookies
