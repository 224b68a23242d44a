"""The storage engine on real files: journal rollover and trimming, several ledger directories, read-ahead
limits, and what a restart must remember (entries, master keys, fences, explicit LACs)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import FencedError, MasterKeyMismatchError, NoEntryError, NoLedgerError

from tests.storage.conftest import engine_conf
from tests.support.raw_client import MASTER_KEY, entry


async def _crash(engine: StorageEngine) -> None:
    """Release files and locks the way a dying process does, without the checkpoint of a clean close."""
    if engine._timer is not None:
        engine._timer.cancel()
    engine._closed = True
    for journal in engine.journals:
        await asyncio.to_thread(journal.close)
    for d in engine.dirs:
        await asyncio.to_thread(d.locations.close)
        await asyncio.to_thread(d.ledger_index.close)


async def test_journal_rolls_and_old_files_are_trimmed_after_checkpoints(engines: Any, tmp_path: Path) -> None:
    engine = await engines(journalMaxSizeMB=1, journalMaxBackups=1, journalPreAllocSizeMB=1)
    for i in range(60):
        await engine.add_entry(entry(1, i, b"x" * 50_000), MASTER_KEY)
    journal_dir = tmp_path / "journal" / "current"
    assert len(list(journal_dir.glob("*.txn"))) > 2, "the journal rolled at journalMaxSizeMB"
    await engine.checkpoint()
    for _ in range(600):  # removed on the journal's removal thread, not by the checkpoint itself
        if len(list(journal_dir.glob("*.txn"))) <= 2:
            break
        await asyncio.sleep(0.05)
    assert len(list(journal_dir.glob("*.txn"))) <= 2, "older journals beyond journalMaxBackups are deleted"
    assert (await engine.read_entry(1, 0)) == entry(1, 0, b"x" * 50_000)


async def test_ledgers_spread_over_several_directories(engines: Any, tmp_path: Path) -> None:
    engine = await engines(ledgerDirectories=f"{tmp_path / 'l0'},{tmp_path / 'l1'}")
    for ledger in (10, 11):
        await engine.add_entry(entry(ledger, 0, b"y"), MASTER_KEY)
    await engine.checkpoint()
    assert list((tmp_path / "l0" / "current").glob("*.log"))
    assert list((tmp_path / "l1" / "current").glob("*.log"))
    assert await engine.read_entry(11, 0) == entry(11, 0, b"y")


async def test_read_ahead_fills_the_cache_up_to_the_batch_limit_and_stops_at_another_ledger(engines: Any) -> None:
    engine = await engines(dbStorage_readAheadCacheBatchSize=5)
    for i in range(10):
        await engine.add_entry(entry(1, i, b"a" * 10), MASTER_KEY)
    await engine.add_entry(entry(2, 0, b"b"), MASTER_KEY)
    await engine.checkpoint()
    d = engine.dir_of(1)
    await engine.read_entry(1, 0)
    cached = [i for i in range(10) if d.read_cache.get(1, i) is not None]
    assert cached == [1, 2, 3, 4], "the read entry plus four more: batch size 5"
    await engine.read_entry(1, 8)
    assert d.read_cache.get(1, 9) is not None
    assert d.read_cache.get(2, 0) is None, "read-ahead never crosses into another ledger"


async def test_a_restart_remembers_entries_keys_fences_and_explicit_lac(engines: Any, tmp_path: Path) -> None:
    engine = await engines()
    await engine.add_entry(entry(5, 0, b"e0"), MASTER_KEY)
    await engine.add_entry(entry(6, 0, b"e0"), MASTER_KEY)
    await engine.fence(6, MASTER_KEY)
    await engine.write_explicit_lac(5, 0, MASTER_KEY, b"lac-packet")
    await _crash(engine)  # no final checkpoint: everything must come back from the journal
    again = StorageEngine(engine_conf(tmp_path))
    await again.start()
    try:
        assert await again.read_entry(5, 0) == entry(5, 0, b"e0")
        assert await again.read_explicit_lac(5) == b"lac-packet"
        with pytest.raises(FencedError):
            await again.add_entry(entry(6, 1, b"e1"), MASTER_KEY)
        with pytest.raises(MasterKeyMismatchError):
            await again.add_entry(entry(5, 1, b"e1"), b"k" * 20)
        with pytest.raises(NoEntryError):
            await again.read_entry(5, 1)
        with pytest.raises(NoLedgerError):
            await again.read_entry(7, 0)
    finally:
        await again.close()


async def test_a_failed_checkpoint_keeps_its_entries_for_the_next_one(engines: Any, tmp_path: Path) -> None:
    """A full disk (ENOSPC) during a checkpoint must not lose the cache it was flushing."""
    engine = await engines()
    await engine.add_entry(entry(3, 0, b"kept"), MASTER_KEY)
    d = engine.dir_of(3)
    real_flush = d.flush_cache

    def full_disk(cache: Any) -> int:
        raise OSError(28, "No space left on device")

    d.flush_cache = full_disk
    with pytest.raises(OSError):
        await engine.checkpoint()
    d.flush_cache = real_flush
    assert await engine.read_entry(3, 0) == entry(3, 0, b"kept")
    await engine.checkpoint()
    assert d.locations.get(3, 0) is not None, "the next checkpoint indexed it"
