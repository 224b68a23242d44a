"""A log read through the admin API (``/api/v1/bookie/entry_log_files``, the storage audit's source) is held for
the whole response: GC does not unlink it while the read goes on, unlinks it at the next cycle once the read
ended, and after gcEntryLogForcedDestroyIntervalMs unlinks it anyway, while the reader still gets every byte."""

from __future__ import annotations

import asyncio

import aiohttp
from bookie.storage import entrylog_format as ef
from bookie_fleet.local_bookies import LocalBookie

from tests.gc.gcutil import GC_OVERRIDES, client, current_dir, entries_on_disk, gc_now, metrics, write_ledger
from tests.support.admin_api import ADMIN_HEADERS
from tests.support.bookies import BookieFactory

FORCED_AFTER_S = 3.0
READ_RATE = 30_000  # bytes/s: a ~300 KB log takes ten seconds to serve, the reader is there all along
ENTRIES = 75


def log_holding(bookie: LocalBookie, ledger_id: int) -> int:
    """The one entry log holding the ledger's entries."""
    found = entries_on_disk(bookie)
    logs = {log for (lid, _), copies in found.items() if lid == ledger_id for log, _ in copies}
    placed = sorted({(lid, log) for (lid, _), copies in found.items() for log, _ in copies})
    assert len(logs) == 1, f"ledger {ledger_id} in logs {logs}; (ledger, log) on disk: {placed}"
    return logs.pop()


async def test_gc_waits_for_a_rest_read_then_forced_destroy(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **{**GC_OVERRIDES, "gcEntryLogForcedDestroyIntervalMs": int(FORCED_AFTER_S * 1000),
                                   "httpEntryLogReadRateByBytes": READ_RATE})
    bookie = cluster[0]
    logs: list[int] = []
    async with client(cluster) as bk:
        ledgers = []
        for seed in (1, 2):  # each ledger alone in its own finalized log
            lid, _ = await write_ledger(bk, ENTRIES, 4096, seed)
            ledgers.append(lid)
            bookie.restart()
            logs.append(log_holding(bookie, lid))
        paths = [current_dir(bookie) / ef.log_file_name(i) for i in logs]
        contents = [p.read_bytes() for p in paths]
        url = f"{bookie.http_url}/api/v1/bookie/entry_log_files/0/"
        timeout = aiohttp.ClientTimeout(total=120)

        async with aiohttp.ClientSession(timeout=timeout, headers=ADMIN_HEADERS) as session:
            await bk.delete_ledger(ledgers[0])
            async with session.get(url + paths[0].name, headers={"Range": "bytes=0-"}) as reading:
                assert reading.status == 206  # headers sent: the log is held from here to the last byte
                await gc_now(bookie)
                assert paths[0].exists(), "a log being read is not unlinked"
                assert (await metrics(bookie))["bookie_PENDING_DELETION_ENTRY_LOGS"] == 1
                assert await reading.read() == contents[0]
            await gc_now(bookie)
            assert not paths[0].exists(), "the read ended: unlinked at the next cycle"

            await bk.delete_ledger(ledgers[1])
            async with session.get(url + paths[1].name, headers={"Range": "bytes=0-"}) as reading:
                assert reading.status == 206
                await gc_now(bookie)
                assert paths[1].exists()
                first = await reading.content.readexactly(4096)
                await asyncio.sleep(FORCED_AFTER_S)
                await gc_now(bookie)
                assert not paths[1].exists(), "after the forced-destroy interval the log goes although read"
                assert first + await reading.read() == contents[1], "the reader still gets every byte"
    m = await metrics(bookie)
    assert m["bookie_FORCED_DESTROY_TOTAL"] == 1
    assert m["bookie_PENDING_DELETION_ENTRY_LOGS"] == 0
