"""Transactional compaction (``useTransactionalCompaction=true``) under SIGKILL, at random points and at each
commit step: after restart every live entry reads back, no ``.compacting``/``.compacted`` file is left, and
once GC has run, every live entry is stored exactly once and each log's accounted live bytes match what the
file holds."""

from __future__ import annotations

import random

import pytest
from bookie.client import BookKeeper
from bookie_fleet.local_bookies import LocalBookie

from tests.gc.gcutil import (
    client,
    compaction_overrides,
    crash_at,
    entries_on_disk,
    explain,
    gc_now,
    kill_during_gc,
    leftovers,
    read_all,
    write_live_and_dead,
)
from tests.support.bookies import BookieFactory

RANDOM_RUNS = 10
STEPS = ("before-commit", "after-commit", "after-relocate")


async def _check_after_restart(bookie: LocalBookie, bk: BookKeeper, live: dict[int, list[bytes]]) -> None:
    assert leftovers(bookie) == [], "recovery at start removes or finishes every compaction file"
    for lid, payloads in live.items():
        assert await read_all(bk, lid) == payloads, f"ledger {lid} lost or changed"


@pytest.mark.slow
async def test_sigkill_during_compaction_loses_and_duplicates_nothing(bookie_factory: BookieFactory) -> None:
    # Throttled so a compaction lasts about a second and random kills land inside it.
    # Short ZooKeeper sessions: a killed bookie's registration expires fast, so restarts are quick.
    cluster = bookie_factory(1, **compaction_overrides(True, compactionRateByEntries=80, zkTimeout=2000))
    bookie = cluster[0]
    rnd = random.Random(4242)
    live: dict[int, list[bytes]] = {}
    dead: set[int] = set()
    runs = [*STEPS, *["random"] * RANDOM_RUNS]
    for i, run in enumerate(runs):
        async with client(cluster) as bk:  # a fresh client: the previous one saw its bookie die
            await write_live_and_dead(bk, bookie, live, dead, seed=i * 10)
        if run == "random":
            await kill_during_gc(bookie, rnd)
        else:
            await crash_at(bookie, run)
        bookie.start()
        async with client(cluster) as bk:
            await _check_after_restart(bookie, bk, live)

    await gc_now(bookie)
    await gc_now(bookie)  # the second cycle unlinks logs the first one retired
    await _check_exactly_once(bookie, live)


async def _check_exactly_once(bookie: LocalBookie, live: dict[int, list[bytes]]) -> None:
    on_disk = entries_on_disk(bookie)
    for lid, payloads in live.items():
        for eid, payload in enumerate(payloads):
            copies = on_disk.get((lid, eid), [])
            assert len(copies) == 1, f"ledger {lid} entry {eid} stored {len(copies)} times"
            assert copies[0][1].endswith(payload)
    report = await explain(bookie)
    for entry in report["ledgerDirs"][0]["entryLogs"]:
        log_id = int(entry["logId"], 16)
        held = sum(len(body) + 4 for (lid, _), copies in on_disk.items() if lid in live
                   for where, body in copies if where == log_id)
        assert entry["remainingBytes"] == held, f"log {entry['logId']}: accounted live bytes match the file"
