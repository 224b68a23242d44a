"""A serving bookie keeps the interpreter's cycle collector out of its add path: its start-up heap is frozen
(never walked again) and a young-generation collection runs once per many thousand new objects, so thousands
of pipelined adds cost a handful of collections, and not one full collection."""

from __future__ import annotations

import random

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.metrics.exposition import parse
from tests.support.bookies import BookieFactory
from tests.support.raw_client import MASTER_KEY, RawConnection, entry
from tests.support.rest import get

ADDS = 6000
BATCH = 500


def collections(text: str) -> dict[str, float]:
    exposition = parse(text)
    return {gen: exposition.value("python_gc_collections_total", generation=gen) for gen in ("0", "1", "2")}


async def test_thousands_of_adds_cost_a_handful_of_collections(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    ledger, payload = random.randrange(1, 2**40), b"h" * 1000
    before = collections((await get(f"{bookie.http_url}/metrics")).text)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for first in range(0, ADDS, BATCH):
            requests = [m.AddRequest(conn.wire(), ledger, e, MASTER_KEY, entry(ledger, e, payload))
                        for e in range(first, first + BATCH)]
            answers = await conn.pipeline(requests)
            assert {a.status for a in answers} == {StatusCode.EOK}
    after = collections((await get(f"{bookie.http_url}/metrics")).text)
    young = after["0"] - before["0"]
    # CPython's default threshold (700 objects) gives one young collection per 40-50 adds here: over 120.
    assert young <= ADDS // 300, f"{young} young-generation collections for {ADDS} adds"
    assert after["2"] == before["2"], "a full collection ran during the adds"
