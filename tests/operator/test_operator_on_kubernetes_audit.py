"""On the local Kubernetes, the operator runs the storage audit of a live BookieCluster as Spark on Kubernetes
(spark-submit in cluster mode: the driver and executors are pods of the audit image, which read the bookies'
entry logs through their admin API) and:

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
import datetime as dt
import importlib
import json
import random
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie.storage import entrylog_format as ef
from bookie_audit.files import LogInput
from bookie_audit.run import TABLES, AuditOptions, run_audit
from bookie_audit.snapshot import export_snapshot
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import audit_builders, builders

from tests.operator.conftest import (
    OperatorProcess,
    await_events,
    bookie_cluster,
    condition,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.support.kube import KubeTarget, wait_for

raw = importlib.import_module("tests.support.raw_client")
tables_of = importlib.import_module("tests.pipeline.tables").audit_tables

NAME = "au"
ROLE = "bookie-operator-audit"
ENTRIES = 40
UNDER = 900           # write quorum 3: the third bookie never got entries 0-9, entry 10 is on no bookie
OVER = 901            # ensemble of bookies 0 and 1; its entries also written to bookie 2


def _pod_ip(kube: KubeTarget, ns: str, pod: str) -> str:
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert obj is not None and obj["status"].get("podIP")
    return str(obj["status"]["podIP"])


def _ledger_dir(kube: KubeTarget, ns: str, ordinal: int) -> Path:
    claim = kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/ledgers-0-{NAME}-{ordinal}")
    assert claim is not None
    pv = kube.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
    assert pv is not None
    return Path(pv["spec"]["hostPath"]["path"])


def _entries_on_disk(ledger_dir: Path) -> set[tuple[int, int]]:
    found = set()
    for path in (ledger_dir / "current").glob("*.log"):
        data = path.read_bytes()
        if len(data) < ef.HEADER_SIZE:
            continue
        header = ef.LogHeader.decode(data)
        end = header.ledgers_map_offset if header.has_ledgers_map else len(data)
        found |= {(r.ledger_id, r.entry_id) for r in ef.iter_records(data, ef.HEADER_SIZE, end)}
    return found


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
    conns = {i: await raw.RawConnection.open(f"{_pod_ip(kube, ns, builders.pod_name(NAME, i))}:3181")
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


def _print_spark_logs(kube: KubeTarget, ns: str, run: str) -> None:
    """The submitter's and the driver's output, when a run failed."""
    for pod in kube.pods(ns, f"{audit_builders.AUDIT_RUN_LABEL}={run}"):
        name = pod["metadata"]["name"]
        logs = kube.kubectl("-n", ns, "logs", name, check=False)
        print(f"\n[{name}]\n{logs.stdout[-8000:]}{logs.stderr[-2000:]}")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        return bytes(r.read())


@pytest.fixture
def audit_cluster_role(kube: KubeTarget) -> Iterator[str]:
    """The ClusterRole the operator binds for audit runs (under the operator's default name), removed afterwards:
    cluster-scoped, it outlives the test's namespace, and the chart installed as the README's release
    `bookie-operator` creates one of that name, which Helm would refuse to take over."""
    kube.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(audit_builders.cluster_role(ROLE)))
    try:
        yield ROLE
    finally:
        kube.kubectl("delete", "clusterrole", ROLE, "--ignore-not-found")


@pytest.mark.timeout(1800)  # Spark on Kubernetes and Spark in this process, on a shared 2-core machine
async def test_operator_runs_the_audit_on_spark_on_kubernetes(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer, audit_cluster_role: str,
        operator_factory: Callable[[str], OperatorProcess], tmp_path: Path) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    audit = {"mode": "full", "executors": 1, "executorMemory": "512m", "driverMemory": "512m", "minAgeDays": 0,
             "compaction": {"enabled": True, "reclaimableGiB": 0.00001}}
    kube.apply(bookie_cluster(NAME, zookeeper.connect_string, root, replicas=3, ensembleSize=3, audit=audit,
                              config={"flushInterval": 500, "logSizeLimit": 256 * 1024},
                              gc={"gcWaitTimeSeconds": 3600, "minorCompactionIntervalSeconds": 3600,
                                  "majorCompactionIntervalSeconds": 86400}), namespace=ns)
    wait_ready(kube, ns, NAME, timeout=240)
    expected = await _write_known_data(kube, ns, zookeeper.connect_string, root)
    dirs = {i: _ledger_dir(kube, ns, i) for i in range(3)}
    wait_for(lambda: all(_entries_on_disk(dirs[i]) >= expected[i] for i in range(3)), 60,
             what="every entry checkpointed into the bookies' entry logs")

    # A copy of the disks as the audit will find them: nothing writes until the run's forced compaction.
    copies = {}
    for i in range(3):
        copy = tmp_path / "copy" / f"b{i}"
        shutil.copytree(dirs[i] / "current", copy / "current", ignore=shutil.ignore_patterns("ledgers", "locations"))
        copies[str(copy)] = f"b{i}"

    fire = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
    patch_spec(kube, ns, NAME, {"audit": {**audit, "schedule": f"{fire.minute} {fire.hour} * * *"}})

    def finished() -> dict[str, Any] | None:
        last = get_cluster(kube, ns, NAME).get("status", {}).get("audit", {}).get("lastRun")
        return last if last and last["phase"] != "Running" else None

    last = wait_for(finished, 900, interval=2, what="the audit run finished")
    obj = get_cluster(kube, ns, NAME)
    if last["phase"] != "Succeeded":
        _print_spark_logs(kube, ns, last["id"])
    assert last["phase"] == "Succeeded", (last, obj["status"]["audit"])
    run = last["id"]
    assert run == audit_builders.run_id(NAME, obj["status"]["audit"]["lastScheduleTime"])

    # The summary in status, and what it made the operator do.
    summary = obj["status"]["audit"]["summary"]
    ids = [builders.bookie_id(NAME, ns, i) for i in range(3)]
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
    reports = kube.pods(ns, "app.kubernetes.io/component=reports,app.kubernetes.io/instance=" + NAME)
    base = f"http://{reports[0]['status']['podIP']}:{audit_builders.REPORTS_PORT}/runs/{run}"
    assert b"Bookie fleet storage audit" in _get(f"{base}/report.html")
    live = tmp_path / "live"
    live.mkdir()
    for name in [t for t in TABLES if t not in ("records", "rest_bookies")] + ["summary"]:
        suffix = ".json" if name == "summary" else ".parquet"
        (live / f"{name}{suffix}").write_bytes(_get(f"{base}/{name}{suffix}"))
    k8s_summary = json.loads((live / "summary.json").read_text())

    # The same audit over the copy of the bookies' disks, with a snapshot of the same (unchanged) metadata.
    store = MetadataStore(zookeeper.connect_string, root, session_timeout_ms=6000)
    await store.connect()
    try:
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()
    from bookie_audit.spark import build_session

    def local_audit() -> None:
        spark = build_session("local[2]", app_name="audit-copy", shuffle_partitions=4)
        try:
            run_audit(spark, AuditOptions(logs=[LogInput(p, ids[int(n[1])]) for p, n in copies.items()],
                                          metadata=str(tmp_path / "snap"), out=str(tmp_path / "copy-out"),
                                          mode="full", min_age_days=0, as_of_ms=k8s_summary["as_of_ms"]))
        finally:
            spark.stop()

    await asyncio.to_thread(local_audit)
    remote_roots = {f"bookie+http://{builders.pod_name(NAME, i)}.{builders.headless_service_name(NAME)}.{ns}"
                    f".svc.cluster.local:8080/bookie/ledgers-0": f"b{i}" for i in range(3)}
    got, want = tables_of(live, remote_roots), tables_of(tmp_path / "copy-out", copies)
    for key in ("summary",):  # when each snapshot was taken differs, nothing else may
        got[key] = [json.dumps({k: v for k, v in json.loads(got[key][0]).items() if k != "snapshot_started_ms"})]
        want[key] = [json.dumps({k: v for k, v in json.loads(want[key][0]).items() if k != "snapshot_started_ms"})]
    assert got.keys() == want.keys()
    for table in got:
        assert got[table] == want[table], table
