"""A bookie whose index kept RocksDB's write error from a full disk never tells clients it takes adds again: the
disk check that finds room on its disks stops it (fail-stop, for its supervisor to start it) before that room
would make it writable. Found by tests/faults/test_full_disk_mid_write.py (seed 1102072601, on a loaded machine):
the disk check registered the bookie as writable once space was freed, its next checkpoint then met the kept
error and stopped it, and a client's add to it, between the two, failed.

The bookie runs in this process with its timers out of the way (an hour between checkpoints and disk checks), so
the test takes each step itself: the index's flush fails on its full disk, the ledger disk fills too and a disk
check turns the bookie read-only, the space is freed, and one disk check follows."""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

import pytest
from bookie.config import BookieConfig
from bookie.metadata.store import MetadataStore
from bookie.server import EXIT_STORAGE_FAILED, BookieServer
from bookie_fleet.processes import free_port
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.disks import tmpfs
from tests.support.faults import fill, free
from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 7
HOUR_MS = 3_600_000


async def test_the_disk_check_that_finds_room_stops_the_bookie_instead_of_making_it_writable(
        tmp_path: Path, zookeeper: ZooKeeperServer, ledgers_root: str, metadata_store: MetadataStore) -> None:
    with tmpfs(tmp_path / "ledger-disk", 16) as ledger_disk, tmpfs(tmp_path / "index-disk", 8) as index_disk:
        port = free_port("127.0.0.1")
        server = BookieServer(BookieConfig.from_mapping({
            "bookiePort": port, "advertisedAddress": "127.0.0.1", "allowLoopback": True,
            "metadataServiceUri": f"zk+hierarchical://{zookeeper.connect_string}{ledgers_root}",
            "journalDirectories": str(tmp_path / "journal"), "ledgerDirectories": str(ledger_disk),
            "indexDirectories": str(index_disk), "httpServerEnabled": False, "journalMaxGroupWaitMSec": 0,
            "flushInterval": HOUR_MS, "diskCheckInterval": HOUR_MS, "gcWaitTime": HOUR_MS,
            "diskUsageThreshold": 0.9, "diskUsageWarnThreshold": 0.85, "diskUsageLwmThreshold": 0.5,
            "dbStorage_writeCacheMaxSizeMb": 1}))
        await server.start()
        bookie_id = server.bookie_id
        try:
            engine = server.engine
            for entry_id in range(16):
                await engine.add_entry(entry(LEDGER, entry_id, b"x" * 4096), MASTER_KEY)
            index_filler = fill(index_disk, leave=0)
            ledger_filler = None
            try:
                with pytest.raises(OSError) as failed:  # the index's flush fails on its full disk
                    await engine.checkpoint()
                assert failed.value.errno == errno.ENOSPC, failed.value
                assert any(d.locations.keeps_a_write_error() for d in engine.dirs)
                ledger_filler = fill(ledger_disk, leave=0)
                await server.check_disks_now()
                assert bookie_id in await metadata_store.list_bookies(readonly=True), "the full disk: read-only"
                assert server.exit_code == 0, "stopped while the disks were still full"
            finally:
                free(index_filler)
                if ledger_filler is not None:
                    free(ledger_filler)

            await server.check_disks_now()              # room again, on both disks
            assert server.exit_code == EXIT_STORAGE_FAILED, "the stuck index did not stop the bookie"
            assert engine.fatal_error is not None and "opened again" in engine.fatal_error, engine.fatal_error
            assert bookie_id not in await metadata_store.list_bookies(readonly=False), \
                "registered writable before it stopped"
            await server.stopped.wait()
            assert bookie_id not in await metadata_store.list_bookies(readonly=True), "unregistered as it stopped"
        finally:
            with contextlib.suppress(OSError):  # a closing checkpoint meets the index's kept error too
                await server.stop()
