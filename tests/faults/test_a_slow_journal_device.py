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
raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py). The scenario's steps are
``tests/support/slow_device.py``'s, shared with the slow ledger device.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.java_bookies import BookieCluster
from tests.support.slow_device import SlowDevice, append_slowly, run_slow_device_scenario
from tests.support.victims import METRICS_CONF, VICTIM_CONF

CONF: dict[str, Any] = {**VICTIM_CONF, "journalSyncData": True, "flushInterval": 1000, **METRICS_CONF}
ROUNDS = {"python": 2, "java": 2}
DURING = 48
WHY = "a slow journal only delays the adds, far less than the add timeout"
SLOW_JOURNAL = SlowDevice(
    "journal", lambda victim: victim.journal_dir, "bookie_journal_JOURNAL_SYNC",
    lambda writer, handle, payloads, victim, name: append_slowly(writer, handle, payloads, DURING, name, WHY), WHY)


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_slow_journal_device_slows_the_adds_loses_nothing_and_shows_in_the_sync_latency(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random,
        tmp_path: Path) -> None:
    stretches = await run_slow_device_scenario(SLOW_JOURNAL, cluster_factory, bookie_kind, CONF,
                                               ROUNDS[bookie_kind], seeded_rng, tmp_path)
    assert all(s.shows_the_delay for s in stretches), (
        "the metric does not show a slow journal: " + "; ".join(map(str, stretches)))
