"""``enableStatistics=false`` (BookKeeper's key): the bookie records no latency or size summary on its hot paths
(their counts stay at zero under traffic) and still serves every family, gauges and counters following the
traffic as before."""

from __future__ import annotations

import random

from tests.metrics.exposition import parse
from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection
from tests.support.rest import get


async def test_summaries_stay_empty_and_counters_still_count(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, enableStatistics=False)[0]
    ledger, payload = random.randrange(1, 2**40), b"p" * 1000
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(20):
            await conn.add(ledger, i, payload)
        for i in range(20):
            await conn.read(ledger, i)
    m = parse((await get(f"{bookie.http_url}/metrics")).text)
    for name in ("bookkeeper_server_ADD_ENTRY_REQUEST", "bookkeeper_server_READ_ENTRY_REQUEST",
                 "bookie_journal_JOURNAL_ADD_ENTRY", "bookie_read_entry"):
        assert m.types[name] == "summary"
        assert m.value(f"{name}_count") == 0, f"{name} recorded with statistics off"
    assert m.value("bookie_WRITE_BYTES") >= 20 * 1000
    assert m.value("bookie_READ_BYTES") >= 20 * 1000
    assert m.value("bookie_SERVER_STATUS") == 1
