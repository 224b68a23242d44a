"""A RocksDB index's contents as the tests compare them: every key and value, read without taking its lock."""

from __future__ import annotations

from pathlib import Path

from rocksdict import AccessType, Options, Rdict


def index_pairs(index: Path) -> dict[bytes, bytes]:
    """Every key and value of the RocksDB at ``index``, opened read-only (beside a running bookie too)."""
    db = Rdict(str(index), Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        pairs: dict[bytes, bytes] = {}
        it = db.iter()
        it.seek_to_first()
        while it.valid():
            pairs[bytes(it.key())] = bytes(it.value())
            it.next()
        return pairs
    finally:
        db.close()
