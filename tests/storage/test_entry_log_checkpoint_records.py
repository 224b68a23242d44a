"""A checkpoint's entries land in the entry logs as BookKeeper lays them out: size-prefixed records, a ledger's
entries together and in order, logs rolled at logSizeLimit (an entry larger than a log gets one of its own),
each finalized log's ledgers map counting its records' bytes, and every returned location reading back its
entry. The write buffer never holds much more than WRITE_BUFFER_BYTES, however large the checkpoint.

The records are packed in C (``bookie.storage._native``); the logs are read back here with a reader of the
format's own facts."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from bookie.storage import _native
from bookie.storage import entrylog_format as ef
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


def checkpoint(rng: random.Random, ledgers: int, per_ledger: int, sizes: list[int]
               ) -> list[tuple[int, list[int], list[bytes | memoryview]]]:
    out: list[tuple[int, list[int], list[bytes | memoryview]]] = []
    for ledger_id in sorted(rng.sample(range(1, 2**40), ledgers)):
        ids = sorted(rng.sample(range(10_000), per_ledger))
        bodies: list[bytes | memoryview] = [body(ledger_id, i, rng.choice(sizes)) for i in ids]
        bodies[0] = memoryview(bytes(bodies[0]))  # entries arrive as bytes or as views of a frame
        out.append((ledger_id, ids, bodies))
    return out


def test_records_rolled_at_the_limit_read_back_by_location(tmp_path: Path) -> None:
    limit = 64 * 1024
    logger = EntryLogger(tmp_path, limit)
    written = checkpoint(random.Random(1), 12, 40, [40, 500, 3000, 9000])
    written.append((2**41, [0], [body(2**41, 0, 3 * limit)]))  # larger than a log
    locations = logger.append_ledgers(written)
    logger.flush()
    logger.roll()

    expected = [(ledger_id, entry_id) for ledger_id, ids, _ in written for entry_id in ids]
    assert [(ledger_id, entry_id) for ledger_id, entry_id, _ in locations] == expected
    bodies = {(ledger_id, entry_id): bytes(b)
              for ledger_id, ids, bs in written for entry_id, b in zip(ids, bs, strict=True)}
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
    total = sum(4 + len(b) for _, _, bs in written for b in bs)
    logger.append_ledgers(written)
    logger.flush()
    assert total > 10 * WRITE_BUFFER_BYTES
    assert len(held) >= total // (WRITE_BUFFER_BYTES + 4 + largest)
    assert max(held) < WRITE_BUFFER_BYTES + 4 + largest


def test_append_many_keeps_the_order_it_is_given(tmp_path: Path) -> None:
    logger = EntryLogger(tmp_path, 1 << 20)
    entries = [(7, 2, body(7, 2, 50)), (7, 1, body(7, 1, 60)), (3, 0, body(3, 0, 70)), (7, 3, body(7, 3, 80))]
    locations = logger.append_many(entries)
    logger.flush()
    assert [(ledger_id, entry_id) for ledger_id, entry_id, _ in locations] == [(7, 2), (7, 1), (3, 0), (7, 3)]
    assert [location for *_, location in locations] == sorted(location for *_, location in locations)
    for (ledger_id, entry_id, location), (_, _, entry) in zip(locations, entries, strict=True):
        assert logger.read(ledger_id, entry_id, location) == entry


def test_mismatched_ids_and_bodies_are_refused_by_name() -> None:
    buffer: bytearray = bytearray()
    with pytest.raises(ValueError, match="entry_ids and bodies differ in length"):
        _native.append_records(buffer, [], 1, [1, 2], [b"x" * 20], 0, ef.HEADER_SIZE, 1, 1 << 20, ef.HEADER_SIZE,
                               WRITE_BUFFER_BYTES)
    assert not buffer
