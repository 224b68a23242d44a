"""A bookie whose ledger device turns slow, each sync taking a seeded 100 to 400 ms longer for a while, only slows
its checkpoints: its adds are acknowledged by the journal, on another device, so none fails, nothing acknowledged
is lost, the writer keeps the bookie, and the bookie's own flush latency, as its ``/metrics`` reports it
(``bookie_flush``, the summary of each write-cache flush to the entry logs and indexes, the same family in both
implementations, in milliseconds), shows the slowness: the figure that tells an operator the ledger device, not
the journal, is what is slow.

The slow device is the preload of ``tests/support/faults.py``'s ``DeviceFault`` in its ``slow`` mode
(tests/support/eio_under.c): on files under the victim's ledger directory only (its entry logs and both RocksDB
indexes), each ``fsync`` and ``fdatasync`` is delayed while the fault is on, then made. The victim is a seeded
bookie of three; each round's ledger is 3/3/3, so every add reaches it. Each round: a seeded 20 to 60 entries
acknowledged, the device turns slow and appends go on until the victim has flushed ``FLUSHES`` write caches
(checkpoints every ``flushInterval``), then it recovers and ``AFTER`` more are appended; the writer closes the
ledger. The victim's log must show the slowed syncs, the ledger keep its one ensemble, and the victim's
``bookie_flush`` summary, read before and after the slow stretch, count flushes in it whose mean is at least half
the delay (each flush syncs its entry log at least once; one in flight when the device turned slow may be counted
partly undelayed). A new client reads every ledger back at the end and the history checker judges it. Soak runs
raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import time
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

CONF: dict[str, Any] = {**VICTIM_CONF, "flushInterval": 1000, **METRICS_CONF}
ROUNDS = {"python": 1, "java": 1}
DELAY_MS = (100, 400)
BEFORE = (20, 60)
FLUSHES = 2  # write caches the victim flushes on the slow device each round
SLOW_FOR_AT_MOST = 60.0  # s of appends waiting for those flushes
AFTER = 24
IN_FLIGHT = 8
WHY = "a slow ledger device only delays the checkpoints; the journal acknowledges the adds"


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_slow_ledger_device_slows_the_checkpoints_loses_nothing_and_shows_in_the_flush_latency(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random,
        tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **CONF,
                                      **(JAVA_METRICS if bookie_kind == "java" else {}))
    victim = seeded_rng.choice(cluster.bookies)
    await asyncio.to_thread(victim.stop)
    delay_ms = seeded_rng.randint(*DELAY_MS)
    fault = DeviceFault(victim, victim.ledger_dir, tmp_path, ["fsync", "fdatasync"], mode="slow",
                        delay_ms=delay_ms)
    await asyncio.to_thread(fault.start)
    history = History()
    seen = [await _round(cluster, victim, fault, history, seeded_rng, f"{bookie_kind}-{number}")
            for number in range(rounds(ROUNDS[bookie_kind]))]
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    victims_own_violations(history, tolerated=False)
    print(f"{len(history)} operations, 0 violations; {victim.bookie_id}'s ledger device syncs slowed by "
          f"{delay_ms} ms: " + "; ".join(seen))


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
            flushes_before = await successful_totals(victim, "bookie_flush")
            flushes_after, slow_appends = await _append_until_flushed(writer, handle, payloads, victim, name,
                                                                      flushes_before[1] + FLUSHES)
        finally:
            fault.lift()
        await append_batches(writer, handle, payloads, AFTER, name, IN_FLIGHT, WHY)
        assert await writer.close(handle), f"{name}: the writer could not close its ledger"
    assert victim.running, f"{name}: {victim.bookie_id} stopped on a slow ledger device; log:\n{victim.tail_log()}"
    assert len(handle.metadata.ensembles) == 1, \
        f"{name}: the writer replaced a bookie on a slow ledger device: {handle.metadata.ensembles}"
    slowed = slowed_in_log(victim, log_before)
    assert slowed > 0, f"{name}: no sync on {victim.bookie_id}'s ledger device was slowed; log:\n{victim.tail_log()}"
    count = int(flushes_after[1] - flushes_before[1])
    mean_ms = (flushes_after[0] - flushes_before[0]) / count
    assert mean_ms >= fault.delay_ms / 2, (
        f"{name}: {victim.bookie_id}'s bookie_flush says {mean_ms:.1f} ms a flush over {count} flushes, while each "
        f"sync on its ledger device took {fault.delay_ms} ms longer: the metric does not show a slow ledger device")
    return (f"{slow_appends} appends while slow, {slowed} syncs slowed, {count} flushes counted at {mean_ms:.0f} ms "
            "each")


async def _append_until_flushed(writer: Recorder, handle: Any, payloads: random.Random, victim: Any, name: str,
                                flushes: float) -> tuple[tuple[float, float], int]:
    """Append, ``IN_FLIGHT`` at a time, until the victim has counted ``flushes`` successful flushes (each
    checkpoint flushes what the appends put in its write cache); the last reading, and how many appends."""
    deadline, appended = time.monotonic() + SLOW_FOR_AT_MOST, 0
    while (reading := await successful_totals(victim, "bookie_flush"))[1] < flushes:
        assert time.monotonic() < deadline, (
            f"{name}: {victim.bookie_id} flushed {reading[1]:.0f} write caches of the {flushes:.0f} awaited in "
            f"{SLOW_FOR_AT_MOST:.0f} s of appends on a slow ledger device; log:\n{victim.tail_log()}")
        await append_batches(writer, handle, payloads, IN_FLIGHT, name, IN_FLIGHT, WHY)
        appended += IN_FLIGHT
        await asyncio.sleep(0.2)
    return reading, appended
