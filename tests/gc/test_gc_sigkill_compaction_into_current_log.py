"""Non-transactional compaction (``useTransactionalCompaction=false``: live entries copied into the current entry
log, BookKeeper's EntryLogCompactor) under SIGKILL.

Killed after the copies are written but before the index update: the old log is still there and the index
still points at it; the copies are referenced by nothing. Killed after the index update: the index points
at the copies and the old log is still there. Either way, and at random moments of a compaction, no live
entry is lost: each is indexed exactly once, at a record holding it, and reads back after restart. A later
GC deletes the old logs, and once the ledgers are deleted no copy of them is left on disk."""

from __future__ import annotations

import random

import pytest
from bookie.storage import entrylog_format as ef
from bookie_fleet.local_bookies import LocalBookie

from tests.gc.gcutil import (
    client,
    compaction_overrides,
    crash_at,
    gc_now,
    indexed_locations,
    kill_during_gc,
    log_sizes,
    read_all,
    records_at,
    write_live_and_dead,
)
from tests.support.bookies import BookieFactory

RANDOM_RUNS = 2
STEPS = ("before-relocate", "after-relocate")

Key = tuple[int, int]


def _check_index(bookie: LocalBookie, live: dict[int, list[bytes]]) -> dict[Key, int]:
    """Bookie stopped: every live entry is indexed at a record holding exactly that entry."""
    index = indexed_locations(bookie)
    records = records_at(bookie)
    for lid, payloads in live.items():
        for eid, payload in enumerate(payloads):
            location = index.get((lid, eid))
            assert location is not None, f"ledger {lid} entry {eid} is not indexed"
            assert location in records, f"ledger {lid} entry {eid} indexed where no record is: {location:x}"
            found_lid, found_eid, body = records[location]
            assert (found_lid, found_eid) == (lid, eid) and body.endswith(payload), f"ledger {lid} entry {eid}"
    return index


def _fresh_copies(bookie: LocalBookie, live: dict[int, list[bytes]]) -> dict[Key, int]:
    """Live entries with a copy in the newest log (where the killed compaction appended) and another one
    elsewhere: (ledger, entry) -> location of the copy in the newest log."""
    newest = max(log_sizes(bookie))
    where: dict[Key, list[int]] = {}
    for location, (lid, eid, _) in records_at(bookie).items():
        if lid in live:
            where.setdefault((lid, eid), []).append(location)
    out = {}
    for key, locations in where.items():
        in_newest = [loc for loc in locations if ef.split_location(loc)[0] == newest]
        if in_newest and len(locations) > 1:
            out[key] = in_newest[0]
    return out


@pytest.mark.slow
async def test_sigkill_during_compaction_into_current_log_loses_nothing(bookie_factory: BookieFactory) -> None:
    # Throttled so a compaction lasts about a second and random kills land inside it; short ZooKeeper
    # sessions so a killed bookie's registration expires fast and restarts are quick.
    cluster = bookie_factory(1, **compaction_overrides(False, compactionRateByEntries=80, zkTimeout=2000))
    bookie = cluster[0]
    rnd = random.Random(4243)
    live: dict[int, list[bytes]] = {}
    dead: set[int] = set()
    old_logs: set[int] = set()
    for i, run in enumerate([*STEPS, *["random"] * RANDOM_RUNS]):
        async with client(cluster) as bk:  # a fresh client: the previous one saw its bookie die
            await write_live_and_dead(bk, bookie, live, dead, seed=i * 10)
        if run == "random":
            await kill_during_gc(bookie, rnd)
        else:
            await crash_at(bookie, run)
        index = _check_index(bookie, live)
        fresh = _fresh_copies(bookie, live)
        if run == "before-relocate":
            assert fresh, "killed after copying live entries into the current log"
            for key, copy in fresh.items():
                assert index[key] != copy, f"{key}: the index still points at the old copy, not the new one"
            old_logs = {ef.split_location(index[key])[0] for key in fresh}
            assert old_logs <= set(log_sizes(bookie)), "the old logs are still there"
        elif run == "after-relocate":
            assert fresh, "killed after copying live entries into the current log"
            for key, copy in fresh.items():
                assert index[key] == copy, f"{key}: the index points at the copy; the old one is still on disk"
        bookie.start()
        async with client(cluster) as bk:
            for lid, payloads in live.items():
                assert await read_all(bk, lid) == payloads, f"ledger {lid} lost or changed"

    await gc_now(bookie)
    await gc_now(bookie)  # the second cycle unlinks logs the first one retired
    bookie.stop()
    _check_index(bookie, live)
    assert not old_logs & set(log_sizes(bookie)), "a later GC compacted the old logs again and deleted them"

    bookie.start()
    async with client(cluster) as bk:
        for lid in live:
            await bk.delete_ledger(lid)
    await gc_now(bookie)
    await gc_now(bookie)
    bookie.stop()
    ours = live.keys() | dead
    left = sorted({lid for lid, _, _ in records_at(bookie).values() if lid in ours})
    assert left == [], f"copies, garbage ones included, go with their ledgers; still on disk: {left}"
