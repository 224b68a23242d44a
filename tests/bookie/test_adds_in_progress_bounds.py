"""Adds in progress (queued for the journal, not yet durable) are bounded by ``journalQueueSize`` and by
``maxAddsInProgressBytes``: a client pipelining many adds is paused, not refused, and never has more in the
bookie than the bound (sampled from the ``bookie_adds_in_progress`` gauge while its adds run)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from tests.support.bookies import BookieFactory
from tests.support.raw_client import MASTER_KEY, RawConnection, entry
from tests.support.rest import get

ADDS = 400
PAYLOAD = 1024
BOUND = 8


async def _in_progress(url: str) -> float:
    text = (await get(f"{url}/metrics")).text
    return next(s.value for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == "bookkeeper_server_ADD_ENTRY_IN_PROGRESS")


@pytest.mark.parametrize("limit", [{"journalQueueSize": BOUND}, {"maxAddsInProgressBytes": BOUND * PAYLOAD}],
                         ids=["journalQueueSize", "maxAddsInProgressBytes"])
async def test_pipelined_adds_stay_within_the_bound(bookie_factory: BookieFactory, limit: dict[str, Any]) -> None:
    # Slow group commits so that a burst of adds would pile up in the journal queue without the bound.
    bookie = bookie_factory(1, journalMaxGroupWaitMSec=20, **limit)[0]
    ledger = random.randrange(1, 2**40)
    samples: list[float] = []
    async with await RawConnection.open(bookie.bookie_id) as conn:
        requests = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, random.randbytes(PAYLOAD)))
                    for i in range(ADDS)]
        adds = asyncio.create_task(conn.pipeline(requests, within=120))
        while not adds.done():
            samples.append(await _in_progress(bookie.http_url))
        responses = await adds
    assert [r.status for r in responses] == [StatusCode.EOK] * ADDS, "paused, never refused"
    assert max(samples) <= BOUND, f"adds in progress sampled: {sorted(set(samples))}"
    assert max(samples) > 0, "the samples saw the adds in progress"
