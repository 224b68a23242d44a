"""The slow-device scenario of tests/faults/ (a journal or a ledger device whose syncs turn slow for a while), run
on a cluster of either implementation; each scenario's file says which device, how long the slow stretch lasts
and which summary of the victim's ``/metrics`` must show the delay.

``SlowDevice``: which directory of the victim is slowed, what is appended while it is slow (``during``: appends
until the stretch has what the figure needs, returning how many), and the summary family read before and after.
``run_slow_device_scenario(...)``: three bookies, a seeded victim restarted under the preload of
``tests/support/faults.py``'s ``DeviceFault`` in its ``slow`` mode, seeded rounds of a 3/3/3 ledger (appends
before, during and after the slow stretch, none of which may fail), the victim never replaced, its log showing
the slowed calls and its summary counting events in the stretch; then every ledger read back by a new client,
judged by the history checker. Each round's ``SlowStretch`` says whether the summary showed the delay (a mean of at
least half of it), which the scenario asserts.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper, LedgerHandle

from tests.support.faults import DeviceFault
from tests.support.history import History
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import (
    JAVA_METRICS,
    append_batches,
    slowed_in_log,
    successful_totals,
    victims_own_violations,
    wait_writable,
)

DELAY_MS = (100, 400)
BEFORE = (20, 60)
AFTER = 24
IN_FLIGHT = 8

# What is appended while the device is slow: (writer, handle, payloads, victim, round name) -> appends made.
During = Callable[[Recorder, LedgerHandle, random.Random, Any, str], Awaitable[int]]


@dataclass(frozen=True)
class SlowStretch:
    """What one round saw while the device was slow: the victim's summary over the stretch, and the delay."""

    name: str
    family: str
    delay_ms: int
    appended: int
    slowed: int          # calls the preload delayed, by the victim's log
    counted: int         # events the summary counted in the stretch
    mean_ms: float       # their mean

    @property
    def shows_the_delay(self) -> bool:
        """At least half the delay a sync: one in flight when the device turned slow may be counted undelayed."""
        return self.mean_ms >= self.delay_ms / 2

    def __str__(self) -> str:
        return (f"{self.name}: {self.appended} appends while slow, {self.slowed} syncs slowed by {self.delay_ms} ms, "
                f"{self.family} counted {self.counted} at {self.mean_ms:.0f} ms each")


@dataclass(frozen=True)
class SlowDevice:
    device: str                          # in messages: "journal", "ledger device"
    directory: Callable[[Any], Path]     # the victim's directory whose files' syncs are slowed
    family: str                          # the summary that must show the delay
    during: During
    why: str                             # why no append may fail


async def run_slow_device_scenario(slow: SlowDevice, cluster_factory: Callable[..., BookieCluster], bookie_kind: str,
                                   conf: dict[str, Any], default_rounds: int, rng: random.Random,
                                   tmp_path: Path) -> list[SlowStretch]:
    """The scenario's rounds (each failing on a failed append, a replaced victim or nothing slowed or counted);
    what each round's stretch showed, for the scenario to judge its figure."""
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **conf,
                                      **(JAVA_METRICS if bookie_kind == "java" else {}))
    victim = rng.choice(cluster.bookies)
    await asyncio.to_thread(victim.stop)
    delay_ms = rng.randint(*DELAY_MS)
    fault = DeviceFault(victim, slow.directory(victim), tmp_path, ["fsync", "fdatasync"], mode="slow",
                        delay_ms=delay_ms)
    await asyncio.to_thread(fault.start)
    history = History()
    seen = [await _round(slow, cluster, victim, fault, history, rng, f"{bookie_kind}-{number}")
            for number in range(rounds(default_rounds))]
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    victims_own_violations(history, tolerated=False)
    print(f"{len(history)} operations, 0 violations; {victim.bookie_id}'s {slow.device}: "
          + "; ".join(map(str, seen)))
    return seen


async def append_slowly(writer: Recorder, handle: LedgerHandle, payloads: random.Random, count: int, name: str,
                        why: str) -> int:
    """``count`` appends, ``IN_FLIGHT`` at a time, none of which may fail (a ``during`` of a fixed length)."""
    await append_batches(writer, handle, payloads, count, name, IN_FLIGHT, why)
    return count


async def _round(slow: SlowDevice, cluster: BookieCluster, victim: Any, fault: DeviceFault, history: History,
                 rng: random.Random, name: str) -> SlowStretch:
    payloads = random.Random(rng.getrandbits(64))
    assert fault.delay_ms is not None
    log_before = victim.log_path.stat().st_size
    async with BookKeeper(cluster.client_config()) as bk:
        await wait_writable(bk, victim, name)
        handle = await bk.create_ledger(3, 3, 3)
        writer = Recorder(history, f"writer-{name}")
        await append_batches(writer, handle, payloads, rng.randint(*BEFORE), name, IN_FLIGHT, slow.why)
        fault.fail()
        try:
            before = await successful_totals(victim, slow.family)
            appended = await slow.during(writer, handle, payloads, victim, name)
            after = await successful_totals(victim, slow.family)
        finally:
            fault.lift()
        await append_batches(writer, handle, payloads, AFTER, name, IN_FLIGHT, slow.why)
        assert await writer.close(handle), f"{name}: the writer could not close its ledger"
    assert victim.running, f"{name}: {victim.bookie_id} stopped on a slow {slow.device}; log:\n{victim.tail_log()}"
    assert len(handle.metadata.ensembles) == 1, \
        f"{name}: the writer replaced a bookie on a slow {slow.device}: {handle.metadata.ensembles}"
    slowed = slowed_in_log(victim, log_before)
    assert slowed > 0, f"{name}: no sync on {victim.bookie_id}'s {slow.device} was slowed; log:\n{victim.tail_log()}"
    count = int(after[1] - before[1])
    assert count > 0, f"{name}: {victim.bookie_id}'s {slow.family} counted nothing while {appended} adds went on"
    return SlowStretch(name, slow.family, fault.delay_ms, appended, slowed, count, (after[0] - before[0]) / count)
