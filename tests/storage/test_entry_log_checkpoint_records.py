"""A checkpoint's entries land in the entry logs as BookKeeper lays them out: size-prefixed records, a ledger's
entries together and in order, logs rolled at logSizeLimit (an entry larger than a log gets one of its own),
each finalized log's ledgers map counting its records' bytes, and every returned location reading back its
entry. The write buffer never holds much more than WRITE_BUFFER_BYTES, however large the checkpoint.

The records are packed in C (``bookie.storage._write_path``, the GIL released while they are copied); the logs
are read back here with a reader of the format's own facts, and the packed locations a checkpoint indexes are
checked against them."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from bookie.storage import entrylog_format as ef
from bookie.storage._write_path import EntryBatch
from bookie.storage.entrylog import WRITE_BUFFER_BYTES, EntryLogger


def body(ledger_id: int, entry_id: int, size: int) -> bytes:
    return struct.pack(">qq", ledger_id, entry_id) + bytes([entry_id % 251]) * (size - 16)


def read_log(data: bytes) -> tuple[list[tuple[int, int, int, bytes]], dict[int, int]]:
    """(offset, ledger, entry, body) of each record of a finalized log, and its ledgers map."""
    magic, version, map_offset, count = struct.unpack_from(">4siqi", data, 0)
    assert (magic, version) == (b"BKLO", 1) and map_offset > 0
    records, pos = [], ef.HEADER_SIZE
    while pos < map_offset:
        (size,) = struct.unpack_from(">i", data, pos)
        entry = data[pos + 4:pos + 4 + size]
        records.append((pos + 4, *struct.unpack_from(">qq", entry), entry))
        pos += 4 + size
    assert pos == map_offset
    ledgers = ef.decode_ledgers_map(data, ef.LogHeader.decode(data))
    assert len(ledgers) == count
    return records, ledgers


def checkpoint(rng: random.Random, ledgers: int, per_ledger: int, sizes: list[int]) -> list[tuple[int, int, bytes]]:
    """A checkpoint's entries as the write cache sorts them: by ledger, then entry id."""
    out = []
    for ledger_id in sorted(rng.sample(range(1, 2**40), ledgers)):
        ids = sorted(rng.sample(range(10_000), per_ledger))
        out += [(ledger_id, i, body(ledger_id, i, rng.choice(sizes))) for i in ids]
    return out


def unpacked(locations: bytearray) -> list[tuple[int, int, int]]:
    """The packed locations (ledger id, entry id, location: 24 bytes each) as tuples."""
    return list(struct.iter_unpack(">qqq", locations))


def test_records_rolled_at_the_limit_read_back_by_location(tmp_path: Path) -> None:
    limit = 64 * 1024
    logger = EntryLogger(tmp_path, limit)
    written = checkpoint(random.Random(1), 12, 40, [40, 500, 3000, 9000])
    written.append((2**41, 0, body(2**41, 0, 3 * limit)))  # larger than a log
    locations = unpacked(logger.append_batch(EntryBatch(written)))
    logger.flush()
    logger.roll()

    assert [(ledger_id, entry_id) for ledger_id, entry_id, _ in locations] == [(lid, eid) for lid, eid, _ in written]
    bodies = {(ledger_id, entry_id): b for ledger_id, entry_id, b in written}
    for ledger_id, entry_id, location in locations:
        assert logger.read(ledger_id, entry_id, location) == bodies[ledger_id, entry_id]

    logs = logger.log_ids()
    assert len(logs) >= 5  # about 1.6 MB of entries through 64 KiB logs
    in_logs = []
    for log_id in logs:
        data = logger.path_of(log_id).read_bytes()
        records, ledgers = read_log(data)
        end = records[-1][0] + len(records[-1][3])
        assert end <= limit or len(records) == 1, f"log {log_id:x} passes the limit with {len(records)} records"
        sizes: dict[int, int] = {}
        for offset, ledger_id, entry_id, entry in records:
            assert entry == bodies[ledger_id, entry_id]
            sizes[ledger_id] = sizes.get(ledger_id, 0) + 4 + len(entry)
            in_logs.append((ledger_id, entry_id, ef.make_location(log_id, offset)))
        assert ledgers == sizes
    assert in_logs == locations


def test_the_write_buffer_stays_near_its_size_for_a_large_checkpoint(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    logger = EntryLogger(tmp_path, 1 << 30)
    largest = 70_000
    held: list[int] = []
    write = EntryLogger._write_buffer

    def watched(self: EntryLogger) -> None:
        held.append(len(self._buffer))
        write(self)

    monkeypatch.setattr(EntryLogger, "_write_buffer", watched)
    written = checkpoint(random.Random(2), 6, 200, [100, 8000, largest])
    total = sum(4 + len(b) for _, _, b in written)
    logger.append_batch(EntryBatch(written))
    logger.flush()
    assert total > 10 * WRITE_BUFFER_BYTES
    assert len(held) >= total // (WRITE_BUFFER_BYTES + 4 + largest)
    assert max(held) < WRITE_BUFFER_BYTES + 4 + largest


def test_a_batch_is_appended_in_the_order_it_is_given(tmp_path: Path) -> None:
    logger = EntryLogger(tmp_path, 1 << 20)
    entries = [(7, 2, body(7, 2, 50)), (7, 1, body(7, 1, 60)), (3, 0, body(3, 0, 70)), (7, 3, body(7, 3, 80))]
    locations = unpacked(logger.append_batch(EntryBatch(entries)))
    logger.flush()
    assert [(ledger_id, entry_id) for ledger_id, entry_id, _ in locations] == [(7, 2), (7, 1), (3, 0), (7, 3)]
    assert [location for *_, location in locations] == sorted(location for *_, location in locations)
    for (ledger_id, entry_id, location), (_, _, entry) in zip(locations, entries, strict=True):
        assert logger.read(ledger_id, entry_id, location) == entry
    assert logger.append(9, 0, body(9, 0, 10)) > locations[-1][2], "one entry appended after the batch"


def test_a_batch_takes_only_ids_and_bytes() -> None:
    with pytest.raises(TypeError, match="must be bytes"):
        EntryBatch([(1, 0, bytearray(b"x" * 20))])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        EntryBatch([(1, b"x" * 20)])  # type: ignore[list-item]
