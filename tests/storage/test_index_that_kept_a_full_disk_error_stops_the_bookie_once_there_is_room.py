"""An index whose flush failed on a full disk keeps RocksDB's write error even once the disk has room again (RocksDB
takes writes only once opened again), so checkpoints would fail forever and adds wait for a write cache that never
empties. While the disk is full the bookie stays up (read-only: the disk checker's part); once it has room the
storage engine stops the bookie, naming the index, for its supervisor to start it: the start opens the index again
and replays from the journal what it had not synced. Found by tests/faults/test_full_disk_mid_write.py (seed
1562551843): a bookie that never took adds again once the space was freed."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest
from bookie.config import BookieConfig
from bookie.storage.engine import StorageEngine

from tests.support.disks import tmpfs
from tests.support.faults import fill, free
from tests.support.raw_client import MASTER_KEY, entry
from tests.support.waiting import eventually

LEDGER = 5
ENTRIES = 64
FLUSH_INTERVAL_MS = 200


def _conf(tmp_path: Path, index_disk: Path) -> BookieConfig:
    return BookieConfig.from_mapping({
        "journalDirectories": str(tmp_path / "journal"), "ledgerDirectories": str(tmp_path / "ledgers"),
        "indexDirectories": str(index_disk), "flushInterval": FLUSH_INTERVAL_MS, "journalMaxGroupWaitMSec": 0,
        "dbStorage_writeCacheMaxSizeMb": 1})


async def _add(engine: StorageEngine, first: int) -> dict[int, bytes]:
    bodies = {e: entry(LEDGER, e, bytes([e % 256]) * 4096) for e in range(first, first + ENTRIES)}
    for body in bodies.values():
        await engine.add_entry(body, MASTER_KEY)
    return bodies


async def test_stops_the_bookie_once_the_disk_has_room_and_a_restart_serves_every_entry(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "index-disk", 8) as index_disk:
        engine = StorageEngine(_conf(tmp_path, index_disk))
        reasons: list[str] = []
        engine.on_fatal = reasons.append
        await engine.start()
        written = await _add(engine, 0)
        await engine.checkpoint()                      # the first entries indexed and synced
        filler = fill(index_disk, leave=0)
        try:
            written |= await _add(engine, ENTRIES)
            with pytest.raises(OSError) as failed:     # the index's flush fails on the full disk
                await engine.checkpoint()
            assert failed.value.errno == errno.ENOSPC, failed.value
            await asyncio.sleep(5 * FLUSH_INTERVAL_MS / 1000)    # the timer's checkpoints fail meanwhile
            assert reasons == [], "stopped while the disk was still full"
            assert any(d.locations.keeps_a_write_error() for d in engine.dirs)
        finally:
            free(filler)

        async def stopped() -> bool:
            return bool(reasons)

        await eventually(stopped, "the bookie stopped once the disk had room", within=30)
        assert "location index" in reasons[0] and "opened again" in reasons[0], reasons
        with pytest.raises(OSError):                   # its closing checkpoint meets the kept error too
            await engine.close()

        restarted = StorageEngine(_conf(tmp_path, index_disk))   # its supervisor starts it again
        await restarted.start()
        try:
            for entry_id, body in written.items():
                assert await restarted.read_entry(LEDGER, entry_id) == body, f"entry {entry_id}"
            await restarted.checkpoint()               # and its index takes writes again
        finally:
            await restarted.close()
