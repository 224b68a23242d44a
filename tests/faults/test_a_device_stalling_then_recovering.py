"""A bookie whose journal device, or whose ledger device, stops answering for seconds, then recovers, costs its
clients nothing: no append fails, nothing acknowledged is lost, and once the device answers again the bookie is
still running, writable, serves what it acknowledged and acknowledges adds of a new ledger. A journal stall longer
than the client's add timeout makes the writer replace the bookie (an ensemble change), a shorter one only delays
the adds; a ledger device's stall holds up the bookie's flushes of its write cache, and whether the adds notice is
what each implementation's write cache and throttling decide (reported per round, not assumed).

The stalling device is the preload of ``tests/support/faults.py``'s ``DeviceFault`` in its ``stall`` mode
(tests/support/eio_under.c): on files under the victim's journal directory, or its ledger directory, only, its
writes (``write``, ``pwrite``, ``writev``) and syncs (``fsync``, ``fdatasync``) block while the fault is on, after a
seeded 0 to 3 of them still done, and are made once it is lifted. On the journal: our journal's writer thread
(``pwrite``, ``fdatasync``) and Apache BookKeeper's journal and ForceWrite threads (``write``, ``fdatasync``) wait as
on a device that stopped answering. On the ledger device: the entry logs and both RocksDB indexes (their write-ahead
logs, tables and syncs) of each implementation's flush or checkpoint, which runs every second here
(``flushInterval``). Everything else (the other directory, sockets, logs) is untouched.

The victim is a seeded bookie of 4 (so the client has one to replace it with), started once with the preload; its
journal syncs every group, as deployed. Each round, with a new client (one whose health check quarantined the victim
would not place the next ledger on it): a ledger placed on the victim, a seeded 20 to 100 entries acknowledged, then
the device stalls while the writer goes on, one batch at a time, and ``AFTER_LIFT`` more entries after the stall;
no append may fail, and the writer closes the ledger. The rounds take in turn, from a seeded first, a 3/2/2 or 3/3/2
ledger and a stall of a seeded 1 to 4 s or 6 to 7 s (the add timeout is 5 s): in a 3/2/2 ledger a long journal stall
makes the writer replace the victim, a short one delays the adds; in a 3/3/2 ledger the other two acknowledge every
entry and the victim stays, as Apache BookKeeper's client keeps it: a bookie's failure on an entry already
acknowledged by its ack quorum only counts as under-replication. Then the victim must still run, have logged the
stall (it reached the device) with every stalled call gone on, be listed as writable, serve alone every entry it
was asked to store before the stall (recorded, so the history checker flags one it lost), and acknowledge every add
of a new 3/3/3 ledger on it; the writer must never have replaced a sound bookie. At the end a new client recovers
and reads back every ledger, and the checker judges the whole history. Soak runs raise the rounds with
``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py); the test run's teardown fails on any process left running
(tests/support/leftovers.py).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper, LedgerHandle

from tests.support.faults import DeviceFault
from tests.support.history import History
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import (
    VICTIM_CONF,
    append_batches,
    asked_of,
    ledger_on,
    read_from,
    victims_own_violations,
    wait_writable,
)

# CI's rounds per (implementation, device): each case of CASES at least twice on the journal, once on the ledger
# device.
ROUNDS = {("python", "journal"): 10, ("java", "journal"): 10, ("python", "ledger"): 4, ("java", "ledger"): 4}
CALLS = ["write", "pwrite", "writev", "fsync", "fdatasync"]  # all a device is asked to do that a stall holds up
STALL_AFTER = (20, 100)  # entries acknowledged before the journal stalls
PASS_FIRST = (0, 3)  # calls on the device still done once it stalls
SHORT_STALL_MS = (1000, 4000)  # below the client's 5 s add timeout: the adds wait
LONG_STALL_MS = (6000, 7000)  # beyond it: the adds to the victim time out
# (write quorum, stall) in turn from a seeded first, so CI's 10 rounds take each case at least twice.
CASES = [(2, SHORT_STALL_MS), (2, LONG_STALL_MS), (3, SHORT_STALL_MS), (3, LONG_STALL_MS)]
AFTER_LIFT = 40  # entries acknowledged after the stall
CHECK_ENTRIES = 10  # adds of the new ledger the victim must acknowledge after the stall
IN_FLIGHT = 8
PACE_S = 0.1  # between the writer's batches during the stall: a replacement must not flood the other bookies
WHY = "a stalled device only delays the victim, and a bookie was free to replace it"
CONF: dict[str, Any] = {**VICTIM_CONF, "journalSyncData": True, "flushInterval": 1000}
_RESUMED = re.compile(r"eio_under: \S+ \S+: resumed after (\d+) ms")


@pytest.mark.parametrize("device", ["journal", "ledger"])
@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_device_stalling_for_seconds_loses_nothing_and_the_bookie_comes_back(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, device: str, seeded_rng: random.Random,
        tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4, **CONF)
    victim = seeded_rng.choice(cluster.bookies)
    await asyncio.to_thread(victim.stop)
    under = victim.journal_dir if device == "journal" else victim.ledger_dir
    fault = DeviceFault(victim, under, tmp_path, CALLS, mode="stall")
    await asyncio.to_thread(fault.start)
    history = History()
    outcomes = []
    first = seeded_rng.randrange(len(CASES))
    for number in range(rounds(ROUNDS[bookie_kind, device])):
        write_quorum, stall_ms = CASES[(first + number) % len(CASES)]
        outcomes.append(await _round(cluster, victim, fault, history, seeded_rng, write_quorum,
                                     seeded_rng.randint(*stall_ms) / 1000, f"{bookie_kind}-{device}-{number}"))
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    victims_own_violations(history, tolerated=False)
    replaced = sum(1 for outcome in outcomes if "replaced" in outcome)
    print(f"{len(history)} operations, 0 violations; {victim.bookie_id}'s {device} device stalled in every round, "
          f"replaced in {replaced} of {len(outcomes)}: {'; '.join(outcomes)}")


async def _round(cluster: BookieCluster, victim: Any, fault: DeviceFault, history: History, rng: random.Random,
                 write_quorum: int, stall_s: float, name: str) -> str:
    """One ledger written while the victim's journal stalls for a while; returns what the client did about it."""
    stall_after = rng.randint(*STALL_AFTER)
    pass_first = rng.randint(*PASS_FIRST)
    payloads = random.Random(rng.getrandbits(64))  # the writer's own: its pace must not shift the schedule
    log_before = victim.log_path.stat().st_size
    async with BookKeeper(cluster.client_config()) as bk:
        await wait_writable(bk, victim, name)
        handle = await ledger_on(bk, victim.bookie_id, write_quorum)
        writer = Recorder(history, f"writer-{name}")
        await append_batches(writer, handle, payloads, stall_after, name, IN_FLIGHT, WHY)
        acknowledged_before = handle.last_add_pushed  # every one acknowledged: append_batches waited
        await _write_through_a_stall(writer, handle, payloads, fault, pass_first, stall_s, name)
        assert await writer.close(handle), f"{name}: the writer could not close its ledger"
    assert victim.running, f"{name}: {victim.bookie_id} stopped after its device stalled; log:\n{victim.tail_log()}"
    stalled_ms = _stalls_logged(victim, log_before, name)
    # Each entry it was asked to store before the stall reached it while its device was sound: all there.
    asked = asked_of(handle, victim.bookie_id, last=acknowledged_before)
    await read_from(victim, handle.ledger_id, asked, history, f"victim-reader-{name}")
    await _takes_adds_again(cluster, victim, history, payloads, name)
    replaced = _replaced_only_the_victim(handle, victim.bookie_id, name)
    return (f"3/{write_quorum}/2, stalled {stall_s:.1f} s (its longest call {max(stalled_ms)} ms) after "
            f"{stall_after} entries: {'replaced' if replaced else 'kept'}")


async def _write_through_a_stall(writer: Recorder, handle: LedgerHandle, payloads: random.Random,
                                 fault: DeviceFault, pass_first: int, stall_s: float, name: str) -> None:
    """Batches while the device stalls for ``stall_s``, then ``AFTER_LIFT`` more entries; none may fail."""
    fault.fail(after=pass_first)
    lifted = asyncio.get_running_loop().call_later(stall_s, fault.lift)
    try:
        while fault.switch.exists():
            await append_batches(writer, handle, payloads, IN_FLIGHT, name, IN_FLIGHT, WHY)
            await asyncio.sleep(PACE_S)
        await append_batches(writer, handle, payloads, AFTER_LIFT, name, IN_FLIGHT, WHY)
    finally:
        lifted.cancel()
        fault.lift()


def _replaced_only_the_victim(handle: LedgerHandle, victim_id: str, name: str) -> bool:
    """Whether the writer replaced the victim; a sound bookie of the ensemble must never have been replaced."""
    ensembles = [handle.metadata.ensembles[first] for first in sorted(handle.metadata.ensembles)]
    left = {bookie for before, after in itertools.pairwise(ensembles) for bookie in set(before) - set(after)}
    assert left <= {victim_id}, f"{name}: the writer replaced sound bookies {sorted(left - {victim_id})}: {ensembles}"
    return victim_id in left


def _stalls_logged(victim: Any, since: int, name: str) -> list[int]:
    """How long each of the victim's stalled calls waited (its log, from byte ``since``): the stall must have
    reached its device, and every stalled call must have gone on."""
    with victim.log_path.open("rb") as log:
        log.seek(since)
        text = log.read().decode(errors="replace")
    stalled = text.count(": stalled\n")
    resumed = [int(ms) for ms in _RESUMED.findall(text)]
    assert stalled > 0, f"{name}: the stall never reached {victim.bookie_id}'s device; log:\n{victim.tail_log()}"
    assert len(resumed) == stalled, (f"{name}: {stalled - len(resumed)} of {stalled} stalled calls still "
                                     f"blocked after the stall; log:\n{victim.tail_log()}")
    return resumed


async def _takes_adds_again(cluster: BookieCluster, victim: Any, history: History, payloads: random.Random,
                            name: str) -> None:
    """A new 3/3/3 ledger on the victim: every add needs its acknowledgement. A new client, which never saw it
    time out."""
    async with BookKeeper(cluster.client_config()) as bk:
        await wait_writable(bk, victim, name)
        for _ in range(50):
            handle = await bk.create_ledger(3, 3, 3)
            if victim.bookie_id in handle.ensemble:
                break
            await handle.close()
        else:
            raise AssertionError(f"{name}: 50 new ledgers and none placed on {victim.bookie_id}")
        checker = Recorder(history, f"after-stall-{name}")
        await append_batches(checker, handle, payloads, CHECK_ENTRIES, name, IN_FLIGHT,
                             "the victim's device answers again")
        assert await checker.close(handle), f"{name}: the ledger on the recovered victim could not be closed"
