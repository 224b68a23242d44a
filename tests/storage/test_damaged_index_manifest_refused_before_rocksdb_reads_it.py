"""An index whose MANIFEST has a record that fails its checksum is refused before RocksDB reads it, with the
record's offset and the command that rebuilds that index: RocksDB's log reader can loop forever on such a record
(one flipped bit that makes a record "recyclable" did, at full CPU with the GIL held) instead of refusing it.
An intact index opens; a MANIFEST cut short at its end (a torn write) is left to RocksDB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bookie.storage import index_format, index_logs
from bookie.storage.index_logs import IndexDamagedError, first_damaged_record

from tests.support.rocksdb_logs import TYPE_OFFSET, make_record, record_offsets


def _index(tmp_path: Path, name: str = "ledgers") -> Path:
    path = tmp_path / "current" / name
    path.parent.mkdir(parents=True)
    db = index_format.open_db(path)
    for i in range(100):
        db[i.to_bytes(8, "big")] = b"state" * 10
    db.flush()
    db.close()
    return path


def _manifest(index: Path) -> Path:
    return index / (index / "CURRENT").read_text().strip()


def test_an_intact_index_passes_and_opens(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert first_damaged_record(_manifest(index).read_bytes()) is None
    db = index_format.open_db(index)
    assert db[(7).to_bytes(8, "big")] == b"state" * 10
    db.close()


def test_a_record_turned_recyclable_is_refused_without_rocksdb_reading_it(tmp_path: Path) -> None:
    index = _index(tmp_path)
    manifest = _manifest(index)
    data = bytearray(manifest.read_bytes())
    record = record_offsets(bytes(data))[-1]  # the last: its longer header would also make it look cut short
    assert data[record + TYPE_OFFSET] == 1, "a full record"
    data[record + TYPE_OFFSET] ^= 0b100  # full (1) becomes recyclable full (5)
    manifest.write_bytes(bytes(data))
    # In a process of its own, with a time limit: RocksDB left to read this record would spin forever.
    opened = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                             "from bookie.storage import index_format; index_format.open_db(Path(sys.argv[1]))",
                             str(index)], capture_output=True, text=True, timeout=120)
    assert opened.returncode != 0
    assert "IndexDamagedError" in opened.stderr and f"the record at byte {record}: type 5" in opened.stderr
    assert "`bookkeeper shell rebuild-db-ledgers-index`" in opened.stderr and str(index) in opened.stderr


@pytest.mark.parametrize("name", index_format.INDEX_NAMES)
def test_a_flipped_bit_in_any_record_names_that_record_and_the_rebuild(tmp_path: Path, name: str) -> None:
    index = _index(tmp_path, name)
    manifest = _manifest(index)
    original = manifest.read_bytes()
    for record in record_offsets(original):
        if original[record + 4:record + 6] == b"\0\0":
            continue  # no bytes of its own to flip
        data = bytearray(original)
        data[record + 7] ^= 0x10  # the record's first byte after its header
        manifest.write_bytes(bytes(data))
        with pytest.raises(IndexDamagedError) as refused:
            index_format.open_db(index)
        assert f"the record at byte {record}: its checksum fails" in str(refused.value)
        assert f"`{index_format.REBUILD_COMMANDS[name]}`" in str(refused.value)
    manifest.write_bytes(original)
    index_format.open_db(index).close()


def test_a_manifest_cut_short_at_its_end_is_left_to_rocksdb(tmp_path: Path) -> None:
    data = _manifest(_index(tmp_path)).read_bytes()
    assert first_damaged_record(data[:-1]) is None, "a torn last record"
    assert first_damaged_record(data + bytes(64)) is None, "a preallocated tail of zeros"


def test_a_record_overrunning_its_block_is_damaged() -> None:
    filler = make_record(1, bytes(index_logs.BLOCK_SIZE - 20 - 7))
    assert first_damaged_record(filler + make_record(1, bytes(13))) is None, "ends exactly at the block's end"
    overrun = first_damaged_record(filler + make_record(1, bytes(40)))
    assert overrun is not None and overrun[0] == index_logs.BLOCK_SIZE - 20 and "past the end" in overrun[1]
