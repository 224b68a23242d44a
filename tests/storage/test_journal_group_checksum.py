"""Each journal group ends with a padding record carrying the CRC32C of the group's bytes. The journal's writer
thread computes it without the GIL, in C; it is the CRC32C of the crc32c package (which replay checks) for any
bytes, and a journal it wrote replays group by group."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import crc32c
import pytest
from bookie.storage import journal_format as jf
from bookie.storage._write_path import crc32c as journal_crc32c
from bookie.storage.journal import Journal, JournalSettings, LogMark, replay_records
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.raw_client import entry


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=5000))
def test_the_writer_checksum_is_crc32c(data: bytes) -> None:
    assert journal_crc32c(data) == crc32c.crc32c(data)


@pytest.mark.parametrize("size", [767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 777, 2 * 3 * 8192 + 3 * 256,
                                  1 << 20])
@pytest.mark.parametrize("offset", [0, 3])
def test_long_inputs_checksummed_in_three_streams_are_crc32c(size: int, offset: int) -> None:
    data = memoryview(random.Random(size).randbytes(size + offset))[offset:]  # also from an unaligned start
    assert journal_crc32c(data) == crc32c.crc32c(bytes(data))


async def test_every_group_written_carries_a_checksum_that_replay_accepts(tmp_path: Path) -> None:
    journal = Journal(tmp_path, JournalSettings(max_group_wait_s=0, alignment=4096))
    journal.start()
    try:
        for group in range(5):
            await asyncio.gather(*(journal.append(entry(1, group * 10 + i, bytes([i]) * (100 * i + 1)))
                                   for i in range(10)))
    finally:
        await asyncio.to_thread(journal.close)
    (path,) = (tmp_path / "current").glob("*.txn")
    data = path.read_bytes()
    assert jf.has_group_checksums(data)
    assert sorted(r.entry_id for _, r in replay_records(tmp_path, LogMark(0, 0))) == list(range(50))
    last_record = max(r.offset for _, r in replay_records(tmp_path, LogMark(0, 0)))
    damaged = bytearray(data)
    damaged[last_record + 20] ^= 0xFF  # inside the last group (of the last ten records): a torn tail
    path.write_bytes(bytes(damaged))
    replayed = {r.entry_id for _, r in replay_records(tmp_path, LogMark(0, 0))}
    assert 49 not in replayed and set(range(40)) <= replayed, \
        "the group whose checksum does not match is not replayed; the ones before it are"
