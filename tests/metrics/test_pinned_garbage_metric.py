"""``bookie_pinned_garbage_bytes``: a bookie exports the ledgers keeping the most garbage on its disk (the dead
bytes of the entry logs they still have entries in), ``pinnedGarbageTopLedgers`` of them at most; a real
Prometheus scrapes it and the fleet dashboard's "Pinned garbage by ledger" panel names the ledger."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gc.gcutil import GC_OVERRIDES, client, explain, gc_now, write_ledger
from tests.metrics.fleet_dashboard import panel_queries
from tests.metrics.prometheus import Prometheus, Target
from tests.support.bookies import BookieFactory, BookieSet

ENTRY = 4096


@pytest.fixture
def pinned(bookie_factory: BookieFactory) -> BookieSet:
    # Compaction off: the garbage stays where the live ledgers keep it.
    return bookie_factory(1, **GC_OVERRIDES, minorCompactionThreshold=0.0, majorCompactionThreshold=0.0,
                          pinnedGarbageTopLedgers=1)


@pytest.fixture
def prometheus(pinned: BookieSet, tmp_path: Path) -> Iterator[Prometheus]:
    b = pinned[0]
    server = Prometheus(tmp_path / "prometheus", [Target(f"{b.address}:{b.http_port}", {
        "cluster": "pinned", "kubernetes_pod_name": "pinned-0"})], scrape_interval_s=1).start()
    try:
        yield server
    finally:
        server.stop()


async def test_the_ledger_pinning_the_most_garbage(pinned: BookieSet, prometheus: Prometheus) -> None:
    bookie = pinned[0]
    async with client(pinned) as bk:
        # Two entry logs, each with a small ledger that stays and a larger one that goes: the first log keeps
        # 60 dead entries alive, the second 20.
        most, _ = await write_ledger(bk, 4, ENTRY, 1)
        gone_big, _ = await write_ledger(bk, 60, ENTRY, 2)
        bookie.restart()  # that log is finished
        fewer, _ = await write_ledger(bk, 4, ENTRY, 3)
        gone_small, _ = await write_ledger(bk, 20, ENTRY, 4)
        bookie.restart()
        await bk.delete_ledger(gone_big)
        await bk.delete_ledger(gone_small)
    await gc_now(bookie, major=False, minor=False)  # ledger GC only: the logs stay, their garbage counted
    pins = {p["ledgerId"] for d in (await explain(bookie))["ledgerDirs"] for log in d["entryLogs"]
            for p in log.get("pinningLedgers", ())}
    assert {most, fewer} <= pins, "both keep a log whose other ledger is gone"

    series = 'bookie_pinned_garbage_bytes{cluster="pinned"}'
    deadline = time.monotonic() + 60
    while not prometheus.query(series):
        assert time.monotonic() < deadline, f"no {series}: {prometheus.targets_up()}"
        await asyncio.sleep(1)
    (sample,) = prometheus.query(series)  # pinnedGarbageTopLedgers=1: the other pinning ledger is left out
    assert sample["metric"]["ledger"] == str(most)
    assert "topic" not in sample["metric"], "not a Pulsar ledger"
    assert 60 * ENTRY <= float(sample["value"][1]) < 60 * (ENTRY + 128), "the dead ledger's entries"

    (panel,) = panel_queries("Pinned garbage by ledger", 'cluster=~"pinned"')
    shown = [(s["metric"].get("kubernetes_pod_name"), s["metric"].get("ledger")) for s in prometheus.query(panel)]
    assert shown == [("pinned-0", str(most))]
