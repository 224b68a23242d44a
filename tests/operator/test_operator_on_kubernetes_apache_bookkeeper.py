"""The same operator drives Apache BookKeeper's Java bookies (image apache/bookkeeper, mapped by the pod
runner to the Java bookie from Maven Central): read-only control from disk usage, and scheduled forced
compactions that run one bookie at a time and reclaim the space of deleted ledgers."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    SmallVolumes,
    bookie_cluster,
    bookie_status,
    condition,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for

JAVA = {"implementation": "apache-bookkeeper", "image": "apache/bookkeeper:4.17.3"}


def used_bytes(path: Path) -> int:
    """Disk blocks taken by the bookie's entry logs (RocksDB's preallocated WAL files are not data)."""
    return sum(f.stat().st_blocks * 512 for f in (path / "current").glob("*.log") if f.is_file())


def test_java_bookie_with_a_full_disk_goes_read_only_and_back(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("jbk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "jbk", zookeeper.connect_string, root, **JAVA,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        diskPolicy={"readOnlyHighWaterMark": 0.5, "writableLowWaterMark": 0.3, "forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "jbk", timeout=240)
    ballast = vols.fill("ledgers-0-jbk-2", 0.6)

    def state(want: str) -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "jbk")
        return obj if bookie_status(obj, 2)["state"] == want else None

    obj = wait_for(lambda: state("ReadOnly"), 30, interval=0.2, what="Java bookie 2 read-only")
    assert bookie_status(obj, 2)["readOnlyReason"].startswith("operator: disk")
    pressure = condition(obj, "DiskPressure")
    assert pressure is not None and pressure["status"] == "True"
    assert events(kube, ns, "jbk", "BookieReadOnly")
    ballast.unlink()
    wait_for(lambda: state("Writable"), 30, interval=0.2, what="Java bookie 2 writable again")
    assert events(kube, ns, "jbk", "BookieWritable")


async def test_scheduled_compaction_runs_bookie_by_bookie_and_reclaims_space(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess],
        small_ledger_volumes: Callable[[str, int, int], SmallVolumes], cluster_dns: None) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    vols = small_ledger_volumes("jbk", 3, 256)
    operator_factory(ns)
    kube.apply(bookie_cluster(
        "jbk", zookeeper.connect_string, root, **JAVA,
        storage={"ledgers": {"size": "256Mi", "storageClassName": vols.storage_class}},
        config={"flushInterval": 500, "journalSyncData": False, "logSizeLimit": 1024 * 1024},
        gc={"gcWaitTimeSeconds": 3600, "minorCompactionIntervalSeconds": 3600,
            "majorCompactionIntervalSeconds": 86400},
        diskPolicy={"forceCompactionRatio": 0.95}),
        namespace=ns)
    wait_ready(kube, ns, "jbk", timeout=240)

    claims = [f"ledgers-0-jbk-{i}" for i in range(3)]
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
    patch_spec(kube, ns, "jbk", {"compaction": {"schedule": f"{fire.minute} {fire.hour} * * *",
                                                "bookieTimeoutSeconds": 120}})

    def completed() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "jbk")
        comp = obj["status"].get("compaction", {})
        return obj if comp.get("lastCompletionTime") and comp.get("lastScheduleTime") else None

    obj = wait_for(completed, 240, interval=1, what="the scheduled compaction run to complete")
    assert obj["status"]["compaction"]["lastScheduleTime"] == fire.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert obj["status"]["compaction"]["nextScheduleTime"] > obj["status"]["compaction"]["lastScheduleTime"]
    started = [e for e in events(kube, ns, "jbk", "CompactionStarted")]
    finished = [e for e in events(kube, ns, "jbk", "CompactionFinished")]
    order = [e["message"].split(":")[0] for e in sorted(started, key=lambda e: e["firstTimestamp"])]
    assert order == ["jbk-0", "jbk-1", "jbk-2"]
    assert len(finished) == 3
    # One at a time: each bookie started after the previous one finished.
    times = sorted([(e["firstTimestamp"], e["reason"], e["message"].split(":")[0]) for e in started + finished])
    assert [(r, p) for _, r, p in times] == [("CompactionStarted", "jbk-0"), ("CompactionFinished", "jbk-0"),
                                             ("CompactionStarted", "jbk-1"), ("CompactionFinished", "jbk-1"),
                                             ("CompactionStarted", "jbk-2"), ("CompactionFinished", "jbk-2")]
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
