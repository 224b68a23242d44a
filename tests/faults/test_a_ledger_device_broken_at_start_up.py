"""A bookie whose ledger device is broken when it starts (a disk that died while the bookie was down, a volume
attached in a bad state: its reads, or all its reads, writes and syncs, on files under the ledger directory answer
EIO) never takes a write it cannot keep, says why, and loses nothing once the device is sound again.

Each round, on a cluster of 4 bookies of one implementation: a seeded bookie is made part of a 3/2/2 ledger that
is written and closed, so it holds acknowledged entries; it is stopped and started again with the failing-device
preload of ``tests/support/faults.py`` (``DeviceFault.start(failing=True)``) on from its first call; its reaction is
awaited up to ``REACTS_WITHIN``. Ours must refuse to start: a non-zero exit, never listed as writable, and its
start-up failure (the pod's termination message) ``DeviceError`` naming the file or directory under its ledger
directory. Apache BookKeeper's reaction is recorded; when it exits, the operator must read ``DeviceError`` from the
end of its log as the kubelet would hand it over (``FallbackToLogsOnError``: 80 lines, 2048 bytes at most), not
the ``InvalidCookieException`` that wraps the I/O error. Meanwhile another writer appends to a new ledger; none of its
appends may fail (three sound bookies are enough for 3/2/2). Then the device is made sound, the bookie is started
as its supervisor would, and every entry it acknowledged before is read from it alone into the history, which the
checker judges with the writers' reads and a final recovery's.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.termination import DEVICE_ERROR
from bookie_operator.decisions.start_failures import classify

from tests.support.faults import DEVICE_CALLS, DeviceFault
from tests.support.history import History
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds
from tests.support.victims import (
    VICTIM_CONF,
    append_batches,
    closed_ledger_on,
    served_after_a_restart,
    victims_own_violations,
)

ROUNDS = 1
BEFORE = (50, 200)  # entries written (and acknowledged by the victim) before it is stopped
WHILE_BROKEN = 100  # entries appended by another writer while it starts on the broken device
IN_FLIGHT = 8
REACTS_WITHIN = 30.0  # s: a start-up reads the cookie and the indexes first; a JVM's start takes a few seconds
WHY = "three sound bookies are enough for a 3/2/2 ledger"
# The end of a container's log the kubelet keeps as its termination message when it wrote none.
KUBELET_LOG_LINES, KUBELET_LOG_BYTES = 80, 2048
CONF = {**VICTIM_CONF, "journalSyncData": True, "flushInterval": 1000}


@pytest.mark.parametrize("calls", [list(DEVICE_CALLS), ["read", "pread"]], ids=["everything", "reads"])
@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_bookie_started_on_a_broken_ledger_device_takes_no_write_and_loses_nothing(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random,
        tmp_path: Path, calls: list[str]) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4, **CONF)
    history = History()
    reactions = []
    for number in range(rounds(ROUNDS)):
        async with BookKeeper(cluster.client_config()) as bk:
            reactions.append(await _round(bk, cluster, history, seeded_rng, tmp_path, calls, f"{bookie_kind}-{number}"))
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    own_losses = victims_own_violations(history, tolerated=False)
    print(f"{len(history)} operations; the victims: {'; '.join(reactions)}; {own_losses} acknowledged entries "
          f"missing on the victims after their restart")


async def _round(bk: BookKeeper, cluster: BookieCluster, history: History, rng: random.Random, workdir: Path,
                 calls: list[str], name: str) -> str:
    victim = rng.choice(cluster.bookies)
    payloads = random.Random(rng.getrandbits(64))
    before, asked = await closed_ledger_on(bk, victim, history, payloads, rng.randint(*BEFORE), name, IN_FLIGHT, WHY)

    await asyncio.to_thread(victim.stop)
    fault = DeviceFault(victim, victim.ledger_dir, workdir, calls)
    try:
        await asyncio.to_thread(fault.start, failing=True)
        during = await bk.create_ledger(3, 2, 2)
        second_writer = Recorder(history, f"writer-while-broken-{name}")
        appending = asyncio.create_task(
            append_batches(second_writer, during, payloads, WHILE_BROKEN, name, IN_FLIGHT, WHY))
        reaction = await _reaction(bk, victim, cluster.kind, name)
        await appending
        assert await second_writer.close(during), f"{name}: the writer could not close its ledger"
        assert "eio_under:" in victim.tail_log(400), (
            f"{name}: the preload failed no call of {victim.bookie_id}; log:\n{victim.tail_log()}")
    finally:
        fault.lift()
    served = await served_after_a_restart(victim, before.ledger_id, asked, history, name)
    return (f"{victim.bookie_id} started on a broken ledger device: {reaction}; once sound it served {served} of "
            f"the {len(asked)} entries it acknowledged")


async def _reaction(bk: BookKeeper, victim: Any, kind: str, name: str) -> str:
    """How the bookie met its broken device within ``REACTS_WITHIN``: ours must exit, saying ``DeviceError`` and
    naming its ledger directory, and never be listed as writable meanwhile."""
    started = time.monotonic()
    writable_seen = False
    while time.monotonic() - started < REACTS_WITHIN:
        if not victim.running:
            status = victim.proc.returncode
            reason, message = _operator_reading(victim.tail_log(KUBELET_LOG_LINES), kind)
            assert status != 0 and reason == DEVICE_ERROR, (
                f"{name}: {victim.bookie_id} exited with {status}, read by the operator as {reason}: {message}; "
                f"log:\n{victim.tail_log()}")
            if kind == "python":
                assert str(victim.ledger_dir) in message, f"{name}: {message} names no file of the ledger directory"
            return (f"exited with status {status} after {time.monotonic() - started:.1f} s, read by the operator "
                    f"as {reason}: {message}")
        writable_seen = writable_seen or victim.bookie_id in await bk.writable_bookies()
        assert not (kind == "python" and writable_seen), (
            f"{name}: {victim.bookie_id} registered as writable on a broken ledger device; log:\n{victim.tail_log()}")
        await asyncio.sleep(0.1)
    assert kind != "python", (f"{name}: {victim.bookie_id} still running {REACTS_WITHIN} s after starting on a "
                              f"broken ledger device; log:\n{victim.tail_log()}")
    if victim.bookie_id in await bk.readonly_bookies():
        return f"running read-only after {REACTS_WITHIN:.0f} s"
    state = "writable" if victim.bookie_id in await bk.writable_bookies() else "not registered"
    return f"still running after {REACTS_WITHIN:.0f} s, {state}{' (writable at some point)' if writable_seen else ''}"


def _operator_reading(log_end: str, kind: str) -> tuple[str, str]:
    """The reason and message the operator gives a bookie that exited at start: ours from its termination message
    (what ``bookie serve`` also says last on stderr), Apache BookKeeper's from its log's end."""
    if kind == "python":
        said = re.search(r"cannot start \((\w+)\): (.*)", log_end)
        return classify(f"{said[1]}: {said[2]}") if said else ("(no start-up failure said)", log_end[-300:])
    return classify(log_end.encode()[-KUBELET_LOG_BYTES:].decode(errors="ignore"))
