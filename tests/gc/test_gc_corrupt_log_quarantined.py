"""A corrupt entry log is quarantined, reported and kept, never deleted as empty; GC goes on with the others
(BookKeeper #4596: compaction halted on one corrupt log; PR #4607: a log read as empty was deleted)."""

from __future__ import annotations

from bookie.storage import entrylog_format as ef

from tests.gc.gcutil import (
    COMPACTION_MODES,
    client,
    compaction_overrides,
    current_dir,
    explain,
    gc_now,
    log_sizes,
    metrics,
    read_all,
    rest,
    write_ledger,
)
from tests.support.bookies import BookieFactory


@COMPACTION_MODES
async def test_corrupt_log_quarantined_others_collected(bookie_factory: BookieFactory, transactional: bool) -> None:
    cluster = bookie_factory(1, **compaction_overrides(transactional))
    bookie = cluster[0]
    async with client(cluster) as bk:
        before = set(log_sizes(bookie))
        dead, _ = await write_ledger(bk, 20, 4096, 1)       # smaller id: stored first in the log
        live, payloads = await write_ledger(bk, 20, 4096, 2)
        bookie.restart()
        (corrupt_log,) = set(log_sizes(bookie)) - before
        before = set(log_sizes(bookie))
        mapped_dead, _ = await write_ledger(bk, 20, 4096, 4)
        mapped_live, mapped_payloads = await write_ledger(bk, 2, 4096, 5)
        bookie.restart()
        (mapped_log,) = set(log_sizes(bookie)) - before
        before = set(log_sizes(bookie))
        other_dead, _ = await write_ledger(bk, 20, 4096, 3)
        bookie.stop()
        (healthy_log,) = set(log_sizes(bookie)) - before

        # No ledgers map (as after a crash) and a negative record size inside the dead ledger's entries: a
        # scan stops there and never sees the live ledger behind it.
        path = current_dir(bookie) / ef.log_file_name(corrupt_log)
        data = bytearray(path.read_bytes())
        data[ef.MAP_LOCATION_OFFSET:ef.MAP_LOCATION_OFFSET + 12] = bytes(12)
        second = list(ef.iter_records(bytes(data)))[1]
        assert second.ledger_id == dead
        data[second.offset:second.offset + 4] = (-7).to_bytes(4, "big", signed=True)
        path.write_bytes(bytes(data))
        # A log with a good ledgers map but a damaged record: found only when compaction reads it.
        path = current_dir(bookie) / ef.log_file_name(mapped_log)
        data = bytearray(path.read_bytes())
        second = list(ef.iter_records(bytes(data)))[1]
        data[second.offset:second.offset + 4] = (-7).to_bytes(4, "big", signed=True)
        path.write_bytes(bytes(data))
        bookie.start()

        for lid in (dead, other_dead, mapped_dead):
            await bk.delete_ledger(lid)
        await gc_now(bookie)
        logs = log_sizes(bookie)
        assert corrupt_log in logs, "quarantined, not deleted as empty"
        assert mapped_log in logs, "compaction failed on it: quarantined, kept"
        assert healthy_log not in logs, "GC went on with the other logs"
        assert await read_all(bk, live) == payloads, "the live entries behind the damage still read back"
        assert await read_all(bk, mapped_live) == mapped_payloads

    report = await explain(bookie)
    verdicts = {e["logId"]: e["verdict"] for e in report["ledgerDirs"][0]["entryLogs"]}
    assert verdicts[f"{corrupt_log:x}"].startswith("quarantined: ")
    assert verdicts[f"{mapped_log:x}"].startswith("quarantined: compaction failed")
    details = (await rest("GET", f"{bookie.http_url}/api/v1/bookie/gc_details"))[0]
    assert not (details["majorCompacting"] or details["minorCompacting"] or details["forceCompacting"]), \
        "a failed compaction never leaves a compacting flag set (BookKeeper #2103)"
    m = await metrics(bookie)
    assert m["bookie_QUARANTINED_ENTRY_LOGS"] == 2
    assert m["bookie_GC_CYCLE_FAILED_TOTAL"] == 0
    assert "QUARANTINED" in bookie.log_path.read_text()
