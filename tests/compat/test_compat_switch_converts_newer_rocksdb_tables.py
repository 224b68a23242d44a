"""An index our bookie wrote in RocksDB's newer table format (format_version 6, the default of the RocksDB in
rocksdict, which earlier releases of our bookie used) is rewritten at start in the format Apache BookKeeper
4.17's RocksDB 7.10 reads, with a log line saying so; Apache BookKeeper then serves every entry of that disk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.client import BookKeeper
from bookie.storage.index_format import INDEX_NAMES, TABLE_FORMAT_VERSION, table_format
from rocksdict import BottommostLevelCompaction, CompactOptions, Options, Rdict

from tests.compat.same_disk import Ledgers, SameDisk, start
from tests.support.java_bookies import BookieCluster


def rewrite_in_rocksdbs_default_format(index: Path) -> None:
    """What an earlier release left: every table of the index written with RocksDB's default options."""
    opts = Options(raw_mode=True)
    db = Rdict(str(index), opts, column_families={"default": opts})
    compact = CompactOptions()
    compact.set_bottommost_level_compaction(BottommostLevelCompaction.force())
    db.compact_range(None, None, compact)
    db.close()


def table_formats(current: Path) -> set[int]:
    return {table_format(sst) for name in INDEX_NAMES for sst in (current / name).glob("*.sst")}


async def test_newer_tables_are_rewritten_for_apache_bookkeeper(cluster_factory: Callable[..., BookieCluster],
                                                                 tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 0)
    disk = SameDisk.plan(tmp_path / "bookie", cluster, "127.0.0.150")
    ledgers = Ledgers()
    await start(disk.ours, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.write(bk, 2, 100)
    await asyncio.to_thread(disk.ours.stop)
    for name in INDEX_NAMES:
        rewrite_in_rocksdbs_default_format(disk.current / name)
    assert max(table_formats(disk.current)) > TABLE_FORMAT_VERSION

    await start(disk.ours, cluster)
    assert "rewriting the index in format_version 5" in disk.ours.log_path.read_text()
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "ours after rewriting its index")
    await asyncio.to_thread(disk.ours.stop)
    assert table_formats(disk.current) == {TABLE_FORMAT_VERSION}

    await start(disk.java, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "Apache BookKeeper on the rewritten index")
