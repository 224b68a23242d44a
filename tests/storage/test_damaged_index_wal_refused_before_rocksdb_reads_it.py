"""An index whose write-ahead log has a damaged record is refused before RocksDB replays it, naming the log, the
record's offset and the command that rebuilds that index. Left to RocksDB, a record whose type a flipped bit made
"recyclable" has it loop forever (seen at the log's last record), and one that fails its checksum in the middle
has it open the index without a word, replayed only up to there. A log's torn end (a crash while RocksDB
appended) is RocksDB's to drop, and a recycled log's records (recyclable, naming the log) are sound.

Our bookie's index writes skip the write-ahead log; Apache BookKeeper's do not, so a disk taken over from it holds
such logs. Here they are written by RocksDB itself: a process puts the records and exits without closing (which
would flush them into a table file), as a bookie that crashed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bookie.storage import index_format
from bookie.storage.index_logs import BLOCK_SIZE, IndexDamagedError, first_damaged_record

from tests.support.rocksdb_logs import RECYCLABLE_FULL, TYPE_OFFSET, make_record, record_offsets

RECORDS = 100
_WRITE_AND_CRASH = ("import os, sys; from pathlib import Path; from bookie.storage import index_format; "
                    "db = index_format.open_db(Path(sys.argv[1])); "
                    f"[db.put(i.to_bytes(8, 'big'), b'location' * 8) for i in range({RECORDS})]; os._exit(0)")
_OPEN_AND_COUNT = ("import sys; from pathlib import Path; from bookie.storage import index_format; "
                   "db = index_format.open_db(Path(sys.argv[1])); print(sum(1 for _ in db.keys())); db.close()")


def _crashed_index(tmp_path: Path) -> tuple[Path, Path]:
    """An index with RECORDS writes in its write-ahead log only, and that log."""
    index = tmp_path / "current" / "locations"
    index.parent.mkdir(parents=True)
    subprocess.run([sys.executable, "-c", _WRITE_AND_CRASH, str(index)], check=True, timeout=120)
    [log] = [p for p in index.glob("*.log") if p.stat().st_size]
    return index, log


def _open_elsewhere(index: Path) -> subprocess.CompletedProcess[str]:
    """``open_db`` in a process of its own, with a time limit: RocksDB left to read a damaged type spins forever."""
    return subprocess.run([sys.executable, "-c", _OPEN_AND_COUNT, str(index)], capture_output=True, text=True,
                          timeout=120)


def test_an_intact_log_passes_and_is_replayed(tmp_path: Path) -> None:
    index, log = _crashed_index(tmp_path)
    assert len(record_offsets(log.read_bytes())) == RECORDS
    assert first_damaged_record(log.read_bytes(), int(log.stem)) is None
    opened = _open_elsewhere(index)
    assert opened.returncode == 0 and opened.stdout.split() == [str(RECORDS)], opened.stderr


@pytest.mark.parametrize("which", ["first", "middle", "last"])
def test_a_record_turned_recyclable_is_refused_without_rocksdb_reading_it(tmp_path: Path, which: str) -> None:
    index, log = _crashed_index(tmp_path)
    data = bytearray(log.read_bytes())
    records = record_offsets(bytes(data))
    record = {"first": records[0], "middle": records[len(records) // 2], "last": records[-1]}[which]
    assert data[record + TYPE_OFFSET] == 1, "a full record"
    data[record + TYPE_OFFSET] ^= 0b100  # full (1) becomes recyclable full (5)
    log.write_bytes(bytes(data))
    opened = _open_elsewhere(index)
    assert opened.returncode != 0, opened.stdout
    assert "IndexDamagedError" in opened.stderr and f"{log.name} is damaged (the record at byte {record}: type 5"\
        in opened.stderr, opened.stderr
    assert "`bookkeeper shell rebuild-db-ledger-locations-index`" in opened.stderr


def test_a_flipped_bit_with_records_after_it_is_refused(tmp_path: Path) -> None:
    index, log = _crashed_index(tmp_path)
    data = bytearray(log.read_bytes())
    record = record_offsets(bytes(data))[RECORDS // 2]
    data[record + 7] ^= 0x10  # the record's first byte after its header
    log.write_bytes(bytes(data))
    with pytest.raises(IndexDamagedError) as refused:
        index_format.open_db(index)
    assert f"{log.name} is damaged (the record at byte {record}: its checksum fails)" in str(refused.value)


def test_a_torn_end_is_left_to_rocksdb(tmp_path: Path) -> None:
    index, log = _crashed_index(tmp_path)
    data = log.read_bytes()
    last = record_offsets(data)[-1]
    garbled = bytearray(data)
    garbled[last + 7] ^= 0x10  # the last record half written
    for torn in (data[:-5], bytes(garbled), data + bytes(4096)):
        assert first_damaged_record(torn, int(log.stem)) is None
    log.write_bytes(bytes(garbled))
    opened = _open_elsewhere(index)
    assert opened.returncode == 0 and opened.stdout.split() == [str(RECORDS - 1)], opened.stderr


def test_a_recycled_log_is_sound_up_to_its_previous_use() -> None:
    current = b"".join(make_record(RECYCLABLE_FULL, os.urandom(40), 12) for _ in range(5))
    previous_use = b"".join(make_record(RECYCLABLE_FULL, os.urandom(40), 7) for _ in range(5))
    assert first_damaged_record(current + previous_use, 12) is None
    damaged = bytearray(current + current)
    damaged[2 * len(current) // 5 + 11] ^= 1  # a byte of the third record
    assert first_damaged_record(bytes(damaged), 12) == (2 * len(current) // 5, "its checksum fails")
    mixed = current + bytes.fromhex("00000000") + b"\x00\x00\x01"
    assert first_damaged_record(mixed, 12) == (len(current), "type 1 in a log of recyclable records")


def test_a_record_overrunning_its_block_with_records_after_it_is_damaged() -> None:
    filler = make_record(RECYCLABLE_FULL, bytes(BLOCK_SIZE - 20 - 11), 3)
    overrun = make_record(RECYCLABLE_FULL, bytes(40), 3)
    log = filler + overrun + make_record(RECYCLABLE_FULL, b"next block", 3)
    assert first_damaged_record(log, 3) == (BLOCK_SIZE - 20, f"40 bytes long, past the end of its {BLOCK_SIZE}-byte "
                                                             "block")
    assert first_damaged_record(filler + overrun, 3) is None, "the log's torn end"
