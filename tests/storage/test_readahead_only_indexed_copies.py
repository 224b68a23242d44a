"""Read-ahead caches only the records the location index points at.

An entry log can hold records of a ledger that nothing points at: copies a non-transactional compaction
appended before a power cut stopped it short of indexing them, or entries of a checkpoint that never finished.
After a real power cut some of their pages reached the disk and others did not, so such a record may be torn:
its header intact, its body not. Reading the entry before it must not put that record into the read cache, from
where it would be served instead of the indexed copy.
"""

from __future__ import annotations

from pathlib import Path

from bookie.config import BookieConfig
from bookie.storage._write_path import EntryBatch
from bookie.storage.ledger_dir import LedgerDirStorage, WriteCache

LEDGER = 7


def _storage(base: Path) -> LedgerDirStorage:
    conf = BookieConfig.from_mapping({"journalDirectories": str(base / "journal"),
                                      "ledgerDirectories": str(base / "l0")})
    return LedgerDirStorage(base / "l0", base / "l0", conf, 1)


def _body(entry_id: int, fill: bytes) -> bytes:
    return LEDGER.to_bytes(8, "big") + entry_id.to_bytes(8, "big") + fill * 3000


def test_an_unindexed_torn_copy_after_an_indexed_entry_is_never_served(tmp_path: Path) -> None:
    d = _storage(tmp_path)
    try:
        # Entries 0..2 indexed in a first log, then the log rolled.
        cache = WriteCache(1 << 20)
        for eid in range(3):
            cache.put(LEDGER, eid, _body(eid, b"a"))
        d.flush_cache(cache)
        d.entry_logger.roll()
        # The next log: entry 0 copied and indexed (a compaction batch that finished), then copies of entries 1
        # and 2 appended and flushed but never indexed, entry 1 torn (its body's tail zeros, as when the
        # power cut lost its second page).
        moved = d.entry_logger.append(LEDGER, 0, _body(0, b"a"))
        d.entry_logger.append_batch(EntryBatch([(LEDGER, 1, _body(1, b"a")[:2000] + bytes(len(_body(1, b"a")) - 2000)),
                                                (LEDGER, 2, _body(2, b"a"))]))
        d.entry_logger.flush()
        old = d.locations.get(LEDGER, 0)
        assert old is not None
        assert d.locations.replace_if_unchanged([(LEDGER, 0, old, moved)]) == 1

        assert d.read_from_disk(LEDGER, 0) == _body(0, b"a")  # read-ahead from the copy of entry 0
        cached = d.read_cache.get(LEDGER, 1)
        assert cached in (None, _body(1, b"a")), "the torn, unindexed copy of entry 1 went into the read cache"
        served = d.read_cache.get(LEDGER, 1) or d.read_from_disk(LEDGER, 1)
        assert served == _body(1, b"a")
    finally:
        d.entry_logger.close()
        d.locations.close()
        d.ledger_index.close()
