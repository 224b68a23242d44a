"""Entry-log metadata survives restarts: a log is read (ledgers map) or scanned (no map, e.g. after a crash)
once, not after every restart (BookKeeper rescans everything after each restart)."""

from __future__ import annotations

import asyncio

from tests.gc.gcutil import GC_OVERRIDES, client, current_dir, gc_now, metrics, write_ledger
from tests.support.bookies import BookieFactory


async def test_metadata_read_once_across_restarts(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)
    bookie = cluster[0]
    async with client(cluster) as bk:
        await write_ledger(bk, 200, 8192, 1)  # over a MiB: some logs finalized with their maps
        await write_ledger(bk, 30, 8192, 2)
    await asyncio.sleep(1.5)  # checkpointed: the active log holds entries
    bookie.kill()             # ... and stays unfinalized: no map, it must be scanned
    bookie.start()
    await gc_now(bookie)
    first = await metrics(bookie)
    assert first["bookie_ENTRY_LOG_META_READ_TOTAL"] >= 2
    assert first["bookie_ENTRY_LOG_SCAN_TOTAL"] == 1, "the crashed log is scanned"
    assert (current_dir(bookie) / "gc-entrylog-meta.json").exists()

    bookie.restart()
    await gc_now(bookie)
    again = await metrics(bookie)
    assert again["bookie_ENTRY_LOG_SCAN_TOTAL"] == 0, "no rescan after a restart"
    assert again["bookie_ENTRY_LOG_META_READ_TOTAL"] <= 1, "only the log finalized at the clean stop"
