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
raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py). The scenario's steps are
``tests/support/slow_device.py``'s, shared with the slow journal.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import LedgerHandle

from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder
from tests.support.slow_device import IN_FLIGHT, SlowDevice, append_slowly, run_slow_device_scenario
from tests.support.victims import METRICS_CONF, VICTIM_CONF, successful_totals

CONF: dict[str, Any] = {**VICTIM_CONF, "flushInterval": 1000, **METRICS_CONF}
ROUNDS = {"python": 1, "java": 1}
FLUSHES = 2  # write caches the victim flushes on the slow device each round
SLOW_FOR_AT_MOST = 60.0  # s of appends waiting for those flushes
WHY = "a slow ledger device only delays the checkpoints; the journal acknowledges the adds"


async def _until_flushed(writer: Recorder, handle: LedgerHandle, payloads: random.Random, victim: Any,
                         name: str) -> int:
    """Append, ``IN_FLIGHT`` at a time, until the victim has counted ``FLUSHES`` more successful flushes (each
    checkpoint flushes what the appends put in its write cache); how many appends that took."""
    flushes = (await successful_totals(victim, "bookie_flush"))[1] + FLUSHES
    deadline, appended = time.monotonic() + SLOW_FOR_AT_MOST, 0
    while (reading := await successful_totals(victim, "bookie_flush"))[1] < flushes:
        assert time.monotonic() < deadline, (
            f"{name}: {victim.bookie_id} flushed {reading[1]:.0f} write caches of the {flushes:.0f} awaited in "
            f"{SLOW_FOR_AT_MOST:.0f} s of appends on a slow ledger device; log:\n{victim.tail_log()}")
        appended += await append_slowly(writer, handle, payloads, IN_FLIGHT, name, WHY)
        await asyncio.sleep(0.2)  # a steady trickle: a few hundred appends, not thousands, while flushes are slow
    return appended


SLOW_LEDGER_DEVICE = SlowDevice("ledger device", lambda victim: victim.ledger_dir, "bookie_flush", _until_flushed, WHY)


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_slow_ledger_device_slows_the_checkpoints_loses_nothing_and_shows_in_the_flush_latency(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random,
        tmp_path: Path) -> None:
    stretches = await run_slow_device_scenario(SLOW_LEDGER_DEVICE, cluster_factory, bookie_kind, CONF,
                                               ROUNDS[bookie_kind], seeded_rng, tmp_path)
    assert all(s.shows_the_delay for s in stretches), (
        "the metric does not show a slow ledger device: " + "; ".join(map(str, stretches)))
