"""A bookie whose journal device turns slow, each sync taking a seeded 100 to 400 ms longer for a while (a worn disk,
a congested network volume), only slows its adds: none fails, nothing acknowledged is lost, the writer keeps the
bookie (the delay is far below the 5 s add timeout), and the bookie's own journal sync latency, as its ``/metrics``
reports it (``bookie_journal_JOURNAL_SYNC``, the same summary in both implementations, in milliseconds), shows the
slowness: the figure an operator's dashboard and alerts read.

The slow device is the preload of ``tests/support/faults.py``'s ``DeviceFault`` in its ``slow`` mode
(tests/support/eio_under.c): on files under the victim's journal directory only, each ``fsync`` and ``fdatasync``
is delayed while the fault is on, then made. The victim is a seeded bookie of three, its journal syncing every
group, as deployed; each round's ledger is 3/3/3, so every add waits for the victim's journal. Each round: a seeded
20 to 60 entries acknowledged, the device turns slow while ``DURING`` more are appended, then it recovers and
``AFTER`` more are appended; the writer closes the ledger. The victim's log must show the slowed syncs, the
ledger keep its one ensemble, and the victim's ``JOURNAL_SYNC`` summary, read before and after the slow stretch,
count syncs in it whose mean is at least half the delay (a sync in flight when the device turned slow may be
counted undelayed). A new client reads every ledger back at the end and the history checker judges it. Soak runs
raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper

from tests.support.faults import DeviceFault
from tests.support.history import History
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import (
    JAVA_METRICS,
    METRICS_CONF,
    VICTIM_CONF,
    append_batches,
    slowed_in_log,
    successful_totals,
    victims_own_violations,
    wait_writable,
)

CONF: dict[str, Any] = {**VICTIM_CONF, "journalSyncData": True, "flushInterval": 1000,
                        **METRICS_CONF}
ROUNDS = {"python": 2, "java": 2}
DELAY_MS = (100, 400)
BEFORE = (20, 60)
DURING = 48
AFTER = 24
IN_FLIGHT = 8
WHY = "a slow journal only delays the adds, far less than the add timeout"


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_slow_journal_device_slows_the_adds_loses_nothing_and_shows_in_the_sync_latency(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random,
        tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **CONF,
                                      **(JAVA_METRICS if bookie_kind == "java" else {}))
    victim = seeded_rng.choice(cluster.bookies)
    await asyncio.to_thread(victim.stop)
    delay_ms = seeded_rng.randint(*DELAY_MS)
    fault = DeviceFault(victim, victim.journal_dir, tmp_path, ["fsync", "fdatasync"], mode="slow",
                        delay_ms=delay_ms)
    await asyncio.to_thread(fault.start)
    history = History()
    seen = [await _round(cluster, victim, fault, history, seeded_rng, f"{bookie_kind}-{number}")
            for number in range(rounds(ROUNDS[bookie_kind]))]
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    victims_own_violations(history, tolerated=False)
    print(f"{len(history)} operations, 0 violations; {victim.bookie_id}'s journal syncs slowed by {delay_ms} ms: "
          + "; ".join(seen))


async def _round(cluster: BookieCluster, victim: Any, fault: DeviceFault, history: History, rng: random.Random,
                 name: str) -> str:
    payloads = random.Random(rng.getrandbits(64))
    assert fault.delay_ms is not None
    log_before = victim.log_path.stat().st_size
    async with BookKeeper(cluster.client_config()) as bk:
        await wait_writable(bk, victim, name)
        handle = await bk.create_ledger(3, 3, 3)
        writer = Recorder(history, f"writer-{name}")
        await append_batches(writer, handle, payloads, rng.randint(*BEFORE), name, IN_FLIGHT, WHY)
        fault.fail()
        try:
            syncs_before = await successful_totals(victim, "bookie_journal_JOURNAL_SYNC")
            await append_batches(writer, handle, payloads, DURING, name, IN_FLIGHT, WHY)
            syncs_after = await successful_totals(victim, "bookie_journal_JOURNAL_SYNC")
        finally:
            fault.lift()
        await append_batches(writer, handle, payloads, AFTER, name, IN_FLIGHT, WHY)
        assert await writer.close(handle), f"{name}: the writer could not close its ledger"
    assert victim.running, f"{name}: {victim.bookie_id} stopped on a slow journal; log:\n{victim.tail_log()}"
    assert len(handle.metadata.ensembles) == 1, \
        f"{name}: the writer replaced a bookie on a slow journal: {handle.metadata.ensembles}"
    slowed = slowed_in_log(victim, log_before)
    assert slowed > 0, f"{name}: no sync of {victim.bookie_id}'s journal was slowed; log:\n{victim.tail_log()}"
    count = int(syncs_after[1] - syncs_before[1])
    assert count > 0, f"{name}: {victim.bookie_id}'s JOURNAL_SYNC counted no sync while {DURING} adds waited on it"
    mean_ms = (syncs_after[0] - syncs_before[0]) / count
    assert mean_ms >= fault.delay_ms / 2, (
        f"{name}: {victim.bookie_id}'s JOURNAL_SYNC says {mean_ms:.1f} ms a sync over {count} syncs, while each "
        f"took {fault.delay_ms} ms longer: the metric does not show a slow journal")
    return f"{slowed} syncs slowed, {count} counted at {mean_ms:.0f} ms each"
