"""An entry read whole from the entry log is served even when the read-ahead of the entries after it fails: the
read-ahead only fills the read cache, so its I/O error ends the read-ahead, not the client's read (Apache
BookKeeper's read-ahead ignores its errors too). Nothing of the failed read-ahead is cached: the next entry, asked
while the device still fails, is an error, and once the device recovers it is served with its bytes.

Our bookie alone, its locations index in a directory of its own so that only the entry logs' device fails
(``DeviceFault``, tests/support/eio_under.c): an entry read is two ``pread`` calls of its log (the size prefix,
then the record), and the read-ahead's are the next ones, so letting exactly two through fails the read-ahead and
nothing before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie.client import BookKeeper
from bookie.protocol.codes import StatusCode

from tests.support.faults import DeviceFault
from tests.support.java_bookies import BookieCluster
from tests.support.raw_client import RawConnection
from tests.support.victims import METRICS_CONF, write_caches_flushed

ENTRIES = 20
FLUSH_INTERVAL_MS = 1000
ENTRY_READ_CALLS = 2  # preads of one entry: its size prefix, then the record


async def test_an_entry_read_whole_is_served_though_the_read_ahead_after_it_fails(
        cluster_factory: Callable[..., BookieCluster], tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "python", 1, flushInterval=FLUSH_INTERVAL_MS,
                                      gcWaitTime=3_600_000, indexDirectories=str(tmp_path / "index"), **METRICS_CONF)
    bookie = cluster.bookies[0]
    await asyncio.to_thread(bookie.stop)
    fault = DeviceFault(bookie, bookie.ledger_dir, tmp_path, ["read", "pread"])
    await asyncio.to_thread(fault.start)
    payloads = [f"entry {n} ".encode() * 100 for n in range(ENTRIES)]
    async with BookKeeper(cluster.client_config()) as bk:
        handle = await bk.create_ledger(1, 1, 1)
        for payload in payloads:
            await handle.add(payload)
        await handle.close()
    await write_caches_flushed(bookie, "the read-ahead's bookie")  # the entries are in the entry log, not in memory

    async with await RawConnection.open(bookie.bookie_id) as conn:
        fault.fail(after=ENTRY_READ_CALLS)
        asked = await conn.read(handle.ledger_id, 5)
        assert asked.status == StatusCode.EOK, f"entry 5 read whole, its read-ahead failed: {asked.status}"
        assert bytes(asked.body).endswith(payloads[5])
        following = await conn.read(handle.ledger_id, 6)
        assert following.status == StatusCode.EIO, f"entry 6 while the device fails: {following.status}"
        fault.lift()
        recovered = await conn.read(handle.ledger_id, 6)
        assert recovered.status == StatusCode.EOK and bytes(recovered.body).endswith(payloads[6])
    assert bookie.proc is not None and bookie.proc.poll() is None, "the bookie kept running"
