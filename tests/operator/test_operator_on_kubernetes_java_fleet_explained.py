"""On the local Kubernetes, a BookieCluster of Apache BookKeeper's bookies gets the answers our bookies give, through
the inspector the operator runs beside each: a real Pulsar broker writes three topics, two expire and are deleted,
and the disks stay full;

* each inspector's explain endpoint lists every entry log on its bookie's disk, with the figures the audit of a
  copy of that disk finds, and names the remaining topic as the one whose ledgers pin them, as
  ``bookie_pinned_garbage_bytes`` does;
* the operator's scheduled audit (spec.audit, Spark on Kubernetes) reads the logs through the inspectors and
  writes the full report: the same tables, row for row, as the audit of the copy, its pinning naming the topic;
* a real Prometheus scraping the pods as the chart's PodMonitor says (its jobs as prometheus-operator makes them,
  the pods listed from the API server as its pod discovery would find them) gets ``bookie_pinned_garbage_bytes``
  naming the topic from each inspector and Apache BookKeeper's own series from each bookie, under the chart's job
  and cluster labels, so the same dashboards and alerts read both implementations;
* the inspector's ledger volume is read-only in its container (a write there fails), while the bookie's is not.

The cluster has ``spec.tls.admin``: the inspectors serve their API over HTTPS only (the explain calls here and the
audit's reads verify it against the Secret's CA and the pod's DNS name), while the Java bookies' own admin servers
stay on HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import trustme
from bookie.metadata.store import MetadataStore
from bookie_audit.snapshot import export_snapshot
from bookie_fleet.workload import BROKER_SETTINGS, EXPIRING, KEPT, PulsarWorkload, topic_name
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import builders
from bookie_operator.models import INSPECTOR_METRICS_PORT, INSPECTOR_PORT

from tests.metrics.alerts import render_chart
from tests.metrics.podmonitor import scrape_jobs
from tests.metrics.prometheus import Prometheus
from tests.operator.audit_runs import (
    assert_same_tables,
    audit_copies,
    copy_logs,
    fetch_run,
    ledger_dir,
    pod_ip,
    run_requested_audit,
)
from tests.operator.conftest import JAVA, OperatorProcess, bookie_cluster, get_cluster, wait_ready
from tests.support.certificates import issued, tls_secret
from tests.support.kube import KubeTarget, wait_for
from tests.support.live_entry_logs import unfinished_logs
from tests.support.ociimage import runc_pid
from tests.support.spark_jvm import SPARK_TEST_JVM_OPTIONS

NAME = "jf"
ORDERS = topic_name(next(iter(KEPT)))
# Every entry on all three bookies (Pulsar's default ensemble is 2 of them): each bookie's disk then holds the
# expired topics' garbage, whichever bookies Pulsar would have picked for them.
EVERY_BOOKIE = {**BROKER_SETTINGS, "managedLedgerDefaultEnsembleSize": 3, "managedLedgerDefaultWriteQuorum": 3,
                "managedLedgerDefaultAckQuorum": 2}
AUDIT = {"mode": "full", "executors": 1, "executorMemory": "512m", "driverMemory": "512m", "minAgeDays": 0,
         "jvmOptions": list(SPARK_TEST_JVM_OPTIONS)}


def _token(kube: KubeTarget, ns: str) -> str:
    secret = kube.get(f"/api/v1/namespaces/{ns}/secrets/{builders.admin_token_secret_name(NAME)}")
    assert secret is not None
    return base64.b64decode(secret["data"][builders.ADMIN_TOKEN_KEY]).decode().strip()


def _get(url: str, token: str | None = None) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=60) as r:
        return str(r.read().decode())


class _VerifiedByName(http.client.HTTPSConnection):
    """HTTPS to a pod's IP, its certificate verified against the DNS name the audit uses (the certificate names the
    headless Service's hosts, not the pods' IPs)."""

    def __init__(self, ip: str, port: int, name: str, context: ssl.SSLContext) -> None:
        super().__init__(ip, port, timeout=60, context=context)
        self._name, self._context = name, context

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self._name)


def _get_inspector(ip: str, name: str, path: str, token: str, context: ssl.SSLContext) -> str:
    conn = _VerifiedByName(ip, INSPECTOR_PORT, name, context)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        answer = conn.getresponse()
        assert answer.status == 200, (path, answer.status)
        return answer.read().decode()
    finally:
        conn.close()


def _settled(dirs: dict[int, Path]) -> bool:
    """Nothing changed in the entry logs for two seconds and each ends on a whole record: the bookies flushed what
    they had. (In a CI-like run the copy's audit once flagged a corrupt and a truncated span the live audit did
    not: most likely a log copied part-way through a write, which two quiet seconds alone did not rule out.)"""
    def state() -> list[tuple[str, int, int]]:
        return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for d in dirs.values()
                      for p in (d / "current").glob("*.log"))
    before = state()
    time.sleep(2)
    return before == state() and not any(unfinished_logs(d) for d in dirs.values())


@pytest.mark.timeout(1800)  # a Pulsar broker, three JVM bookies, Spark on Kubernetes and Spark here, on 2 cores
async def test_java_fleet_explained_and_audited_through_inspectors(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer, audit_cluster_role: str,
        operator_factory: Callable[[str], OperatorProcess], tmp_path: Path) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    admin_ca = trustme.CA()
    cert, key = issued(admin_ca, f"*.{builders.headless_service_name(NAME)}.{ns}.svc.cluster.local")
    kube.apply([tls_secret(f"{NAME}-admin-tls", cert, key, admin_ca.cert_pem.bytes(), cluster=NAME)], namespace=ns)
    context = ssl.create_default_context(cadata=admin_ca.cert_pem.bytes().decode())
    kube.apply(bookie_cluster(NAME, zookeeper.connect_string, root, **JAVA, replicas=3, ensembleSize=3, audit=AUDIT,
                              tls={"admin": {"secretName": f"{NAME}-admin-tls"}},
                              config={"flushInterval": 500, "logSizeLimit": 512 * 1024},
                              gc={"gcWaitTimeSeconds": 3600, "minorCompactionIntervalSeconds": 3600,
                                  "majorCompactionIntervalSeconds": 86400}), namespace=ns)
    wait_ready(kube, ns, NAME, timeout=300)
    pods = [builders.pod_name(NAME, i) for i in range(3)]
    for pod in pods:
        obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
        assert obj is not None and [c["name"] for c in obj["spec"]["containers"]] == ["bookie", "inspector"]
    _inspector_volume_is_read_only(kube, ns, pods[0])

    workload = PulsarWorkload(tmp_path / "pulsar", zookeeper.connect_string, root, chroot=f"/pulsar-{ns}",
                              broker_settings=EVERY_BOOKIE)
    try:
        await asyncio.to_thread(workload.start)
        workload.produce(600_000, 4096)
        await asyncio.sleep(12)
        assert await asyncio.to_thread(workload.stop_producing) > 0
        expired = await asyncio.to_thread(workload.expire)
        deleted = expired + await asyncio.to_thread(workload.delete_expired_topics)
    finally:
        await asyncio.to_thread(workload.close)   # nothing writes from here on: the disks hold still
    store = MetadataStore(zookeeper.connect_string, root, session_timeout_ms=6000)
    await store.connect()
    try:
        for lid in deleted:
            await _wait_deleted(store, lid)
        await export_snapshot(store, str(tmp_path / "snap"))
    finally:
        await store.close()
    dirs = {i: ledger_dir(kube, ns, NAME, i) for i in range(3)}
    await asyncio.to_thread(wait_for, lambda: _settled(dirs), 60, 0.1, "the bookies' entry logs settled")
    ids = [builders.bookie_id(NAME, ns, i) for i in range(3)]
    copies = {str(tmp_path / "copy" / f"b{i}"): f"b{i}" for i in range(3)}
    for i, copy in enumerate(copies):
        copy_logs(dirs[i], Path(copy))

    token = _token(kube, ns)
    hosts = [f"{pod}.{builders.headless_service_name(NAME)}.{ns}.svc.cluster.local" for pod in pods]
    ips = [pod_ip(kube, ns, pod) for pod in pods]
    with pytest.raises((http.client.HTTPException, OSError)):   # HTTPS only: a plain request gets no answer
        _get(f"http://{ips[0]}:{INSPECTOR_PORT}/api/v1/bookie/entry_logs", token)

    last = await asyncio.to_thread(run_requested_audit, kube, ns, NAME, AUDIT)
    assert last["phase"] == "Succeeded", (last, get_cluster(kube, ns, NAME)["status"].get("audit"))
    report = await asyncio.to_thread(fetch_run, kube, ns, NAME, last["id"], tmp_path / "live")
    assert ORDERS in report, "the report names the topic pinning the logs"
    top = get_cluster(kube, ns, NAME)["status"]["audit"]["summary"]["topPinningLedgers"]
    print(f"top pinning ledgers: {top}")
    assert _topic(top[0]) == ORDERS, "the ledger pinning the most garbage is the kept topic's"
    assert {_topic(p) for p in top} <= {ORDERS, None}, "no deleted topic pins anything"

    # The audit of the copy, as of the cluster's run (ages are in the tables; sizes do not depend on it): the
    # explain endpoints must give its figures, log by log, and the cluster's audit its tables, row for row.
    as_of = json.loads((tmp_path / "live" / "summary.json").read_text())["as_of_ms"]
    await asyncio.to_thread(audit_copies, {p: ids[int(n[1])] for p, n in copies.items()}, tmp_path / "snap",
                            tmp_path / "copy-out", as_of)
    print(f"copy audit: {(tmp_path / 'copy-out' / 'summary.json').read_text()}")
    usage = {(r["bookie"], int(r["log_id"])): r
             for r in pq.read_table(tmp_path / "copy-out" / "usage_logs.parquet").to_pylist()}
    named = set().union(*(_explains_like_the_audit(ips[i], hosts[i], token, context, ids[i], dirs[i], usage)
                          for i in range(3)))
    assert ORDERS in named, "the explain endpoints name the kept topic (its ledgers are on two of the bookies)"
    await asyncio.to_thread(_scraped_through_the_chart_podmonitor, kube, ns, tmp_path / "prometheus")

    remote_roots = {f"bookie+https://{hosts[i]}:{INSPECTOR_PORT}/bookie/ledgers-0": f"b{i}" for i in range(3)}
    assert_same_tables(tmp_path / "live", remote_roots, tmp_path / "copy-out", copies)



def _scraped_through_the_chart_podmonitor(kube: KubeTarget, ns: str, data_dir: Path) -> None:
    """Prometheus with the chart's PodMonitor for this namespace: three inspectors and three Java bookies up, the
    pinned-garbage series naming the kept topic, Java's own status series, all under job "bookie"."""
    (monitor,) = [d for d in render_chart("monitoring.podMonitor.enabled=true", "monitoring.podMonitor.interval=1s",
                                          f"watchNamespaces[0]={ns}") if d["kind"] == "PodMonitor"]
    monitor["metadata"]["namespace"] = ns

    def no_secret(namespace: str, name: str, key: str) -> str:
        raise AssertionError(f"the PodMonitor asks for Secret {namespace}/{name} without a tokenSecret")

    def pods(namespace: str) -> list[dict[str, Any]]:
        return list(kube.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"])

    prometheus = Prometheus(data_dir, [], jobs=scrape_jobs(monitor, pods, no_secret)).start()
    try:
        def every_target_up() -> dict[str, str] | None:
            health = prometheus.targets_up()
            return health if len(health) == 6 and all(h == "up" for h in health.values()) else None

        health = wait_for(every_target_up, 120, 1, "the PodMonitor's six targets up")
        assert {u.rsplit(":", 1)[1] for u in health} == {f"{INSPECTOR_METRICS_PORT}/metrics", "8080/metrics"}
        pinned = wait_for(lambda: prometheus.query(
            f'bookie_pinned_garbage_bytes{{job="bookie",cluster="{NAME}",topic="{ORDERS}"}}') or None,
            60, 1, "the kept topic's pinned garbage in Prometheus")
        assert {s["metric"]["container"] for s in pinned} == {"inspector"}
        status = prometheus.query(f'bookie_SERVER_STATUS{{job="bookie",cluster="{NAME}",container="bookie"}}')
        assert {s["metric"]["kubernetes_pod_name"] for s in status} == {builders.pod_name(NAME, i) for i in range(3)}
        expired = "|".join(topic_name(t) for t in EXPIRING)
        assert not prometheus.query(f'bookie_pinned_garbage_bytes{{topic=~".*({expired})"}}')
    finally:
        prometheus.stop()


def _topic(pin: dict[str, Any]) -> str | None:
    """The topic of a pinning ledger (its cursor's too); None for a ledger Pulsar wrote without a topic (its
    system topics', say), or that the audit could not name."""
    topic = pin.get("topic")
    if not topic or "/__" in topic:
        return None
    return str(topic).split(" (cursor")[0]


async def _wait_deleted(store: MetadataStore, ledger_id: int) -> None:
    for _ in range(240):
        if not await store.ledger_exists(ledger_id):
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"Pulsar did not delete ledger {ledger_id}")


def _inspector_volume_is_read_only(kube: KubeTarget, ns: str, pod: str) -> None:
    """A write into the ledger volume fails from the inspector's container and succeeds from the bookie's."""
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert obj is not None and kube.local is not None
    ids = {s["name"]: s["containerID"] for s in obj["status"]["containerStatuses"]}
    for container, allowed in (("inspector", False), ("bookie", True)):
        pid = runc_pid(kube.local.state_dir / "runner", ids[container])
        probe = f"/bookie/ledgers-0/write-probe-{container}"
        done = subprocess.run(["nsenter", "-t", str(pid), "-m", "--", "sh", "-c", f"echo x > {probe} && rm {probe}"],
                              capture_output=True, text=True, check=False)
        assert (done.returncode == 0) is allowed, (container, done.stderr)
        if not allowed:
            assert "Read-only file system" in done.stderr, done.stderr


def _explains_like_the_audit(ip: str, host: str, token: str, context: ssl.SSLContext, bookie: str, ledger_dir: Path,
                             usage: dict[tuple[str, int], Any]) -> set[str | None]:
    """Checks one inspector's answer against the audit of the copy; returns the topics pinning its logs."""
    answer = json.loads(_get_inspector(ip, host, "/api/v1/bookie/entry_logs", token, context))
    assert answer["bookieId"] == bookie
    (d,) = answer["ledgerDirs"]
    on_disk = {int(p.stem, 16) for p in (ledger_dir / "current").glob("*.log")}
    logs = {int(e["logId"], 16): e for e in d["entryLogs"]}
    assert set(logs) == on_disk
    for log_id, e in logs.items():
        row = usage.get((bookie, log_id))
        assert (e["totalBytes"], e["remainingBytes"]) == \
            ((row["total_bytes"], row["live_bytes"]) if row else (0, 0)), (log_id, e, row)
    flushed = [e for e in logs.values() if not e["active"] and e["totalBytes"] > e["remainingBytes"] > 0]
    assert flushed, f"{bookie}: no flushed log holds garbage: {list(logs.values())}"
    topics = {_topic(p) for e in flushed for p in e["pinningLedgers"]}
    assert topics <= {ORDERS, None}, f"{bookie}: a deleted topic pins its logs: {topics}"

    def pinned() -> list[str] | None:  # listed once the topic lookup of the ledger has ended
        metrics = _get(f"http://{ip}:{INSPECTOR_METRICS_PORT}/metrics")
        return [ln for ln in metrics.splitlines() if ln.startswith("bookie_pinned_garbage_bytes{")] or None

    series = wait_for(pinned, 30, what=f"{bookie}: bookie_pinned_garbage_bytes on the inspector's /metrics")
    assert (ORDERS in topics) == any(f'topic="{ORDERS}' in ln for ln in series), series
    assert not any(f'topic="{topic_name(t)}' in ln for ln in series for t in EXPIRING), series
    return topics
