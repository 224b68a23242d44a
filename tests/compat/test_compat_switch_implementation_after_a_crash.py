"""One bookie switched in place after a crash: Apache BookKeeper 4.17 (DbLedgerStorage) is killed (SIGKILL)
while a client writes to it, ours starts on its directories and replays its journal; ours is killed the same
way and Apache BookKeeper replays ours'. The entries of the killed writes were acknowledged from the journal
only (no checkpoint for a minute), so each implementation must replay the other's: every acknowledged entry
reads back byte-identical, then new ledgers are written and a forced GC with compaction loses nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.client import BookKeeper

from tests.compat.same_disk import Ledgers, SameDisk, WriteStream, gc_reclaims, start
from tests.support.java_bookies import BookieCluster

NO_CHECKPOINT = {"flushInterval": 60_000}  # what was acknowledged before the kill is in the journal only


async def test_java_killed_then_ours_killed_then_java_on_one_disk(cluster_factory: Callable[..., BookieCluster],
                                                                  tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 0)
    disk = SameDisk.plan(tmp_path / "bookie", cluster, "127.0.0.148", **NO_CHECKPOINT)
    ledgers = Ledgers()

    await start(disk.java, cluster)
    cookies = disk.cookies()
    await ledgers.write_with_java_client(cluster, 200)
    async with BookKeeper(cluster.client_config()) as bk:
        java_written = await ledgers.write(bk, 4, 100)
        stream = await WriteStream(bk, ledgers.rng).start(until_acked=300)
        await asyncio.to_thread(disk.java.kill)
        await stream.stopped()

    await start(disk.ours, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await stream.recover(bk, ledgers, "ours replaying Apache BookKeeper's journal")
        await ledgers.check(bk, "ours on Apache BookKeeper's disk after its crash")
        ours_written = await ledgers.write(bk, 4, 100)
        await ledgers.delete(bk, java_written[:2] + ours_written[:2])
        await gc_reclaims(disk, disk.ours)
        await ledgers.check(bk, "ours after its GC and compaction")
        stream = await WriteStream(bk, ledgers.rng).start(until_acked=300)
        await asyncio.to_thread(disk.ours.kill)
        await stream.stopped()

    await start(disk.java, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await stream.recover(bk, ledgers, "Apache BookKeeper replaying our journal")
        await ledgers.check(bk, "Apache BookKeeper on the disk ours left after its crash")
        java_again = await ledgers.write(bk, 4, 100)
        await ledgers.delete(bk, java_written[2:3] + ours_written[2:3] + java_again[:2])
        await gc_reclaims(disk, disk.java)
        await ledgers.check(bk, "Apache BookKeeper after its GC and compaction")
    assert disk.cookies() == cookies, "the same bookie throughout: its cookies untouched by either implementation"
