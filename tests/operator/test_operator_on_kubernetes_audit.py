"""On the local Kubernetes, the operator runs the storage audit of a live BookieCluster as Spark on Kubernetes
(spark-submit in cluster mode: the driver and executors are pods of the audit image, which read the bookies'
entry logs through their admin API) when the cluster's audit-request annotation asks for a run now, and:

* the run writes the same tables, row for row, as the audit of a copy of the bookies' disks;
* its summary is in status.audit (reclaimable bytes per bookie, the pinning ledgers, data loss and under-
  replication), with Events; the data-loss finding raises a Warning Event and the DataLoss condition;
* the forced compaction of bookies over the bound happens once, after the run;
* the report is in the report store, where a user opens it.

The cluster holds known data: deleted ledgers (garbage), kept ledgers sharing their logs (pinning), a ledger
whose entries also sit on a bookie outside its ensemble (over-replicated), and a ledger with write quorum 3
whose third replica of 10 entries was never written and one entry written nowhere (under-replicated, lost).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_audit.snapshot import export_snapshot
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import audit_builders, builders

from tests.operator.audit_runs import (
    assert_same_tables,
    audit_copies,
    copy_logs,
    entries_on_disk,
    fetch_run,
    ledger_dir,
    pod_ip,
    run_requested_audit,
)
from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    condition,
    get_cluster,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for
from tests.support.spark_jvm import SPARK_TEST_JVM_OPTIONS

raw = importlib.import_module("tests.support.raw_client")

NAME = "au"
ENTRIES = 40
UNDER = 900           # write quorum 3: the third bookie never got entries 0-9, entry 10 is on no bookie
OVER = 901            # ensemble of bookies 0 and 1; its entries also written to bookie 2


async def _write_known_data(kube: KubeTarget, ns: str, zk: str, root: str) -> dict[int, set[tuple[int, int]]]:
    """Returns what each bookie (by ordinal) must hold on disk."""
    ids = [builders.bookie_id(NAME, ns, i) for i in range(3)]
    expected: dict[int, set[tuple[int, int]]] = {0: set(), 1: set(), 2: set()}
    rng = random.Random(5)
    async with BookKeeper(ClientConfig(zk_servers=zk, ledgers_root=root)) as bk:
        handles = [await bk.create_ledger(ensemble_size=3, write_quorum=2, ack_quorum=2) for _ in range(5)]
        for _ in range(ENTRIES):
            for h in handles:
                await h.add(rng.randbytes(rng.randint(500, 3000)))
        for h in handles:
            await h.close()
            ensemble = list((await bk.ledger_metadata(h.ledger_id)).value.ensembles[0])
            for e in range(ENTRIES):
                for i in range(2):
                    expected[ids.index(ensemble[(e + i) % 3])].add((h.ledger_id, e))
        for h in handles[:3]:                      # deleted: garbage in logs the kept ones pin
            await bk.delete_ledger(h.ledger_id)
    store = MetadataStore(zk, root, session_timeout_ms=6000)
    await store.connect()
    conns = {i: await raw.RawConnection.open(f"{pod_ip(kube, ns, builders.pod_name(NAME, i))}:3181")
             for i in range(3)}
    try:
        for lid, ensemble, wq in ((UNDER, ids, 3), (OVER, ids[:2], 2)):
            await store.create_ledger_metadata(lid, LedgerMetadata(
                ensemble_size=len(ensemble), write_quorum_size=wq, ack_quorum_size=wq,
                ensembles={0: tuple(ensemble)}, state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0,
                digest_type=DigestType.CRC32C, password=raw.PASSWORD))
        for e in range(ENTRIES):
            body = raw.entry(UNDER, e, rng.randbytes(800))
            targets = [] if e == 10 else [0, 1] if e < 10 else [0, 1, 2]
            for i in targets:
                assert (await conns[i].add(UNDER, e, body=body)).status == 0
                expected[i].add((UNDER, e))
            body = raw.entry(OVER, e, rng.randbytes(800))
            for i in (0, 1, 2):                         # bookie 2 is not in its ensemble: over-replicated
                assert (await conns[i].add(OVER, e, body=body)).status == 0
                expected[i].add((OVER, e))
    finally:
        for c in conns.values():
            await c.close()
        await store.close()
    return expected


@pytest.mark.timeout(1800)  # Spark on Kubernetes and Spark in this process, on a shared 2-core machine
async def test_operator_runs_the_audit_on_spark_on_kubernetes(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer, audit_cluster_role: str,
        operator_factory: Callable[[str], OperatorProcess], tmp_path: Path) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    audit = {"mode": "full", "executors": 1, "executorMemory": "512m", "driverMemory": "512m", "minAgeDays": 0,
             "jvmOptions": list(SPARK_TEST_JVM_OPTIONS), "compaction": {"enabled": True, "reclaimableGiB": 0.00001}}
    kube.apply(bookie_cluster(NAME, zookeeper.connect_string, root, replicas=3, ensembleSize=3, audit=audit,
                              config={"flushInterval": 500, "logSizeLimit": 256 * 1024},
                              gc={"gcWaitTimeSeconds": 3600, "minorCompactionIntervalSeconds": 3600,
                                  "majorCompactionIntervalSeconds": 86400}), namespace=ns)
    wait_ready(kube, ns, NAME, timeout=240)
    expected = await _write_known_data(kube, ns, zookeeper.connect_string, root)
    dirs = {i: ledger_dir(kube, ns, NAME, i) for i in range(3)}
    wait_for(lambda: all(entries_on_disk(dirs[i]) >= expected[i] for i in range(3)), 60,
             what="every entry checkpointed into the bookies' entry logs")

    # A copy of the disks as the audit will find them: nothing writes until the run's forced compaction.
    ids = [builders.bookie_id(NAME, ns, i) for i in range(3)]
    copies = {str(tmp_path / "copy" / f"b{i}"): f"b{i}" for i in range(3)}
    for i, copy in enumerate(copies):
        copy_logs(dirs[i], Path(copy))

    last = run_requested_audit(kube, ns, NAME, audit)
    obj = get_cluster(kube, ns, NAME)
    assert last["phase"] == "Succeeded", (last, obj["status"]["audit"])
    run = last["id"]
    assert run == audit_builders.run_id(NAME, last["scheduledFor"], on_request=True)
    assert obj["status"]["audit"]["lastRequest"] == last["request"]

    # The summary in status, and what it made the operator do.
    summary = obj["status"]["audit"]["summary"]
    reclaimable = summary["reclaimableBytes"]
    assert sorted(reclaimable) == sorted(ids) and all(v > 0 for v in reclaimable.values())
    assert summary["topPinningLedgers"] and summary["dataLossEntries"] == 1
    assert summary["underReplicatedEntries"] == 10
    lost = condition(obj, "DataLoss")
    assert lost is not None and lost["status"] == "True" and lost["reason"] == "EntriesWithoutReplica"
    assert [e for e in await_events(kube, ns, NAME, "DataLoss") if e["type"] == "Warning"]
    assert sorted(last["compacted"]) == [0, 1, 2]
    assert len(await_events(kube, ns, NAME, "AuditCompaction", at_least=3)) == 3
    assert last["report"].endswith(f"/runs/{run}/report.html")

    # The report store: the run's report and tables.
    report = fetch_run(kube, ns, NAME, run, tmp_path / "live")
    assert "Bookie fleet storage audit" in report
    k8s_summary = json.loads((tmp_path / "live" / "summary.json").read_text())

    # The same audit over the copy of the bookies' disks, with a snapshot of the same (unchanged) metadata.
    store = MetadataStore(zookeeper.connect_string, root, session_timeout_ms=6000)
    await store.connect()
    try:
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()
    await asyncio.to_thread(audit_copies, {p: ids[int(n[1])] for p, n in copies.items()}, tmp_path / "snap",
                            tmp_path / "copy-out", k8s_summary["as_of_ms"])
    remote_roots = {f"bookie+http://{builders.pod_name(NAME, i)}.{builders.headless_service_name(NAME)}.{ns}"
                    f".svc.cluster.local:8080/bookie/ledgers-0": f"b{i}" for i in range(3)}
    assert_same_tables(tmp_path / "live", remote_roots, tmp_path / "copy-out", copies)
