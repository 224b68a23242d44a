"""SIGKILL at random points of a compaction (and at each of its commit steps): after restart every live entry
reads back, no ``.compacting``/``.compacted`` file is left, and once GC has run, every live entry is stored
exactly once and each log's accounted live bytes match what the file holds."""

from __future__ import annotations

import asyncio
import os
import random

import pytest
from bookie.client import BookKeeper
from bookie.gc.compactor import CRASH_ENV
from bookie_fleet.local_bookies import LocalBookie

from tests.gc.gcutil import (
    GC_OVERRIDES,
    client,
    entries_on_disk,
    explain,
    gc_now,
    leftovers,
    read_all,
    rest,
    write_ledger,
)
from tests.support.bookies import BookieFactory

ENTRY = 8 * 1024
RANDOM_RUNS = 10
STEPS = ("before-commit", "after-commit", "after-relocate")


async def _write_group(bk: BookKeeper, live: dict[int, list[bytes]], dead: set[int], seed: int) -> None:
    """A live and a dead ledger interleaved in the same logs (more than one log's worth)."""
    lid, payloads = await write_ledger(bk, 60, ENTRY, seed)
    live[lid] = payloads
    gone, _ = await write_ledger(bk, 110, ENTRY, seed + 1)
    await bk.delete_ledger(gone)
    dead.add(gone)
    await asyncio.sleep(1.2)  # past a checkpoint: nothing left to replay, so replay adds no copies


async def _check_after_restart(bookie: LocalBookie, bk: BookKeeper, live: dict[int, list[bytes]]) -> None:
    assert leftovers(bookie) == [], "recovery at start removes or finishes every compaction file"
    for lid, payloads in live.items():
        assert await read_all(bk, lid) == payloads, f"ledger {lid} lost or changed"


async def _kill_during_gc(bookie: LocalBookie, rnd: random.Random) -> None:
    await rest("PUT", f"{bookie.http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
    await asyncio.sleep(rnd.uniform(0.0, 1.0))
    bookie.kill()
    bookie.start()


async def _crash_at_step(bookie: LocalBookie, step: str) -> None:
    bookie.kill()
    os.environ[CRASH_ENV] = step
    try:
        bookie.start()
    finally:
        del os.environ[CRASH_ENV]
    await rest("PUT", f"{bookie.http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
    assert bookie.proc is not None
    await asyncio.to_thread(bookie.proc.wait, 60)
    bookie.proc = None
    bookie.start()


@pytest.mark.slow
async def test_sigkill_during_compaction_loses_and_duplicates_nothing(bookie_factory: BookieFactory) -> None:
    # Throttled so a compaction lasts about a second and random kills land inside it.
    # Short ZooKeeper sessions: a killed bookie's registration expires fast, so restarts are quick.
    cluster = bookie_factory(1, **{**GC_OVERRIDES, "compactionRateByEntries": 80, "zkTimeout": 2000})
    bookie = cluster[0]
    rnd = random.Random(4242)
    live: dict[int, list[bytes]] = {}
    dead: set[int] = set()
    runs = [*STEPS, *["random"] * RANDOM_RUNS]
    for i, run in enumerate(runs):
        async with client(cluster) as bk:  # a fresh client: the previous one saw its bookie die
            await _write_group(bk, live, dead, seed=i * 10)
        if run == "random":
            await _kill_during_gc(bookie, rnd)
        else:
            await _crash_at_step(bookie, run)
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
