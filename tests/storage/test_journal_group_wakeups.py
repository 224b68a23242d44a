"""While a group commit is open, the journal writer wakes about once for a slow stream of records, not once per
record or per poll slice: it sleeps out the group's time unless the records come fast enough to reach
journalBufferedWritesThreshold or journalBufferedEntriesThreshold first, and then it closes the group about
when they do. Real journal files; counts (the writer's own count of its wake-ups), not times."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bookie.storage.journal import Journal, JournalSettings

from tests.support.raw_client import entry

GROUP_WAIT_S = 0.02


async def _trickle(journal: Journal, records: int, every_s: float) -> None:
    pending = []
    for i in range(records):
        pending.append(journal.append(entry(7, i, b"t" * 100)))
        await asyncio.sleep(every_s)
    await asyncio.gather(*pending)


async def test_a_slow_stream_wakes_the_writer_a_few_times_per_group(tmp_path: Path) -> None:
    journal = Journal(tmp_path, JournalSettings(max_group_wait_s=GROUP_WAIT_S))
    journal.start()
    try:
        await _trickle(journal, 100, 0.002)    # ~10 records per group, far below the thresholds
    finally:
        await asyncio.to_thread(journal.close)
    groups = journal.syncs
    assert 0 < groups < 100
    # Polling in 0.25 ms slices would wake it ~80 times per 20 ms group; a wake-up per record ~10 times.
    assert journal.writer.wakeups <= 4 * groups, (journal.writer.wakeups, groups)


async def test_a_stream_reaching_the_entries_threshold_closes_the_group_early(tmp_path: Path) -> None:
    journal = Journal(tmp_path, JournalSettings(max_group_wait_s=3600, buffered_entries_threshold=20))
    journal.start()
    pending = []
    try:
        for i in range(3000):   # a record a millisecond until three groups have closed (not after an hour)
            pending.append(journal.append(entry(7, i, b"t" * 100)))
            await asyncio.sleep(0.001)
            if journal.syncs >= 3:
                break
        closed_on_their_own = journal.syncs
    finally:
        await asyncio.to_thread(journal.close)   # writes the open group's records
    assert closed_on_their_own >= 3
    await asyncio.wait_for(asyncio.gather(*pending), 60)
