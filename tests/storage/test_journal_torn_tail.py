"""A journal's torn tail (a group cut by a crash) is detected by its checksum and never replayed; a damaged group
before valid ones is damage to acknowledged data, named, and the groups after it are not lost with it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bookie.storage import journal_format as jf
from bookie.storage.errors import StorageIOError
from bookie.storage.journal import Journal, JournalDamage, JournalSettings, LogMark, replay_records

from tests.support.raw_client import entry


async def _write_groups(directory: Path, groups: list[list[bytes]]) -> Path:
    journal = Journal(directory, JournalSettings(max_group_wait_s=0))
    journal.start()
    try:
        for group in groups:
            await asyncio.gather(*(journal.append(body) for body in group))
    finally:
        await asyncio.to_thread(journal.close)
    (path,) = sorted((directory / "current").glob("*.txn"))
    return path


def _replayed(directory: Path) -> list[tuple[int, int]]:
    return [(r.ledger_id, r.entry_id) for _, r in replay_records(directory, LogMark(0, 0))]


async def test_intact_journal_replays_every_record(tmp_path: Path) -> None:
    await _write_groups(tmp_path, [[entry(1, i, b"a" * 100)] for i in range(5)])
    assert _replayed(tmp_path) == [(1, i) for i in range(5)]


async def test_group_with_damaged_bytes_ends_the_replay(tmp_path: Path) -> None:
    path = await _write_groups(tmp_path, [[entry(1, i, b"a" * 1000)] for i in range(3)])
    data = bytearray(path.read_bytes())
    records = list(jf.iter_journal(data))
    last = records[-1]
    data[last.end - 10] ^= 0xFF  # a torn page inside the last group's entry
    path.write_bytes(bytes(data))
    assert _replayed(tmp_path) == [(1, 0), (1, 1)]


async def test_group_missing_its_trailer_is_not_replayed(tmp_path: Path) -> None:
    path = await _write_groups(tmp_path, [[entry(1, 0, b"a")], [entry(1, 1, b"b")]])
    data = bytearray(path.read_bytes())
    records = list(jf.iter_journal(data))
    # Zero everything after the second record: as if the crash came before its trailer reached the disk.
    data[records[-1].end:] = bytes(len(data) - records[-1].end)
    path.write_bytes(bytes(data))
    assert _replayed(tmp_path) == [(1, 0)]


def test_journal_without_group_checksums_is_read_as_bookkeeper_writes_it() -> None:
    data = bytearray(jf.encode_header(jf.FORMAT_V6, group_checksums=False))
    for i in range(3):
        data += jf.frame(entry(7, i, b"z"))
    data += jf.padding(len(data), 512)
    data += bytes(512)
    assert [(r.ledger_id, r.entry_id) for r in jf.iter_journal(data)] == [(7, 0), (7, 1), (7, 2)]


async def test_damaged_group_followed_by_a_valid_one_is_an_error_naming_file_and_offset(tmp_path: Path) -> None:
    path = await _write_groups(tmp_path, [[entry(1, i, b"a" * 1000)] for i in range(3)])
    data = bytearray(path.read_bytes())
    middle = list(jf.iter_journal(data))[1]
    data[middle.end - 10] ^= 0xFF  # acknowledged group 2 damaged, group 3 intact after it
    path.write_bytes(bytes(data))
    with pytest.raises(StorageIOError) as raised:
        _replayed(tmp_path)
    message = str(raised.value)
    assert path.name in message and f"offset {middle.offset}" in message, message
    assert "followed by a valid one" in message


async def test_replay_past_a_damaged_group_records_it_and_replays_the_groups_after_it(tmp_path: Path) -> None:
    path = await _write_groups(tmp_path, [[entry(1, i, b"a" * 1000)] for i in range(4)])
    data = bytearray(path.read_bytes())
    second = list(jf.iter_journal(data))[1]
    data[second.end - 10] ^= 0xFF
    path.write_bytes(bytes(data))
    damages: list[JournalDamage] = []
    replayed = [(r.ledger_id, r.entry_id) for _, r in replay_records(tmp_path, LogMark(0, 0), damages)]
    assert replayed == [(1, 0), (1, 2), (1, 3)]
    [damage] = damages
    assert damage.file == str(path) and damage.offset <= second.offset, damage


async def test_zeros_where_a_group_should_start_are_damage_when_a_valid_group_follows(tmp_path: Path) -> None:
    path = await _write_groups(tmp_path, [[entry(1, i, b"a" * 1000)] for i in range(3)])
    data = bytearray(path.read_bytes())
    records = list(jf.iter_journal(data))
    data[records[1].offset:records[1].offset + 600] = bytes(600)  # a lost page: the group's start is zeros
    path.write_bytes(bytes(data))
    damages: list[JournalDamage] = []
    replayed = [(r.ledger_id, r.entry_id) for _, r in replay_records(tmp_path, LogMark(0, 0), damages)]
    assert replayed == [(1, 0), (1, 2)] and len(damages) == 1, (replayed, damages)
    assert "zeros" in damages[0].reason
