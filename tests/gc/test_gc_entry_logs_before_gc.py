"""``GET /api/v1/bookie/entry_logs`` answers for every entry log on disk, not only for those a GC cycle has
read: logs written since are read on demand (ledgers map, or a throttled scan), off the event loop, and the
figures are the ones the next GC cycle then computes."""

from __future__ import annotations

import asyncio
from typing import Any

from bookie.storage import entrylog_format as ef

from tests.gc.gcutil import GC_OVERRIDES, client, current_dir, explain, gc_now, metrics, rest, write_ledger
from tests.support.bookies import BookieFactory


async def _disk_logs(http_url: str) -> set[str]:
    files = await rest("GET", f"{http_url}/api/v1/bookie/list_disk_file?file_type=entrylog")
    return {name for name in files["entrylog files"].split("\t") if name}


def _by_file(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["file"].rsplit("/", 1)[1]: e for e in report["ledgerDirs"][0]["entryLogs"]}


def _figures(entry: dict[str, Any]) -> tuple[Any, ...]:
    pinning = tuple((p["ledgerId"], p["bytes"]) for p in entry["pinningLedgers"])
    return entry["totalBytes"], entry["remainingBytes"], entry["usage"], entry["liveLedgerCount"], pinning


async def test_every_log_listed_before_any_gc_cycle(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)  # gcWaitTime 10 min: no cycle during the test
    bookie = cluster[0]
    async with client(cluster) as bk:
        written = [await write_ledger(bk, 90, 8192, seed) for seed in range(4)]
    await asyncio.sleep(1.5)  # past a checkpoint: every entry in an entry log

    on_disk = await _disk_logs(bookie.http_url)
    report = await explain(bookie)
    assert (await metrics(bookie))["bookie_GC_CYCLE_TOTAL"] == 0, "no GC cycle ran before the request"
    listed = _by_file(report)
    assert len(on_disk) >= 3 and set(listed) == on_disk, "every entry log on disk is in the answer"
    active = [name for name, e in listed.items() if e["active"]]
    assert active == [f"{report['ledgerDirs'][0]['activeLogId']}.log"], "the active log is listed as active"
    flushed = {name: e for name, e in listed.items() if not e["active"]}
    assert all(e["figures"]["state"] == "fresh" for e in flushed.values()), "read for this request"
    assert all(e["metadataFrom"] == "ledgers map" for e in flushed.values())
    pinned = {p["ledgerId"] for e in listed.values() for p in e["pinningLedgers"]}
    assert pinned == {lid for lid, _ in written}, "every ledger written pins some log"
    gauges = await metrics(bookie)  # from the same metadata, cached by the request
    assert gauges["bookie_ACTIVE_ENTRY_LOG_TOTAL"] == len(flushed)
    assert gauges["bookie_ACTIVE_ENTRY_LOG_SPACE_BYTES"] == sum(e["remainingBytes"] for e in flushed.values())
    assert gauges["bookie_OLDEST_ENTRY_LOG_AGE_SECONDS"] > 0

    await gc_now(bookie, major=False, minor=False)  # entry-log GC only: no log is compacted
    after = _by_file(await explain(bookie))
    assert set(after) == on_disk, "nothing deleted: every ledger is live"
    for name, entry in flushed.items():
        assert after[name]["figures"]["state"] == "lastGcCycle"
        assert _figures(after[name]) == _figures(entry), f"{name}: the cycle computes what the answer said"


def _strip_ledgers_map(path: Any) -> None:
    """Make a finalized log look like one a crash left behind: no ledgers map, it must be scanned."""
    with open(path, "r+b") as f:
        f.seek(ef.MAP_LOCATION_OFFSET)
        f.write(ef.encode_map_location(0, 0))


async def test_request_during_a_large_extraction_blocks_nothing(bookie_factory: BookieFactory) -> None:
    # Scans at 256 KiB/s: reading ~4 MiB of logs without maps takes ~16 s, longer than the endpoint waits.
    cluster = bookie_factory(1, **{**GC_OVERRIDES, "compactionReadRateByBytes": 256 * 1024})
    bookie = cluster[0]
    async with client(cluster) as bk:
        for seed in range(4):
            await write_ledger(bk, 130, 8192, seed)
    bookie.stop()
    logs = sorted(p for p in current_dir(bookie).iterdir() if ef.parse_log_file_name(p.name) is not None)
    for path in logs:
        _strip_ledgers_map(path)
    (current_dir(bookie) / "gc-entrylog-meta.json").unlink(missing_ok=True)
    bookie.start()  # start-up reads every log in the background: a large, throttled extraction

    pending = asyncio.create_task(explain(bookie))
    await asyncio.sleep(0.5)
    for _ in range(5):  # other requests are answered meanwhile
        await rest("GET", f"{bookie.http_url}/api/v1/bookie/info")
    async with client(cluster) as bk:  # and adds complete
        _, payloads = await write_ledger(bk, 20, 1024, 9)
    assert len(payloads) == 20
    assert not pending.done(), "the explain request was still waiting for the extraction"
    report = await pending
    states = [e["figures"]["state"] for e in report["ledgerDirs"][0]["entryLogs"] if not e["active"]]
    unknown = [e for e in report["ledgerDirs"][0]["entryLogs"] if e["figures"]["state"] == "unknown"]
    assert unknown and all("under way" in e["figures"]["why"] for e in unknown), states
    assert len(report["ledgerDirs"][0]["entryLogs"]) >= len(logs), "not yet known logs are listed too"

    for _ in range(120):  # once the extraction is over, every log is known
        report = await explain(bookie)
        if all(e["figures"]["state"] != "unknown" for e in report["ledgerDirs"][0]["entryLogs"]):
            break
    else:
        raise AssertionError("metadata of every log known after the extraction")
    scanned = [e for e in report["ledgerDirs"][0]["entryLogs"] if not e["active"]]
    assert len(scanned) >= len(logs) and all(e["metadataFrom"] == "scan" for e in scanned[:len(logs)])
