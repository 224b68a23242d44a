"""Journal group commit: records queued while a group is open are written and synced together, in order, each
waiter told once its record is durable; journalFlushWhenQueueEmpty commits as soon as
the queue is drained instead of waiting out journalMaxGroupWaitMSec; barriers force a sync."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bookie.storage.journal import Journal, JournalSettings, LogMark, replay_records

from tests.support.raw_client import entry


def _replayed(directory: Path) -> list[tuple[int, int]]:
    return [(r.ledger_id, r.entry_id) for _, r in replay_records(directory, LogMark(0, 0))]


async def test_every_record_of_a_burst_is_durable_in_order_and_told_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path, JournalSettings(max_group_wait_s=0.002))
    journal.start()
    try:
        futures = [journal.append(entry(1, i, b"f" * 200)) for i in range(500)]
        await asyncio.gather(*futures)
    finally:
        await asyncio.to_thread(journal.close)
    assert all(f.result() is None for f in futures)
    assert _replayed(tmp_path) == [(1, i) for i in range(500)], "in the order appended"
    assert journal.syncs < 500  # grouped: fewer syncs than records


async def test_flush_when_queue_empty_does_not_wait_out_the_group_time(tmp_path: Path) -> None:
    journal = Journal(tmp_path, JournalSettings(max_group_wait_s=3600, flush_when_queue_empty=True))
    journal.start()
    try:
        await asyncio.wait_for(journal.append(entry(2, 0, b"x")), 60)  # not an hour
    finally:
        await asyncio.to_thread(journal.close)
    assert _replayed(tmp_path) == [(2, 0)]


async def test_a_barrier_syncs_even_without_sync_data(tmp_path: Path) -> None:
    journal = Journal(tmp_path, JournalSettings(max_group_wait_s=0, sync_data=False))
    journal.start()
    try:
        await journal.append(entry(3, 0, b"y"))
        assert journal.syncs == 0
        await journal.barrier()
        assert journal.syncs == 1
    finally:
        await asyncio.to_thread(journal.close)
