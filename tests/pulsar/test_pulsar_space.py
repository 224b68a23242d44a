"""Space Pulsar gives up comes back from the bookies: a deleted topic's ledgers and the ledgers Pulsar's size
retention trims are deleted from the metadata, and a forced GC of every bookie (``PUT /api/v1/bookie/gc``)
shrinks the entry logs on disk; on our bookies the explain endpoint names the topic pinning a log."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from bookie.metadata.store import MetadataStore
from bookie_fleet.pulsar import Producer

from tests.pulsar.conftest import PulsarOnBookies
from tests.support.admin_api import ADMIN_HEADERS

RETAINED_MB = 1


def _rest(method: str, url: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    # Our bookies want the test token for the forced GC; Apache BookKeeper's ignore it.
    request = urllib.request.Request(url, data=data, method=method, headers=ADMIN_HEADERS)
    with urllib.request.urlopen(request, timeout=60) as r:
        text = r.read().decode()
    return json.loads(text) if text.strip() else None


def _force_gc(http_url: str, within: float = 180) -> None:
    """A forced GC cycle, major and minor compaction included, waited for (both implementations' REST API)."""
    _rest("PUT", f"{http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
    deadline = time.monotonic() + within
    while str(_rest("GET", f"{http_url}/api/v1/bookie/gc")["is_in_force_gc"]).lower() == "true":
        assert time.monotonic() < deadline, f"forced GC of {http_url} did not finish in {within} s"
        time.sleep(0.2)


def _entry_log_bytes(ledger_dir: Path) -> int:
    return sum(p.stat().st_size for p in (ledger_dir / "current").glob("*.log"))


async def _existing(pulsar: PulsarOnBookies, ledgers: list[int]) -> list[int]:
    async with MetadataStore(pulsar.bookies.zk_connect, pulsar.bookies.ledgers_root) as store:
        return [lid for lid in ledgers if await store.ledger_exists(lid)]


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def test_deleted_topics_and_trimmed_ledgers_give_the_disk_back(pulsar: PulsarOnBookies) -> None:
    broker = pulsar.broker
    broker.admin("PUT", "namespaces/public/retained")
    broker.admin("POST", "namespaces/public/retained/retention",
                 {"retentionTimeInMinutes": -1, "retentionSizeInMB": RETAINED_MB})
    expiring, doomed = "public/retained/expiring", "public/default/doomed"
    broker.admin("PUT", f"persistent/{doomed}/subscription/keep")
    # ~2.5 MB each, at 500 messages/s: a few messages per batch (entry), 20 entries per ledger, many ledgers.
    # No subscription on the first topic: only retention keeps its messages.
    for topic in (expiring, doomed):
        producer = Producer(broker, topic, 1700, max_size=3000, rate=500)
        producer.finish()
        assert len(producer.acked) == 1700, list(producer.failed.items())[:5]
    doomed_ledgers = broker.ledgers_of(doomed)
    assert len(doomed_ledgers) >= 3
    doomed_bytes = broker.admin("GET", f"persistent/{doomed}/internalStats")["totalSize"]
    written = {b.bookie_id: _entry_log_bytes(b.ledger_dir) for b in pulsar.bookies.bookies}

    if pulsar.kind == "python":  # our explain endpoint names the topic of the ledgers pinning each log
        for bookie in pulsar.bookies.bookies:
            _force_gc(bookie.http_url)  # GC's view of the logs rolled so far
        named = {p.get("topic") for bookie in pulsar.bookies.bookies
                 for d in _rest("GET", f"{bookie.http_url}/api/v1/bookie/entry_logs")["ledgerDirs"]
                 for log in d["entryLogs"] for p in log["pinningLedgers"]}
        assert "persistent://public/default/doomed" in named, named

    # Size retention: Pulsar trims the oldest ledgers until what is left fits the quota (plus the ledger
    # being written), and deletes them from BookKeeper.
    def trimmed() -> bool:
        stats = broker.admin("GET", f"persistent/{expiring}/internalStats")
        return bool(stats["numberOfEntries"] < stats["entriesAddedCounter"]
                    and stats["totalSize"] <= (RETAINED_MB + 2) * 1024 * 1024)
    _wait(trimmed, 120, "size retention to trim the expiring topic")
    kept = broker.ledgers_of(expiring)
    stats = broker.admin("GET", f"persistent/{expiring}/internalStats")
    assert stats["entriesAddedCounter"] - stats["numberOfEntries"] >= 40  # at least two whole ledgers went

    broker.admin("DELETE", f"persistent/{doomed}?force=true")
    _wait(lambda: not asyncio.run(_existing(pulsar, doomed_ledgers)), 60, "the deleted topic's ledgers to go")
    assert asyncio.run(_existing(pulsar, kept)) == kept  # what retention keeps stays

    for bookie in pulsar.bookies.bookies:
        _force_gc(bookie.http_url)
    after = {b.bookie_id: _entry_log_bytes(b.ledger_dir) for b in pulsar.bookies.bookies}
    print(f"entry-log bytes per bookie once written {written}, after GC {after}; "
          f"deleted topic {doomed_bytes} bytes")
    # The deleted topic alone was two copies of doomed_bytes (write quorum 2); only the logs still open
    # (256 KiB each at most) may keep some of it.
    freed = sum(written.values()) - sum(after.values())
    assert freed >= 2 * doomed_bytes - 3 * 256 * 1024, (written, after, doomed_bytes)
