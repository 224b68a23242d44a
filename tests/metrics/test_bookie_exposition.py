"""/metrics of our bookie in Apache BookKeeper's format: the dashboards' families with BookKeeper's types and
labels, counters without an added ``_total``, summaries whose counts follow the requests; the same text on
the dedicated port (prometheusStatsHttpEnable)."""

from __future__ import annotations

import asyncio
import random

from tests.metrics.exposition import Exposition, parse
from tests.metrics.minimum_set import MINIMUM_SET
from tests.support.bookies import BookieFactory, BookieSet
from tests.support.raw_client import RawConnection
from tests.support.rest import get


async def scrape(url: str) -> Exposition:
    answer = await get(f"{url}/metrics")
    assert answer.status == 200
    assert answer.content_type == "text/plain"
    return parse(answer.text)


async def test_dashboard_families_with_bookkeepers_types_and_labels(bookies: BookieSet) -> None:
    m = await scrape(bookies[0].http_url)
    for name, kind in MINIMUM_SET.items():
        assert m.types.get(name) == kind, f"{name}: {m.types.get(name)} instead of {kind}"
    assert not [n for n in m.types if n.endswith(("_total_total", "_TOTAL_total", "_BYTES_total"))]
    assert m.value("bookie_SERVER_STATUS") == 1
    quantiles = {lab["quantile"] for lab in m.label_sets("bookkeeper_server_ADD_ENTRY_REQUEST")}
    assert quantiles == {"0.5", "0.75", "0.95", "0.99", "0.999", "0.9999", "1.0"}
    assert {lab["success"] for lab in m.label_sets("bookkeeper_server_ADD_ENTRY_REQUEST_count")} == {"true", "false"}
    assert {"threadPool", "thread"} <= m.label_sets("bookkeeper_server_ADD_ENTRY_count")[0].keys()
    assert m.label_sets("bookie_journal_JOURNAL_SYNC_count")[0]["journalIndex"] == "0"
    dirs = m.label_sets("bookie_write_cache_size")[0]
    assert dirs["ledgerDir"].endswith("/current") and dirs["indexDir"].endswith("/current")
    assert "process_cpu_seconds_total" in {n for n, _, _ in m.samples}
    assert m.value("bookie_entry_log_age_seconds_count") >= 0, "our own families are there too"


async def test_request_summaries_and_bytes_follow_the_traffic(bookies: BookieSet) -> None:
    url = bookies[1].http_url
    before = await scrape(url)
    ledger, payload = random.randrange(1, 2**40), b"p" * 1000
    async with await RawConnection.open(bookies[1].bookie_id) as conn:
        for i in range(20):
            await conn.add(ledger, i, payload)
        for i in range(20):
            await conn.read(ledger, i)
        await conn.read(ledger, 99)  # no such entry: a failed read
    after = await scrape(url)

    def grew(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert grew("bookkeeper_server_ADD_ENTRY_REQUEST_count", success="true") >= 20
    assert grew("bookkeeper_server_ADD_ENTRY_count", success="true") >= 20
    assert grew("bookkeeper_server_READ_ENTRY_REQUEST_count", success="true") >= 20
    assert grew("bookkeeper_server_READ_ENTRY_REQUEST_count", success="false") >= 1
    assert grew("bookkeeper_server_ADD_ENTRY_REQUEST_sum", success="true") > 0, "milliseconds, not zero"
    assert grew("bookie_WRITE_BYTES") >= 20 * 1000
    assert grew("bookie_READ_BYTES") >= 20 * 1000
    assert grew("bookie_journal_JOURNAL_ADD_ENTRY_count", success="true") >= 20
    assert grew("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES_sum", success="true") >= 20


async def test_flush_summaries_count_the_checkpoints_that_wrote_entries(bookies: BookieSet) -> None:
    url, ledger, payload = bookies[2].http_url, random.randrange(1, 2**40), b"f" * 1000
    before = await scrape(url)
    async with await RawConnection.open(bookies[2].bookie_id) as conn:
        for i in range(20):
            await conn.add(ledger, i, payload)
    flushed = before.value("bookie_flush_size_sum", success="true") + 20 * 1000
    for _ in range(300):  # the next checkpoint (flushInterval) writes them
        after = await scrape(url)
        if after.value("bookie_flush_size_sum", success="true") >= flushed:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("no checkpoint flushed the 20 entries' bytes within 30 s: "
                             f"{after.value('bookie_flush_size_sum', success='true')} bytes flushed")
    for name in ("bookie_flush", "bookie_flush_entrylog", "bookie_flush_locations_index", "bookie_flush_ledger_index"):
        assert after.value(f"{name}_count", success="true") > before.value(f"{name}_count", success="true"), name
        assert after.value(f"{name}_sum", success="true") > before.value(f"{name}_sum", success="true"), \
            f"{name}: milliseconds, not zero"
    assert after.value("bookie_flush_count", success="false") == 0
    assert {"ledgerDir", "indexDir", "success"} <= after.label_sets("bookie_flush_count")[0].keys()


async def test_dedicated_port_serves_the_same_families(bookie_factory: BookieFactory) -> None:
    from bookie_fleet.local_bookies import start_all
    from bookie_fleet.processes import free_port

    bookie = bookie_factory(1, start=False)[0]
    port = free_port(bookie.address)
    bookie.overrides.update(prometheusStatsHttpEnable=True, prometheusStatsHttpPort=port,
                            prometheusStatsHttpAddress=bookie.address, prometheusStatsLatencyRolloverSeconds=1)
    start_all([bookie], 90)
    dedicated = await scrape(f"http://{bookie.address}:{port}")
    admin = await scrape(bookie.http_url)
    assert dedicated.types == admin.types
