"""The inspector goes beside bookies that apache/pulsar-helm-chart deployed, as docs/inspector.md says: the
example's ConfigMap and token Secret applied, the chart's StatefulSet patched with the example's patch, the pods
rolled one at a time; then each inspector explains its bookie's disk, naming the Pulsar topic whose ledger pins
it, and ``bookie-audit run --logs bookie+http://...`` audits the fleet through the inspectors."""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import os
import random
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.pulsar_chart import bookie_objects

raw = importlib.import_module("tests.support.raw_client")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pulsar-helm-chart"
RELEASE = "pulsar"
TOKEN = base64.b64encode(random.Random(47).randbytes(24)).decode()
TOPICS = {1: "persistent://public/default/clicks", 2: "persistent://public/default/orders"}
EXPIRED = 1
KEPT = 2
ENTRIES = 80


def _pods(kube: KubeTarget, ns: str) -> list[dict[str, Any]]:
    return kube.pods(ns, f"release={RELEASE},component=bookie")


def _all_ready(kube: KubeTarget, ns: str, containers: int) -> list[dict[str, Any]] | None:
    pods = _pods(kube, ns)
    ok = len(pods) == 2 and all(pod_ready(p) and len(p["spec"]["containers"]) == containers for p in pods)
    return pods if ok else None


def _wait_ready(kube: KubeTarget, ns: str, containers: int, timeout: float, what: str) -> list[dict[str, Any]]:
    """The pods once all are Ready with that many containers; on a timeout, their logs are printed."""
    try:
        return wait_for(lambda: _all_ready(kube, ns, containers), timeout, 1, what)
    except AssertionError:
        for pod in _pods(kube, ns):
            for c in pod["spec"]["containers"]:
                logs = kube.kubectl("-n", ns, "logs", pod["metadata"]["name"], "-c", c["name"], check=False)
                print(f"\n[{pod['metadata']['name']}/{c['name']}] {pod['status']}\n{logs.stdout[-4000:]}")
        raise


def _example(name: str, ns: str, zk: str) -> str:
    """The example file for this test's namespace and ZooKeeper (what its comments ask a user to change)."""
    text = (EXAMPLE / name).read_text()
    return text.replace("pulsar-zookeeper:2181", zk).replace("zkLedgersRootPath=/ledgers",
                                                             f"zkLedgersRootPath=/{ns}-ledgers")


async def _write(store: MetadataStore, ids: list[str], ips: dict[str, str]) -> None:
    rng = random.Random(47)
    for lid, topic in TOPICS.items():
        await store.create_ledger_metadata(lid, LedgerMetadata(
            ensemble_size=2, write_quorum_size=2, ack_quorum_size=2, ensembles={0: tuple(ids)},
            state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0, digest_type=DigestType.CRC32C,
            password=raw.PASSWORD, custom_metadata={"pulsar/managed-ledger": topic.encode()}))
    conns = {b: await raw.RawConnection.open(f"{ips[b]}:3181") for b in ids}
    try:
        for e in range(ENTRIES):
            for lid in TOPICS:
                body = raw.entry(lid, e, rng.randbytes(rng.randint(500, 3000)))
                for b in ids:
                    assert (await conns[b].add(lid, e, body=body)).status == 0
    finally:
        for c in conns.values():
            await c.close()
    await store.delete_ledger_metadata(EXPIRED)


def _get(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def _audit(*args: str) -> None:
    env = {**os.environ, "BOOKIE_AUDIT_MASTER": "local[2]"}
    done = subprocess.run([sys.executable, "-m", "bookie_audit.cli", *args], capture_output=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, f"bookie-audit {args[0]} failed:\n{done.stderr.decode()[-4000:]}"


@pytest.mark.timeout(1200)
async def test_inspector_beside_pulsar_chart_bookies(kube: KubeTarget, kube_namespace: str,
                                                     zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}-ledgers"
    async with MetadataStore(zookeeper.connect_string, root) as store:
        await store.init_cluster()
    # The claims are directories on this machine's disk: past BookKeeper's warn threshold (0.90 of it used, as
    # statvfs counts) the chart's isForceGCAllowWhenNoSpace forces a compaction that removes the log this test
    # wants pinned. The thresholds are raised so that the machine's disk does not decide the outcome.
    kube.apply(bookie_objects(RELEASE, f"zk+hierarchical://{zookeeper.connect_string}{root}",
                              flushInterval=500, logSizeLimit=128 * 1024,
                              diskUsageThreshold=0.999, diskUsageWarnThreshold=0.998), namespace=ns)
    pods = _wait_ready(kube, ns, 1, 240, "the chart's two bookies Ready")
    ips = {f"{p['metadata']['name']}.{RELEASE}-bookie.{ns}.svc.cluster.local:3181": p["status"]["podIP"]
           for p in pods}
    ids = sorted(ips)
    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert sorted(await store.list_bookies()) == ids, "hostname bookie ids, as the chart configures them"
        await _write(store, ids, ips)

    kube.kubectl("-n", ns, "create", "secret", "generic", f"{RELEASE}-bookie-inspector-token",
                 f"--from-literal=token={TOKEN}")
    kube.kubectl("-n", ns, "apply", "-f", "-", input=_example("inspector.yaml", ns, zookeeper.connect_string))
    kube.kubectl("-n", ns, "patch", "statefulset", f"{RELEASE}-bookie",   # as docs/inspector.md says
                 "--patch-file", str(EXAMPLE / "inspector-patch.yaml"))
    pods = _wait_ready(kube, ns, 2, 400, "the bookies rolled with the inspector beside them")

    for pod in pods:
        ip = pod["status"]["podIP"]
        answer = _get(f"http://{ip}:8081/api/v1/bookie/entry_logs")
        assert answer["bookieId"] == f"{pod['metadata']['name']}.{RELEASE}-bookie.{ns}.svc.cluster.local:3181"
        logs = answer["ledgerDirs"][0]["entryLogs"]
        pinned = [e for e in logs if not e["active"] and e["totalBytes"] > e["remainingBytes"] > 0]
        assert pinned, logs
        assert {p.get("topic") for e in pinned for p in e["pinningLedgers"]} == {TOPICS[KEPT]}

    snap, out = tmp_path / "snap", tmp_path / "out"
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    await asyncio.to_thread(_audit, "snapshot", "--zk", zookeeper.connect_string, "--root", root, "--out", str(snap))
    logs = [arg for p in pods for arg in ("--logs", f"bookie+http://{p['status']['podIP']}:8081")]
    await asyncio.to_thread(_audit, "run", *logs, "--metadata", str(snap), "--out", str(out), "--mode", "full",
                            "--min-age-days", "0", "--bookie-token-file", str(token), "--shuffle-partitions", "2")
    pinning = pq.read_table(out / "pinning.parquet").to_pylist()
    assert {r["topic"] for r in pinning} == {TOPICS[KEPT]}
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["bookies"]) == ids
    assert summary["totals"]["garbage_bytes"] > 0 and summary["replication"]["checksum_failures"] == 0
    assert summary["replication"]["ok"] == ENTRIES, "every entry of the kept ledger on both bookies"
