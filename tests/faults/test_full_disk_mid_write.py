"""A bookie whose journal or ledger disk fills up while clients write loses no acknowledged entry, stops taking
adds (read-only, or, for a journal that cannot write, fail-stop: docs/architecture.md), and takes adds again
once space is freed (restarted by its supervisor when it stopped; our bookie also stops once the disk has room if
its RocksDB index kept the error of a write the full disk refused, which only opening it again clears). Apache
BookKeeper 4.17.3's bookie runs the journal case only: with its ledger disk freed it stays read-only for minutes,
and restarted it can fail to open its RocksDB index (docs/reliability.md), so that case is a finding of the soak
runs, not a CI check.

The disk is a real small file system (a size-limited tmpfs over the bookie's directory) filled to a seeded
number of free bytes, so ENOSPC comes mid-write at a seeded point; both implementations' bookies run the same
rounds with our client, and the history checker judges every client operation. Soak runs raise the rounds
with ``BOOKIE_FLEET_FAULT_ROUNDS`` (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper, LedgerHandle

from tests.support.faults import fill, free, small_disk_over
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds

# Ledger-disk rounds need no restart; journal-disk rounds usually restart the bookie, so fewer run in CI.
ROUNDS = {"ledgers": 10, "journal": 4}
# The ledger disk keeps what every round stored (Apache BookKeeper's bookie takes up to about 6 MiB of a round
# before it turns read-only, ours its headroom), so it grows with the rounds; the journal disk is trimmed.
DISK_MB = {"ledgers": lambda count: 32 + 8 * count, "journal": lambda count: 24}
MOST_HEADROOM = 2 << 20
ROUND_BYTES = 4 << 20  # written per round: more than the most headroom a round leaves
IN_FLIGHT = 16
CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000, "diskCheckInterval": 500, "diskUsageThreshold": 0.999,
                        "diskUsageWarnThreshold": 0.998,
                        # Writable again only with room for both write cache halves (8 MiB) on the disk: a mark
                        # closer to full makes it flap, the flush of what waited filling it again.
                        "diskUsageLwmThreshold": 0.75,
                        "dbStorage_writeCacheMaxSizeMb": 4, "journalPreAllocSizeMB": 1, "journalMaxSizeMB": 8,
                        "gcWaitTime": 3_600_000}


def _disk_of(bookie: Any, disk: str) -> Path:
    """The directory the fault goes on, as the bookie's own configuration names it (both implementations)."""
    key = "ledgerDirectories" if disk == "ledgers" else "journalDirectories"
    return Path(str(bookie.conf_values()[key]))


@pytest.mark.parametrize(("bookie_kind", "disk"), [("python", "ledgers"), ("python", "journal"),
                                                   ("java", "journal")])
async def test_a_full_disk_loses_no_acknowledged_entry_and_recovers(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, disk: str,
        seeded_rng: random.Random) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3, **CONF)
    victim = cluster.bookies[0]
    await asyncio.to_thread(victim.stop)
    history = History()
    count = rounds(ROUNDS[disk])
    with small_disk_over(_disk_of(victim, disk), DISK_MB[disk](count)) as small:
        await asyncio.to_thread(victim.start)
        async with BookKeeper(cluster.client_config()) as bk:
            for number in range(count):
                await _round(bk, cluster, victim, small, history, seeded_rng, f"{bookie_kind}-{disk}-{number}")
        await asyncio.to_thread(victim.stop)
    # Everything acknowledged, read back by a new client once the bookie restarted on its normal disk.
    await asyncio.to_thread(victim.start)
    await recover_and_read_every_ledger(cluster.client_config(), history)
    violations = check(history)
    assert not violations, report(violations, history)
    assert sum(op.kind == "append" and op.ok for op in history.ops) > 10 * count


async def _round(bk: BookKeeper, cluster: BookieCluster, victim: Any, small: Path, history: History,
                 rng: random.Random, name: str) -> None:
    """Fill the disk to a seeded headroom, write past it, see the bookie stop taking adds, free the space,
    see it take adds again; every operation recorded."""
    filler = fill(small, leave=rng.randint(0, MOST_HEADROOM))
    writer = Recorder(history, f"writer-{name}")
    try:
        handle = await bk.create_ledger(3, 3, 2)
        await _write(writer, handle, rng, name)
        await _wait_stopped_taking_adds(bk, victim, name)
        if not await writer.close(handle):
            await Recorder(history, f"recoverer-{name}").recover(bk, handle.ledger_id)
    finally:
        free(filler)
    if not victim.running:  # fail-stop: its supervisor (here, the test) starts it again
        await asyncio.to_thread(victim.start)
    await _wait_writable(bk, victim, name)
    # Writable again: a ledger that needs every bookie's acknowledgement takes an entry.
    probe = await bk.create_ledger(3, 3, 3)
    prober = Recorder(history, f"prober-{name}")
    assert await prober.append(probe, f"{name} probe".encode()) == 0, f"{name}: {victim.bookie_id} took no add"
    assert await prober.close(probe)


async def _write(writer: Recorder, handle: LedgerHandle, rng: random.Random, name: str) -> None:
    written = 0
    while written < ROUND_BYTES:
        batch = [f"{name} L{handle.ledger_id} {written + i} ".encode() + rng.randbytes(rng.randint(4096, 32768))
                 for i in range(IN_FLIGHT)]
        results = await asyncio.gather(*(writer.append(handle, data) for data in batch))
        if any(r is None for r in results):
            return  # the handle failed: the rest would fail the same way
        written += sum(map(len, batch))


async def _wait_stopped_taking_adds(bk: BookKeeper, victim: Any, name: str) -> None:
    for _ in range(600):
        if not victim.running or victim.bookie_id in await bk.readonly_bookies():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name}: {victim.bookie_id} still writable with a full disk; log:\n{victim.tail_log()}")


async def _wait_writable(bk: BookKeeper, victim: Any, name: str) -> None:
    for _ in range(600):
        if not victim.running:  # stopped once the disk had room (an index that kept RocksDB's write error)
            await asyncio.to_thread(victim.start)
        with contextlib.suppress(Exception):
            if victim.bookie_id in await bk.writable_bookies():
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name}: {victim.bookie_id} not writable again after space was freed; log:\n"
                         f"{victim.tail_log()}")
