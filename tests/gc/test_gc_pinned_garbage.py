"""Which ledgers pin the most garbage (``bookie_pinned_garbage_bytes``): every live ledger of a flushed entry
log is charged the log's dead bytes; quarantined logs, logs awaiting deletion and logs without garbage count
for nobody; the ranking is cut at the top N. Topics come from the ledgers' Pulsar metadata, read once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from bookie.gc.explain import PinnedLedger, TopicNames, pinned_garbage
from bookie.gc.metacache import MetaCache
from bookie.gc.state import DirState
from bookie.metadata.ledger_manager import LedgerManager
from bookie.metadata.ledger_metadata import LedgerMetadata
from bookie.metadata.store import MetadataError, NoSuchLedger
from bookie.storage.logmeta import LogMeta


def directory(tmp_path: Path, *logs: LogMeta) -> DirState:
    cache = MetaCache(tmp_path)
    for meta in logs:
        cache.put(meta)
    return cast(DirState, SimpleNamespace(cache=cache))  # the ranking reads only GC's metadata cache


def test_each_live_ledger_is_charged_its_logs_garbage(tmp_path: Path) -> None:
    d = directory(tmp_path,
                  LogMeta(1, 1000, {10: 100, 20: 50}, 1100, 0.0),      # 850 dead: 10 and 20 keep it
                  LogMeta(2, 500, {20: 100}, 550, 0.0),                # 400 dead: 20 keeps it
                  LogMeta(3, 300, {30: 300}, 330, 0.0),                # full: no garbage
                  LogMeta(4, 900, {40: 1}, 950, 0.0, quarantined="unreadable"),
                  LogMeta(5, 900, {50: 1}, 950, 0.0, pending_delete=True))
    assert pinned_garbage([d], 10) == [PinnedLedger(20, 1250, 2), PinnedLedger(10, 850, 1)]
    assert pinned_garbage([d], 1) == [PinnedLedger(20, 1250, 2)]
    assert pinned_garbage([d], 0) == []


class Ledgers:
    """Ledger metadata by id; a ledger may fail once, as a ZooKeeper connection loss does."""

    def __init__(self, metadata: dict[int, dict[str, bytes]], flaky: set[int]) -> None:
        self.metadata, self.flaky, self.reads = metadata, flaky, 0

    async def read_ledger_metadata(self, ledger_id: int) -> Any:
        self.reads += 1
        if ledger_id in self.flaky:
            self.flaky.discard(ledger_id)
            raise MetadataError("connection loss")
        if ledger_id not in self.metadata:
            raise NoSuchLedger(f"ledger {ledger_id}")
        return SimpleNamespace(value=LedgerMetadata(2, 2, 2, {0: ("a", "b")},
                                                    custom_metadata=self.metadata[ledger_id]))


def test_topics_are_read_once_and_failures_retried() -> None:
    pulsar = {"pulsar/managed-ledger": b"public/default/persistent/orders"}
    store = Ledgers({7: pulsar, 8: {"application": b"other"}}, flaky={7})
    topics = TopicNames(cast(LedgerManager, store))

    first = asyncio.run(topics.resolve([7, 8, 9]))
    assert first == {7: None, 8: None, 9: None} and topics.failed == {7}
    assert asyncio.run(topics.resolve([7, 8, 9])) == {7: "persistent://public/default/orders", 8: None, 9: None}
    assert topics.failed == set() and store.reads == 4, "8 and 9 were not read again"
