"""A bookie whose wall clock is stepped while it works, an hour back, then a day forward, then an hour back again (an
NTP step, a virtual machine restored from a snapshot), loses nothing: no append fails, nothing acknowledged is
lost, it stays registered by the same ZooKeeper session throughout, and restarted while its clock is an hour behind
the one it last wrote with, it replays its journal, serves alone every entry it was asked to store and
acknowledges the adds of a new ledger.

Its scheduled compaction is measured in each phase too (on time, an hour back, a day forward): minor compaction
every ``MINOR_INTERVAL_S`` s (``minorCompactionInterval``), a GC cycle every second (``gcWaitTime``), major
compaction off; the victim's ``MINOR_COMPACTION_TOTAL`` counter (the same name in both implementations) is read
from its ``/metrics`` at the start and the end of a ``WINDOW_S`` window. Ours keeps its interval in every phase
(it measures intervals on the monotonic clock: docs/gc.md), which the test asserts. Apache BookKeeper's
``GarbageCollectorThread`` compares wall-clock readings (``System.currentTimeMillis()`` against its last minor
compaction's), so an hour back stops its compaction for an hour; what it did is printed, not asserted.

The clock is stepped by a preload of ours (``tests/support/faults.py``, ``WallClock``): only the victim's wall
clock moves; its monotonic clocks, ZooKeeper's and the clients' clocks stay true. The victim is a seeded bookie
of three, every ledger is 3/3/2 so each entry reaches it. Soak runs raise the rounds with
``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper, LedgerHandle

from tests.support.faults import SessionExpiry, WallClock
from tests.support.history import History
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import (
    JAVA_METRICS,
    METRICS_CONF,
    append_batches,
    asked_of,
    read_from,
    victim_metrics,
    victims_own_violations,
    wait_writable,
)

MINOR_INTERVAL_S = 2
WINDOW_S = 8.0  # a phase's compaction window: four intervals (3 or 4 compactions when kept; 0 when held off)
KEPT_SCHEDULE = 1  # minor compactions a window must hold when the schedule is kept: a count a busy machine cannot miss
HOUR, DAY = 3600, 86400
CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                        "flushInterval": 1000, "gcWaitTime": 1000, "minorCompactionInterval": MINOR_INTERVAL_S,
                        "majorCompactionInterval": 0, **METRICS_CONF,
                        "diskUsageThreshold": 0.999, "diskUsageWarnThreshold": 0.998}
ROUNDS = {"python": 1, "java": 1}
PHASES = [("on time", 0), ("an hour back", -HOUR), ("a day forward", DAY)]
ENTRIES_PER_PHASE = 40
CHECK_ENTRIES = 10
IN_FLIGHT = 8
WHY = "a wall clock's step changes nothing a client waits for"
_MINOR = re.compile(r"^(?:bookie_)?MINOR_COMPACTION_TOTAL(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_bookie_whose_wall_clock_steps_loses_nothing_and_keeps_its_schedule(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random,
        tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **CONF,
                                      **(JAVA_METRICS if bookie_kind == "java" else {}))
    history = History()
    seen = []
    with SessionExpiry(cluster.zk_connect, cluster.ledgers_root) as observer:
        for number in range(rounds(ROUNDS[bookie_kind])):
            victim = seeded_rng.choice(cluster.bookies)
            clock = WallClock(victim, tmp_path / f"clock-{number}")
            await asyncio.to_thread(victim.stop)
            await asyncio.to_thread(clock.start)
            seen.append(await _round(cluster, victim, clock, observer, history, seeded_rng,
                                     f"{bookie_kind}-{number}"))
            await asyncio.to_thread(victim.restart)  # its clock true again for the next round
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    victims_own_violations(history, tolerated=False)
    print(f"{len(history)} operations, 0 violations; " + "; ".join(seen))


async def _round(cluster: BookieCluster, victim: Any, clock: WallClock, observer: SessionExpiry, history: History,
                 rng: random.Random, name: str) -> str:
    payloads = random.Random(rng.getrandbits(64))
    compactions: dict[str, int] = {}
    async with BookKeeper(cluster.client_config()) as bk:
        await wait_writable(bk, victim, name)
        registered = await asyncio.to_thread(observer.registration, victim.bookie_id)
        assert registered is not None, f"{name}: {victim.bookie_id} is not registered"
        handle = await bk.create_ledger(3, 3, 2)
        writer = Recorder(history, f"writer-{name}")
        for phase, offset in PHASES:
            await asyncio.to_thread(clock.step, offset)
            await append_batches(writer, handle, payloads, ENTRIES_PER_PHASE, name, IN_FLIGHT, WHY)
            compactions[phase] = await _minor_compactions_within(victim, WINDOW_S)
            now = await asyncio.to_thread(observer.registration, victim.bookie_id)
            assert now == registered, (f"{name}: {victim.bookie_id}'s registration changed with its clock "
                                       f"{phase}: {registered} then {now}; log:\n{victim.tail_log()}")
        assert await writer.close(handle), f"{name}: the writer could not close its ledger"
    assert victim.running, f"{name}: {victim.bookie_id} stopped while its clock stepped; log:\n{victim.tail_log()}"
    if cluster.kind == "python":
        kept = {phase: count for phase, count in compactions.items() if count < KEPT_SCHEDULE}
        assert not kept, (f"{name}: our minor compaction (every {MINOR_INTERVAL_S} s) ran fewer than "
                          f"{KEPT_SCHEDULE} time(s) in {WINDOW_S:.0f} s in these phases: {kept}")
    # Restarted an hour behind the clock it last wrote its journal and entry logs with.
    await asyncio.to_thread(victim.stop)
    await asyncio.to_thread(clock.step, -HOUR)
    await asyncio.to_thread(clock.start)
    await read_from(victim, handle.ledger_id, asked_of(handle, victim.bookie_id), history,
                    f"victim-reader-{name}")
    await _takes_adds(cluster, victim, history, payloads, name)
    return (f"{victim.bookie_id} entered minor compaction (every {MINOR_INTERVAL_S} s) "
            + ", ".join(f"{count} times in {WINDOW_S:.0f} s {phase}" for phase, count in compactions.items())
            + "; restarted an hour behind, served all it stored")


async def _minor_compactions_within(victim: Any, window_s: float) -> int:
    before = await _minor_compactions(victim)
    await asyncio.sleep(window_s)
    return await _minor_compactions(victim) - before


async def _minor_compactions(victim: Any) -> int:
    """The victim's MINOR_COMPACTION_TOTAL, summed over its ledger directories."""
    text = await victim_metrics(victim)
    values = _MINOR.findall(text)
    assert values, f"{victim.bookie_id}'s /metrics has no MINOR_COMPACTION_TOTAL:\n{text[:3000]}"
    return int(sum(float(v) for v in values))


async def _takes_adds(cluster: BookieCluster, victim: Any, history: History, payloads: random.Random,
                      name: str) -> None:
    """A new 3/3/3 ledger, so every add needs the victim's acknowledgement."""
    async with BookKeeper(cluster.client_config()) as bk:
        await wait_writable(bk, victim, name)
        handle: LedgerHandle = await bk.create_ledger(3, 3, 3)
        checker = Recorder(history, f"after-restart-{name}")
        await append_batches(checker, handle, payloads, CHECK_ENTRIES, name, IN_FLIGHT,
                             "the victim restarted and registered")
        assert await checker.close(handle), f"{name}: the ledger on the restarted victim could not be closed"
