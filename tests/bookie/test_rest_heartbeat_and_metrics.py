"""/heartbeat answers OK to any method; /metrics is Prometheus text (read here by prometheus-client's own
parser) counting adds under BookKeeper's names."""

from __future__ import annotations

import random

from prometheus_client.parser import text_string_to_metric_families

from tests.support.bookies import BookieSet
from tests.support.raw_client import RawConnection
from tests.support.rest import call, get


async def test_heartbeat_answers_ok_to_any_method(bookies: BookieSet) -> None:
    for method in ("GET", "PUT", "POST", "DELETE"):
        answer = await call(method, f"{bookies[0].http_url}/heartbeat")
        assert (answer.status, answer.text) == (200, "OK\n")


async def test_metrics_are_prometheus_text_counting_adds(bookies: BookieSet) -> None:
    def adds(text: str) -> float:
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert {"bookkeeper_server_ADD_ENTRY_REQUEST", "bookie_WRITE_BYTES", "bookie_ledgers"} <= families.keys()
        return sum(s.value for s in families["bookkeeper_server_ADD_ENTRY_REQUEST"].samples
                   if s.name == "bookkeeper_server_ADD_ENTRY_REQUEST_count" and s.labels["success"] == "true")

    before = await get(f"{bookies[1].http_url}/metrics")
    assert before.status == 200
    assert before.content_type == "text/plain"
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[1].bookie_id) as conn:
        for i in range(3):
            await conn.add(ledger, i)
    after = await get(f"{bookies[1].http_url}/metrics")
    assert adds(after.text) >= adds(before.text) + 3
