"""A bookie read-only because its ledger disk is full: a forced GC over REST still reclaims the space (the
BookKeeper PR #3205 / Pulsar #15332 trap) and the bookie becomes writable again."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie.client import BookKeeper

from tests.gc.gcutil import GC_OVERRIDES, client, gc_now, metrics, read_all, rest, write_ledger
from tests.support.bookies import BookieFactory
from tests.support.disks import tmpfs

DISK_MB = 16
ENTRY = 16 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", DISK_MB) as mount:
        yield mount


@pytest.fixture
def larger_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", 2 * DISK_MB) as mount:
        yield mount


async def _read_only(url: str) -> bool:
    return bool((await rest("GET", f"{url}/api/v1/bookie/state"))["readOnly"])


async def _fill_until_read_only(bk: BookKeeper, url: str) -> list[int]:
    """Dead-to-be ledgers of 1 MiB until the disk monitor turns the bookie read-only."""
    written: list[int] = []
    for seed in range(40):
        if await _read_only(url):
            return written
        try:
            lid, _ = await asyncio.wait_for(write_ledger(bk, 64, ENTRY, seed), 20)
            written.append(lid)
        except Exception:  # the bookie went read-only under this ledger's writes
            await asyncio.sleep(1)
    raise AssertionError("the disk never filled")


async def test_forced_gc_reclaims_a_full_disk_and_bookie_becomes_writable(bookie_factory: BookieFactory,
                                                                         small_disk: Path) -> None:
    cluster = bookie_factory(1, start=False, diskUsageThreshold=0.7, diskUsageWarnThreshold=0.6,
                             diskUsageLwmThreshold=0.5, diskCheckInterval=200,
                             dbStorage_writeCacheMaxSizeMb=4, **GC_OVERRIDES)
    bookie = cluster[0]
    bookie.overrides["ledgerDirectories"] = str(small_disk)
    bookie.start()
    async with client(cluster) as bk:
        keep, payloads = await write_ledger(bk, 10, ENTRY, 99)  # live, sharing a log with dead entries
        dead = await _fill_until_read_only(bk, bookie.http_url)
        assert await _read_only(bookie.http_url)
        for lid in dead:
            await bk.delete_ledger(lid)

        await gc_now(bookie)
        deadline = asyncio.get_running_loop().time() + 20
        while await _read_only(bookie.http_url):
            assert asyncio.get_running_loop().time() < deadline, "space reclaimed but the bookie stays read-only"
            await asyncio.sleep(0.2)
        assert bookie.bookie_id in await bk.writable_bookies()
        assert await read_all(bk, keep) == payloads
        more, more_payloads = await write_ledger(bk, 4, ENTRY, 7)  # writable again for real
        assert await read_all(bk, more) == more_payloads


async def test_full_disk_wakes_gc_without_waiting_for_its_schedule(bookie_factory: BookieFactory,
                                                                  larger_disk: Path) -> None:
    """gcWaitTime is ten minutes: only the read-only transition can start the cycle that frees the disk."""
    cluster = bookie_factory(1, start=False, diskUsageThreshold=0.7, diskUsageWarnThreshold=0.6,
                             diskUsageLwmThreshold=0.6, diskCheckInterval=200, dbStorage_writeCacheMaxSizeMb=4,
                             **GC_OVERRIDES)
    bookie = cluster[0]
    bookie.overrides["ledgerDirectories"] = str(larger_disk)
    bookie.start()
    async with client(cluster) as bk:
        doomed = [(await write_ledger(bk, 64, ENTRY, seed))[0] for seed in range(8)]  # 8 of 32 MiB
        for lid in doomed:
            await bk.delete_ledger(lid)  # garbage GC has not collected yet
        await asyncio.sleep(1.5)  # checkpointed into entry logs
        st = os.statvfs(larger_disk)
        used = (st.f_blocks - st.f_bavail) * st.f_frsize
        filler = int(0.75 * st.f_blocks * st.f_frsize) - used  # another program fills the disk to 75 %
        (larger_disk / "filler").write_bytes(bytes(max(0, filler)))
        deadline = asyncio.get_running_loop().time() + 30
        while (await metrics(bookie))["bookie_RECLAIMED_DELETION_SPACE_BYTES"] < 7 * 64 * ENTRY:
            assert asyncio.get_running_loop().time() < deadline, "GC did not run when the disk filled"
            await asyncio.sleep(0.2)
        while await _read_only(bookie.http_url):
            assert asyncio.get_running_loop().time() < deadline, "space reclaimed but the bookie stays read-only"
            await asyncio.sleep(0.2)
    assert "ledger disk full: running GC now" in bookie.log_path.read_text()
