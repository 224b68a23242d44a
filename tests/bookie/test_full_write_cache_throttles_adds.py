"""A write cache that stays full holds adds back and then refuses them: an add that finds no room waits for a
checkpoint to swap the caches, at most ``dbStorage_maxThrottleTimeMs``, and is then answered ETOOMANYREQUESTS and
counted in ``bookie_throttled_write_requests``. Every add answered EOK is stored; none is answered twice."""

from __future__ import annotations

import random

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from tests.support.bookies import BookieFactory
from tests.support.raw_client import MASTER_KEY, RawConnection, entry
from tests.support.rest import get

ADDS = 300
PAYLOAD = 64 * 1024  # 300 of them: 19 MiB against a 1 MiB write cache


async def _throttled(url: str) -> float:
    text = (await get(f"{url}/metrics")).text
    return next(s.value for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == "bookie_throttled_write_requests_total")


async def test_adds_beyond_a_full_write_cache_wait_then_are_refused_as_throttled(
        bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, dbStorage_writeCacheMaxSizeMb=1, dbStorage_maxThrottleTimeMs=0)[0]
    ledger = random.randrange(1, 2**40)
    payload = random.randbytes(PAYLOAD)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        assert (await conn.add(ledger, 0, payload)).status == StatusCode.EOK  # creates the ledger
        requests = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, payload))
                    for i in range(1, ADDS)]
        responses = await conn.pipeline(requests, within=120)
        statuses = {r.entry_id: r.status for r in responses}
        assert len(statuses) == ADDS - 1, "one answer per add"
        refused = [i for i, s in statuses.items() if s == StatusCode.ETOOMANYREQUESTS]
        stored = [i for i, s in statuses.items() if s == StatusCode.EOK]
        assert len(refused) + len(stored) == ADDS - 1, f"only EOK or throttled: {set(statuses.values())}"
        assert refused and stored, f"{len(stored)} stored, {len(refused)} refused"
        for i in random.sample(stored, min(20, len(stored))):
            read = await conn.read(ledger, i)
            assert read.status == StatusCode.EOK and read.body == entry(ledger, i, payload)
    assert await _throttled(bookie.http_url) == len(refused)
