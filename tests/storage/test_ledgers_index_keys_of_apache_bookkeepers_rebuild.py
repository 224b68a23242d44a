"""A ledgers index rebuilt by Apache BookKeeper 4.17's ``rebuild-db-ledgers-index`` keys each ledger by 16 bytes (its
id, then 8 zero bytes), where its bookie and this one write 8. This bookie starts on such a disk with every
ledger in it (fenced, as the rebuild left them), moves each to its 8-byte key, and keeps a newer 8-byte key's
state where both exist. A ledger deleted after that stays deleted across a restart: a 16-byte key left behind
would bring it back.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from bookie.storage import index_format
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import FencedError, NoLedgerError
from bookie.storage.index import LedgerData
from bookie.storage.index_logs import IndexDamagedError

from tests.storage.conftest import engine_conf
from tests.support.raw_client import MASTER_KEY, entry
from tests.support.rocksdb_index import index_pairs

REBUILT = LedgerData(master_key=b"", fenced=True)  # what the rebuild writes for every ledger


def _long_key(ledger_id: int) -> bytes:
    return struct.pack(">q", ledger_id) + bytes(8)




async def test_ledgers_under_16_byte_keys_are_served_and_rekeyed(tmp_path: Path) -> None:
    engine = StorageEngine(engine_conf(tmp_path))
    await engine.start()
    for ledger in (10, 11):
        await engine.add_entry(entry(ledger, 0, b"entry"), MASTER_KEY)
    await engine.close()
    index = tmp_path / "l0" / "current" / "ledgers"
    db = index_format.open_db(index)
    for key in list(db.keys()):
        db.delete(key)
    db.put(_long_key(10), REBUILT.encode())
    db.put(_long_key(11), REBUILT.encode())
    # Ledger 11's state changed after the rebuild, under its 8-byte key: newer, so it is the one kept.
    db.put(struct.pack(">q", 11), LedgerData(master_key=MASTER_KEY, fenced=False).encode())
    db.close()
    (index.parent / "ledgers.sequence").unlink()  # as after Apache BookKeeper's rebuild

    engine = StorageEngine(engine_conf(tmp_path))
    await engine.start()
    try:
        assert bytes(await engine.read_entry(10, 0)) == entry(10, 0, b"entry")
        with pytest.raises(FencedError):
            await engine.add_entry(entry(10, 1, b"after"), MASTER_KEY)
        await engine.add_entry(entry(11, 1, b"after"), MASTER_KEY)  # not fenced: the 8-byte key's state
        await engine.delete_ledger(10)
    finally:
        await engine.close()
    assert list(index_pairs(index)) == [struct.pack(">q", 11)], "ledger 11 under its 8-byte key only, ledger 10 deleted"

    engine = StorageEngine(engine_conf(tmp_path))
    await engine.start()
    try:
        with pytest.raises(NoLedgerError):
            await engine.read_entry(10, 0)
        assert bytes(await engine.read_entry(11, 1)) == entry(11, 1, b"after")
    finally:
        await engine.close()


async def test_a_key_shorter_than_a_ledger_id_is_refused_naming_the_index(tmp_path: Path) -> None:
    index = tmp_path / "l0" / "current" / "ledgers"
    db = index_format.open_db(index)
    db.put(b"\x01\x02\x03", REBUILT.encode())
    db.close()
    engine = StorageEngine(engine_conf(tmp_path))
    try:
        with pytest.raises(IndexDamagedError, match=f"RocksDB ledgers index {index}: a key of 3 bytes \\(010203\\)"):
            await engine.start()
    finally:
        await engine.close()
