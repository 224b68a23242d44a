"""A ledgers index (the RocksDB holding each ledger's master key, fenced flag and explicit LAC) that opens below
the RocksDB sequence number its last sync recorded lost writes: the bookie refuses to start, naming the index,
rather than serve a fenced ledger as writable again (two writers of one ledger) or a ledger without its master
key. A disk without the record (one Apache BookKeeper wrote) opens as it is and gets the record at its first
sync; writes made without it (Apache BookKeeper's, on the same disk) only raise the number.

The rollback here is real: the index directory as it was before a fence, put back after the checkpoint that made
the fence durable (the journal no longer holds the fence to replay it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bookie.storage import index_format
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import IndexRolledBackError
from bookie.storage.index import LedgerData, LedgerIndex
from bookie.termination import STARTUP_FAILED, reason_for_error

from tests.storage.conftest import engine_conf
from tests.support.raw_client import MASTER_KEY, entry

SEQUENCE_FILE = "ledgers.sequence"


async def _run(tmp_path: Path, *steps: str) -> None:
    """Start the storage engine, add an entry to ledger 7 or fence it, stop it cleanly (a checkpoint)."""
    engine = StorageEngine(engine_conf(tmp_path))
    await engine.start()
    try:
        for step in steps:
            if step == "add":
                await engine.add_entry(entry(7, 0, b"e0"), MASTER_KEY)
            else:
                await engine.fence(7, MASTER_KEY)
    finally:
        await engine.close()


async def test_a_ledgers_index_put_back_to_before_a_fence_is_refused_naming_it(tmp_path: Path) -> None:
    await _run(tmp_path, "add")
    ledgers = tmp_path / "l0" / "current" / "ledgers"
    shutil.copytree(ledgers, tmp_path / "before-the-fence")
    await _run(tmp_path, "fence")
    shutil.rmtree(ledgers)
    shutil.copytree(tmp_path / "before-the-fence", ledgers)  # RocksDB as if it had dropped the fence's write
    with pytest.raises(IndexRolledBackError, match=f"RocksDB ledgers index {ledgers} opened at sequence ") as refused:
        StorageEngine(engine_conf(tmp_path))
    assert "fenced flag" in str(refused.value)
    assert reason_for_error(refused.value) == STARTUP_FAILED  # the bookie's termination message: StartupFailed
    # What to do after a deliberate rebuild is in the message: Apache BookKeeper's command, and the file to delete.
    assert "`bookkeeper shell rebuild-db-ledgers-index`" in str(refused.value)
    assert f"delete {ledgers.parent / SEQUENCE_FILE}" in str(refused.value)


async def test_an_index_rebuilt_on_purpose_opens_once_its_record_is_deleted(tmp_path: Path) -> None:
    # A rebuilt index (Apache BookKeeper's rebuild-db-ledgers-index) is a new RocksDB, numbered from 0 again.
    await _run(tmp_path, "add", "fence")
    ledgers = tmp_path / "l0" / "current" / "ledgers"
    shutil.rmtree(ledgers)
    rebuilt = index_format.open_db(ledgers)
    rebuilt.put((7).to_bytes(8, "big"), LedgerData(master_key=MASTER_KEY, fenced=True).encode())
    rebuilt.close()
    with pytest.raises(IndexRolledBackError):
        StorageEngine(engine_conf(tmp_path))
    (ledgers.parent / SEQUENCE_FILE).unlink()  # as the refusal says
    engine = StorageEngine(engine_conf(tmp_path))
    await engine.start()
    try:
        assert engine.ledgers[7].data.fenced
    finally:
        await engine.close()


def test_an_index_that_opens_where_its_last_sync_left_it_opens(tmp_path: Path) -> None:
    index = LedgerIndex(tmp_path)
    try:
        index.put(7, LedgerData(master_key=MASTER_KEY, fenced=True))
        index.sync()
        recorded = index.db.latest_sequence_number()
    finally:
        index.close()
    assert int((tmp_path / SEQUENCE_FILE).read_text()) == recorded > 0
    index = LedgerIndex(tmp_path)
    try:
        assert index.load_all() == {7: LedgerData(master_key=MASTER_KEY, fenced=True)}
    finally:
        index.close()


def test_a_disk_without_the_record_opens_and_gets_it_at_its_first_sync(tmp_path: Path) -> None:
    db = index_format.open_db(tmp_path / "ledgers")  # as Apache BookKeeper leaves it: no ledgers.sequence
    db.put((7).to_bytes(8, "big"), LedgerData(master_key=MASTER_KEY).encode())
    db.close()
    index = LedgerIndex(tmp_path)
    try:
        assert not (tmp_path / SEQUENCE_FILE).exists()
        index.put(8, LedgerData(master_key=MASTER_KEY))
        index.sync()
        assert int((tmp_path / SEQUENCE_FILE).read_text()) == index.db.latest_sequence_number()
    finally:
        index.close()


def test_writes_made_without_the_record_only_raise_the_number(tmp_path: Path) -> None:
    index = LedgerIndex(tmp_path)
    try:
        index.put(7, LedgerData(master_key=MASTER_KEY))
        index.sync()
    finally:
        index.close()
    db = index_format.open_db(tmp_path / "ledgers")  # Apache BookKeeper's bookie on the same disk
    db.put((7).to_bytes(8, "big"), LedgerData(master_key=MASTER_KEY, fenced=True).encode())
    db.close()
    index = LedgerIndex(tmp_path)
    try:
        assert index.load_all()[7].fenced
    finally:
        index.close()
