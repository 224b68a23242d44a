"""Scheduled forced compactions on a live cluster, for our bookies and for Apache BookKeeper's: a schedule
due in the near future compacts the bookies one at a time in ordinal order (each waited on through its
gc_details before the next), records the run in status, and reclaims the space of a deleted ledger while the
kept ledger reads back intact."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    IMPLEMENTATIONS,
    OperatorProcess,
    SmallVolumes,
    as_posted,
    await_events,
    bookie_cluster,
    bookie_status,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for


def used_bytes(path: Path) -> int:
    """Disk blocks taken by the bookie's entry logs (RocksDB's preallocated WAL files are not data)."""
    return sum(f.stat().st_blocks * 512 for f in (path / "current").glob("*.log") if f.is_file())


@pytest.mark.parametrize("implementation", list(IMPLEMENTATIONS))
async def test_scheduled_compaction_runs_bookie_by_bookie_and_reclaims_space(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes], implementation: str) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("bk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "bk", zookeeper.connect_string, root, **IMPLEMENTATIONS[implementation],
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        config={"flushInterval": 500, "journalSyncData": False, "logSizeLimit": 1024 * 1024},
        gc={"gcWaitTimeSeconds": 3600, "minorCompactionIntervalSeconds": 3600,
            "majorCompactionIntervalSeconds": 86400},
        diskPolicy={"forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "bk", timeout=240)

    claims = [f"ledgers-0-bk-{i}" for i in range(3)]
    empty = {c: used_bytes(vols.paths[c]) for c in claims}
    # Two interleaved ledgers on every bookie; deleting one leaves entry logs half garbage.
    payload = os.urandom(32 * 1024)
    async with BookKeeper(ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)) as bk:
        keep = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=3)
        drop = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=3)
        for _ in range(160):
            await keep.add(payload)
            await drop.add(payload)
        await keep.close()
        await drop.close()
        await bk.delete_ledger(drop.ledger_id)
        kept = keep.ledger_id

    wait_for(lambda: [used_bytes(vols.paths[c]) for c in claims]
             if all(used_bytes(vols.paths[c]) > empty[c] + 8 * 1024 * 1024 for c in claims) else None, 30,
             what=f"entry logs flushed to the ledger volumes (empty: {empty})")
    before = {c: used_bytes(vols.paths[c]) for c in claims}

    # A schedule due at the start of the next minute.
    fire = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
    patch_spec(kube, ns, "bk", {"compaction": {"schedule": f"{fire.minute} {fire.hour} * * *",
                                                "bookieTimeoutSeconds": 120}})

    def completed() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        comp = obj["status"].get("compaction", {})
        return obj if comp.get("lastCompletionTime") and comp.get("lastScheduleTime") else None

    obj = wait_for(completed, 240, interval=1, what="the scheduled compaction run to complete")
    assert obj["status"]["compaction"]["lastScheduleTime"] == fire.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert obj["status"]["compaction"]["nextScheduleTime"] > obj["status"]["compaction"]["lastScheduleTime"]
    # The Events follow the status by a request each; a busy API server can take longer than the default 20 s.
    finished = await_events(kube, ns, "bk", "CompactionFinished", at_least=3, timeout=60)
    started = events(kube, ns, "bk", "CompactionStarted")
    order = [e["message"].split(":")[0] for e in as_posted(started)]
    assert order == ["bk-0", "bk-1", "bk-2"]
    assert len(finished) == 3
    # One at a time: each bookie started after the previous one finished (a compaction can take under a second).
    steps = [(e["reason"], e["message"].split(":")[0]) for e in as_posted(started + finished)]
    assert steps == [("CompactionStarted", "bk-0"), ("CompactionFinished", "bk-0"),
                     ("CompactionStarted", "bk-1"), ("CompactionFinished", "bk-1"),
                     ("CompactionStarted", "bk-2"), ("CompactionFinished", "bk-2")]
    for i in range(3):
        assert bookie_status(obj, i)["lastCompactionTime"]

    after = {c: used_bytes(vols.paths[c]) for c in claims}
    for c in claims:
        assert after[c] < before[c] * 0.75, f"{c}: {before[c]} -> {after[c]} bytes, space not reclaimed"

    # The kept ledger is intact after compaction.
    async with BookKeeper(ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=root)) as bk:
        reader = await bk.open_ledger(kept)
        entries = await reader.read(0, 159)
        assert len(entries) == 160 and all(e.payload == payload for e in entries)
