"""A full ledger disk keeps room for compaction: the add path refuses entries (EREADONLY, the bookie turns
read-only) before the next checkpoint would take the directory past diskUsageThreshold, however fast they
come, so when most ledgers are deleted a forced GC can rewrite the partly-live entry logs, reclaim the space
and the bookie returns to writable.

The writer interleaves every ledger in every entry log (no log is ever wholly dead) and runs at full speed
on a small tmpfs, with a disk checker too slow to notice in time on its own.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie.metadata.ledger_metadata import new_ledger_metadata
from bookie.metadata.store import MetadataStore
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.disks import tmpfs, used_fraction
from tests.support.raw_client import MASTER_KEY, RawConnection, entry
from tests.support.rest import put
from tests.support.waiting import eventually

DISK_MB = 64
THRESHOLD = 0.75
LEDGERS = 40
KEPT = 4
PAYLOAD = 16 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", DISK_MB) as mount:
        yield mount


async def _write_until_refused(bookie_id: str, ledgers: list[int]) -> dict[tuple[int, int], bytes]:
    acked: dict[tuple[int, int], bytes] = {}
    async with await RawConnection.open(bookie_id, 3) as conn:
        for entry_id in range(10_000):
            batch = [m.AddRequest(conn.wire(), ledger, entry_id, MASTER_KEY,
                                  entry(ledger, entry_id, random.randbytes(PAYLOAD))) for ledger in ledgers]
            responses = await conn.pipeline(batch, within=60)
            for request, response in zip(batch, responses, strict=True):
                if response.status == StatusCode.EOK:
                    acked[(request.ledger_id, request.entry_id)] = bytes(request.body)
            if any(r.status != StatusCode.EOK for r in responses):
                assert {r.status for r in responses} <= {StatusCode.EOK, StatusCode.EREADONLY}
                return acked
    raise AssertionError("the disk never filled")


async def _registered_read_only(store: MetadataStore, bookie_id: str) -> bool:
    return bookie_id in await store.list_bookies(readonly=True)


async def test_forced_gc_reclaims_a_full_disk(bookie_factory: BookieFactory, small_disk: Path) -> None:
    cluster = bookie_factory(1, start=False, diskUsageThreshold=THRESHOLD, diskUsageWarnThreshold=0.7,
                             diskUsageLwmThreshold=0.5, diskCheckInterval=60_000, logSizeLimit=2 * 1024 * 1024,
                             dbStorage_writeCacheMaxSizeMb=8, flushInterval=500)
    bookie = cluster[0]
    bookie.overrides["ledgerDirectories"] = str(small_disk)
    bookie.start()
    store = MetadataStore(cluster.zk_connect, cluster.ledgers_root)
    await store.connect()
    try:
        ledgers = [random.randrange(1, 2**40) for _ in range(LEDGERS)]
        for ledger_id in ledgers:
            await store.create_ledger_metadata(ledger_id, new_ledger_metadata([bookie.bookie_id], 1, 1))
        acked = await _write_until_refused(bookie.bookie_id, ledgers)
        # The refusal is immediate; the read-only registration in ZooKeeper follows it in the background.
        await eventually(lambda: _registered_read_only(store, bookie.bookie_id), "refusing adds turned it read-only")
        await asyncio.sleep(2)  # checkpoints of what was accepted
        full = used_fraction(small_disk)
        assert full < 0.9, f"the disk filled to {full:.0%}: no room left for compaction"

        kept = ledgers[:KEPT]
        for ledger_id in ledgers[KEPT:]:
            await store.delete_ledger_metadata(ledger_id)
        for _ in range(60):
            await put(f"{bookie.http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
            await asyncio.sleep(2)
            if bookie.bookie_id in await store.list_bookies(readonly=False):
                break
        else:
            raise AssertionError(f"still read-only after forced GC; disk {used_fraction(small_disk):.0%} used")
        reclaimed = used_fraction(small_disk)
        print(f"disk used when refused: {full:.0%}, after forced GC: {reclaimed:.0%}, acked {len(acked)} adds")
        assert reclaimed < 0.5 < full

        async with await RawConnection.open(bookie.bookie_id, 3) as conn:
            assert (await conn.add(kept[0], 10_000)).status == StatusCode.EOK
            for (ledger_id, entry_id), body in acked.items():
                if ledger_id in kept:
                    response = await conn.read(ledger_id, entry_id)
                    assert response.status == StatusCode.EOK and bytes(response.body) == body
    finally:
        await store.close()
        bookie.stop()
