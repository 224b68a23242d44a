"""A location index that opens below the RocksDB sequence number its last sync recorded lost writes (RocksDB
recovered a damaged manifest or write-ahead log by dropping them): opening it fails, naming the index, rather than
serving "no such entry" for entries on disk. A disk without the record (one Apache BookKeeper wrote) opens as it
is and gets the record at its first sync."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookie.storage.errors import IndexRolledBackError
from bookie.storage.index import LocationIndex

SEQUENCE_FILE = "locations.sequence"


def _write_and_sync(current: Path, entries: int) -> int:
    index = LocationIndex(current)
    try:
        index.put_packed(b"".join(i.to_bytes(8, "big") * 2 + (100 + i).to_bytes(8, "big") for i in range(entries)))
        index.sync()
        return index.db.latest_sequence_number()
    finally:
        index.close()


def test_an_index_that_opens_where_its_last_sync_left_it_opens(tmp_path: Path) -> None:
    recorded = _write_and_sync(tmp_path, 10)
    assert int((tmp_path / SEQUENCE_FILE).read_text()) == recorded > 0
    index = LocationIndex(tmp_path)
    try:
        assert index.get(3, 3) == 103
    finally:
        index.close()


def test_an_index_below_its_recorded_sequence_is_refused_with_its_path(tmp_path: Path) -> None:
    recorded = _write_and_sync(tmp_path, 10)
    (tmp_path / SEQUENCE_FILE).write_text(str(recorded + 50))   # as if the last 50 writes were dropped
    with pytest.raises(IndexRolledBackError, match=f"{tmp_path / 'locations'} opened at sequence {recorded}, "
                                                   f"below the {recorded + 50}"):
        LocationIndex(tmp_path)


def test_a_disk_without_the_record_opens_and_gets_it_at_its_first_sync(tmp_path: Path) -> None:
    _write_and_sync(tmp_path, 10)
    (tmp_path / SEQUENCE_FILE).unlink()
    assert _write_and_sync(tmp_path, 20) == int((tmp_path / SEQUENCE_FILE).read_text())
