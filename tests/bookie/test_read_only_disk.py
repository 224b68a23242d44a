"""A full ledger disk makes the bookie read-only in ZooKeeper; freeing space below the low-water mark
brings it back. Read-only bookies refuse adds and keep serving reads and fencing."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie.metadata.ledger_metadata import new_ledger_metadata
from bookie.metadata.store import MetadataStore
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory
from tests.support.disks import tmpfs
from tests.support.raw_client import MASTER_KEY, RawConnection
from tests.support.waiting import eventually

DISK_MB = 32


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MiB tmpfs standing in for a ledger disk we can fill on purpose."""
    with tmpfs(tmp_path / "disk", DISK_MB) as mount:
        yield mount


async def test_full_disk_goes_read_only_and_recovers_below_low_water_mark(
        bookie_factory: BookieFactory, small_disk: Path) -> None:
    cluster = bookie_factory(1, start=False, diskUsageThreshold=0.6, diskUsageWarnThreshold=0.5,
                             diskUsageLwmThreshold=0.4, diskCheckInterval=200)
    bookie = cluster[0]
    bookie.overrides["ledgerDirectories"] = str(small_disk)
    bookie.start()
    store = MetadataStore(cluster.zk_connect, cluster.ledgers_root)
    await store.connect()
    # Ledgers in metadata, as a client creates them: a full disk starts GC at once, which drops unknown ledgers.
    ledger, other = random.randrange(1, 2**40), random.randrange(1, 2**40)
    for ledger_id in (ledger, other):
        await store.create_ledger_metadata(ledger_id, new_ledger_metadata([bookie.bookie_id], 1, 1))
    filler = small_disk / "filler"
    try:
        async with await RawConnection.open(bookie.bookie_id, 3) as conn:
            assert (await conn.add(ledger, 0)).status == StatusCode.EOK

            filler.write_bytes(bytes(int(DISK_MB * 0.7 * 2**20)))  # 70% used: over the 60% threshold

            async def read_only() -> bool:
                return bookie.bookie_id in await store.list_bookies(readonly=True)

            await eventually(read_only, "the full disk made it read-only", within=15)
            assert bookie.bookie_id not in await store.list_bookies(readonly=False)
            assert (await conn.add(ledger, 1)).status == StatusCode.EREADONLY
            assert (await conn.read(ledger, 0)).status == StatusCode.EOK
            fenced = await conn.read(ledger, 0, fence=True, master_key=MASTER_KEY)
            assert fenced.status == StatusCode.EOK

            # 45%: under 60% but above the 40% mark. Shrink in place: rewriting would pass through empty.
            os.truncate(filler, int(DISK_MB * 0.45 * 2**20))
            await asyncio.sleep(1)
            assert await read_only(), "hysteresis: stays read-only until below the low-water mark"

            filler.unlink()

            async def writable() -> bool:
                return bookie.bookie_id in await store.list_bookies(readonly=False)

            await eventually(writable, "freeing space made it writable again", within=15)
            assert (await conn.add(other, 0)).status == StatusCode.EOK
    finally:
        await store.close()
        bookie.stop()
