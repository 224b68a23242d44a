"""Bit flips at rest in one bookie's entry logs: the client's digest check refuses the damaged copy and reads the
entry from another replica, so every acknowledged entry still reads back with its bytes.

Each round writes a closed 3/2/2 ledger, stops one bookie (its write cache goes to its entry logs), flips a
seeded bit in the payload of seeded entries whose first replica to read is that bookie, runs ``bookie scrub`` on
its ledger directory, which must name exactly the entries damaged there so far (this round's and earlier
rounds'), checks through a raw connection that the bookie now serves the damaged bytes (the fault is real),
starts it and reads the ledger back with a new client. The history checker judges every operation, and a read
the client could not complete (it found no good copy) fails the round. Apache BookKeeper's bookie runs it with
its journal synced: otherwise its restart replays the whole journal and serves a good copy of every entry again,
so the damage never reaches a reader (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.ledger import write_set
from bookie.protocol.codes import StatusCode
from bookie.storage import entrylog_format as ef

from tests.support.faults import flip_bit
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.raw_client import RawConnection
from tests.support.recorder import Recorder
from tests.support.seeds import rounds

ROUNDS = {"python": 10, "java": 5}  # each of Apache BookKeeper's rounds restarts a JVM
ENTRIES = 24
DAMAGED = 3  # entries damaged per round
DIGEST_HEADER = 8 * 4 + 4  # ledger, entry, LAC, length, CRC32C: the payload starts after it
CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                        "flushInterval": 1000, "gcWaitTime": 3_600_000}
# Apache BookKeeper's journal mark moves only with synced journal writes: without them its restart replays the
# whole journal, writing a good copy of each entry again, and the damage never reaches a reader.
JAVA_CONF: dict[str, Any] = {**CONF, "journalSyncData": True}


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_flipped_bit_is_read_from_another_replica(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 3,
                                      **(JAVA_CONF if bookie_kind == "java" else CONF))
    history = History()
    damaged_on: dict[str, set[tuple[int, int]]] = defaultdict(set)  # bookie -> (ledger, entry) damaged there
    async with BookKeeper(cluster.client_config(sticky_reads=False)) as bk:
        for number in range(rounds(ROUNDS[bookie_kind])):
            await _round(bk, cluster, history, seeded_rng, damaged_on, f"{bookie_kind}-{number}")
    violations = check(history)
    assert not violations, report(violations, history)
    failed = [op for op in history.ops if not op.ok]
    assert not failed, "reads the client could not serve from a good replica:\n" + "\n".join(map(str, failed))


async def _round(bk: BookKeeper, cluster: BookieCluster, history: History, rng: random.Random,
                 damaged_on: dict[str, set[tuple[int, int]]], name: str) -> None:
    writer = Recorder(history, f"writer-{name}")
    handle = await bk.create_ledger(3, 2, 2)
    for i in range(ENTRIES):
        await writer.append(handle, f"{name} entry {i} ".encode() + rng.randbytes(rng.randint(100, 3000)))
    assert await writer.close(handle)
    ensemble = handle.metadata.ensemble_at(0)
    victim = cluster.by_id(rng.choice(list(ensemble)))
    position = list(ensemble).index(victim.bookie_id)
    # Entries the client reads from the victim first: the damage must be met, not read around by chance.
    first_on_victim = [i for i in range(ENTRIES) if write_set(i, 3, 2)[0] == position]
    damaged = rng.sample(first_on_victim, DAMAGED)
    await asyncio.to_thread(victim.stop)
    records = _records(victim.ledger_dir / "current", handle.ledger_id)
    for entry_id in damaged:
        size = records[entry_id][0][2]
        offset, bit = DIGEST_HEADER + rng.randrange(size - DIGEST_HEADER), rng.randrange(8)
        for path, body_at, _ in records[entry_id]:  # every copy (a compaction or replay may have left two)
            flip_bit(path, body_at + offset, bit)
    damaged_on[victim.bookie_id] |= {(handle.ledger_id, entry_id) for entry_id in damaged}
    named = await asyncio.to_thread(_scrub, victim.ledger_dir)
    assert named == damaged_on[victim.bookie_id], (
        f"{name}: `bookie scrub` named {sorted(named)}, the damaged entries on {victim.bookie_id} are "
        f"{sorted(damaged_on[victim.bookie_id])}")
    await asyncio.to_thread(victim.start)
    await _served_damaged(victim.bookie_id, handle.ledger_id, damaged, history, name)
    reader = Recorder(history, f"reader-{name}")
    opened = await reader.recover(bk, handle.ledger_id)
    assert opened is not None, f"{name}: ledger {handle.ledger_id} could not be opened"
    await reader.read_back(opened)


def _scrub(ledger_dir: Path) -> set[tuple[int, int]]:
    """What ``bookie scrub`` names as damaged on a ledger directory: (ledger, entry) pairs."""
    done = subprocess.run([sys.executable, "-m", "bookie.cli", "scrub", str(ledger_dir)], capture_output=True,
                          text=True, timeout=120)
    report = json.loads(done.stdout)
    assert done.returncode == (1 if report["damaged"] else 0) and not report["problems"], done
    assert not report["not_verified"], f"CRC32C ledgers reported as not verified: {report['not_verified']}"
    return {(found["ledger"], found["entry"]) for found in report["damaged"]}


def _records(current: Path, ledger_id: int) -> dict[int, list[tuple[Path, int, int]]]:
    """entry id -> every copy of it: (entry log, offset of the entry's body, its size)."""
    found: dict[int, list[tuple[Path, int, int]]] = {}
    for path in sorted(current.glob("*.log")):
        data = path.read_bytes()
        for record in ef.iter_records(data):
            if record.ledger_id == ledger_id:
                copy = (path, record.offset + ef.RECORD_SIZE_PREFIX, record.size)
                found.setdefault(record.entry_id, []).append(copy)
    if not found:
        raise AssertionError(f"no entry of ledger {ledger_id} in the entry logs under {current}")
    return found


async def _served_damaged(bookie_id: str, ledger_id: int, damaged: list[int], history: History,
                          name: str) -> None:
    acked = history.acknowledged(ledger_id)
    async with await RawConnection.open(bookie_id) as conn:
        for entry_id in damaged:
            response = await conn.read(ledger_id, entry_id)
            assert response.status == StatusCode.EOK, f"{name}: {bookie_id} lost entry {entry_id}"
            assert not bytes(response.body).endswith(acked[entry_id]), f"{name}: entry {entry_id} not damaged"
