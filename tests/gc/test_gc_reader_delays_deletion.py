"""Reference-counted entry-log files (RocketMQ's ReferenceResource): a log someone reads is not unlinked while
it is held; once released it goes at the next cycle, and after gcEntryLogForcedDestroyIntervalMs it goes
anyway (the reader's open descriptor keeps working on POSIX)."""

from __future__ import annotations

import asyncio
import os

from bookie.gc.refs import shared_hold
from bookie.storage import entrylog_format as ef

from tests.gc.gcutil import GC_OVERRIDES, client, current_dir, explain, gc_now, log_sizes, metrics, write_ledger
from tests.support.bookies import BookieFactory

FORCED_AFTER_S = 4.0


async def test_held_log_waits_for_its_reader_then_forced_destroy(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **{**GC_OVERRIDES, "gcEntryLogForcedDestroyIntervalMs": int(FORCED_AFTER_S * 1000)})
    bookie = cluster[0]
    logs: list[int] = []
    async with client(cluster) as bk:
        ledgers = []
        for seed in (1, 2):  # two dead-to-be ledgers, each alone in its own finalized log
            before = set(log_sizes(bookie))
            lid, _ = await write_ledger(bk, 20, 4096, seed)
            ledgers.append(lid)
            bookie.restart()
            (new,) = set(log_sizes(bookie)) - before
            logs.append(new)
        for lid in ledgers:
            await bk.delete_ledger(lid)

    released_path, forced_path = (current_dir(bookie) / ef.log_file_name(i) for i in logs)
    with shared_hold(forced_path) as forced_fd:  # a reader that never lets go
        with shared_hold(released_path):         # a reader that finishes
            await gc_now(bookie)
            assert released_path.exists() and forced_path.exists(), "held logs are not unlinked"
            report = await explain(bookie)
            verdicts = {e["logId"]: e["verdict"] for e in report["ledgerDirs"][0]["entryLogs"]}
            assert "readers release" in verdicts[f"{logs[0]:x}"]
            assert (await metrics(bookie))["bookie_PENDING_DELETION_ENTRY_LOGS"] == 2

        await gc_now(bookie)
        assert not released_path.exists(), "released: deleted at the next cycle"
        assert forced_path.exists()
        await asyncio.sleep(FORCED_AFTER_S)
        await gc_now(bookie)
        assert not forced_path.exists(), "after the forced-destroy interval the log goes although held"
        assert len(os.pread(forced_fd, 1024, 0)) == 1024, "the reader's descriptor still reads the bytes"
    m = await metrics(bookie)
    assert m["bookie_FORCED_DESTROY_TOTAL"] == 1
    assert m["bookie_PENDING_DELETION_ENTRY_LOGS"] == 0
