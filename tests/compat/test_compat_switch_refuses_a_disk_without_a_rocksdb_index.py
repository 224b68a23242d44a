"""Our bookie refuses, at start and before creating anything there, a ledger directory whose entry logs have no
RocksDB index: that of an Apache BookKeeper bookie run with its default ledger storage (SortedLedgerStorage,
per-ledger .idx index files). Opened, it would serve as a bookie that lost all its ledgers. The reason is the
container's termination message; Apache BookKeeper then still serves the disk as it left it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from bookie.client import BookKeeper

from tests.compat.same_disk import Ledgers, SameDisk, start
from tests.support.java_bookies import BookieCluster

SORTED = "org.apache.bookkeeper.bookie.SortedLedgerStorage"


async def test_a_disk_of_sorted_ledger_storage_is_refused(cluster_factory: Callable[..., BookieCluster],
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 0)
    disk = SameDisk.plan(tmp_path / "bookie", cluster, "127.0.0.151")
    disk.java.overrides["ledgerStorageClass"] = SORTED  # Apache BookKeeper's default, had it not been set
    ledgers = Ledgers()
    await start(disk.java, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.write(bk, 2, 50)
    await asyncio.to_thread(disk.java.stop)
    before = sorted(p.relative_to(disk.current) for p in disk.current.rglob("*"))

    message = tmp_path / "termination-log"
    monkeypatch.setenv("BOOKIE_TERMINATION_LOG", str(message))  # the bookie process inherits it
    with pytest.raises(RuntimeError, match="exited with"):
        await asyncio.to_thread(disk.ours.start)
    disk.ours.proc = None
    text = message.read_text()
    assert text.startswith("IncompatibleDisk: ledger directory "), text
    assert "SortedLedgerStorage" in text and "convert-to-db-storage" in text, text
    assert sorted(p.relative_to(disk.current) for p in disk.current.rglob("*")) == before

    await start(disk.java, cluster)
    async with BookKeeper(cluster.client_config()) as bk:
        await ledgers.check(bk, "Apache BookKeeper after our bookie refused its disk")
