"""Long polls: ten thousand parked polls from one client leave other clients' reads unaffected, the bookie
refuses polls beyond ``maxParkedLongPolls`` with ETOOMANYREQUESTS (counted in a metric), and the client's
disconnect cancels its parked polls.
"""

from __future__ import annotations

import asyncio
import random

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection
from tests.support.rest import get

POLLS = 10_000
ENTRIES = 5


async def _metric(url: str, name: str) -> float:
    answer = await get(f"{url}/metrics")
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return 0.0


async def _until(url: str, name: str, value: float) -> None:
    for _ in range(300):
        if await _metric(url, name) == value:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} never reached {value} (now {await _metric(url, name)})")


async def _read_all(bookie_id: str, ledger: int) -> list[StatusCode]:
    async with await RawConnection.open(bookie_id) as conn:
        return [(await conn.read(ledger, i)).status for i in range(ENTRIES)]


async def test_parked_long_polls_do_not_block_other_reads(bookie_factory: BookieFactory) -> None:
    # No timeout cap that would end the polls during the test: only the disconnect may.
    bookie = bookie_factory(1, maxParkedLongPolls=POLLS, maxLongPollTimeoutMs=3_600_000)[0]
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(ENTRIES):
            assert (await conn.add(ledger, i)).status == StatusCode.EOK

    poller = await RawConnection.open(bookie.bookie_id)
    # Waiting for an entry far ahead, with a timeout longer than the test: they stay parked.
    polls = [m.ReadRequest(poller.wire(), ledger, 1000, previous_lac=999, timeout_ms=3_600_000)
             for _ in range(POLLS + 1)]
    await poller.send_raw(b"".join(client_codec.encode_request(r) for r in polls))
    await _until(bookie.http_url, "bookie_long_polls_parked", POLLS)
    refused = client_codec.decode_response(await poller.read_frame(60), 3)
    assert refused.status == StatusCode.ETOOMANYREQUESTS, "one poll beyond maxParkedLongPolls"
    assert await _metric(bookie.http_url, "bookie_limit_maxParkedLongPolls_hits_total") == 1

    assert await _read_all(bookie.bookie_id, ledger) == [StatusCode.EOK] * ENTRIES

    await poller.close()
    await _until(bookie.http_url, "bookie_long_polls_parked", 0)
    assert await _read_all(bookie.bookie_id, ledger) == [StatusCode.EOK] * ENTRIES
