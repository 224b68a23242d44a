"""On the local Kubernetes, a BookieCluster adopts three Apache BookKeeper bookies that a manifest of
apache/pulsar-helm-chart's shape runs, with ledgers written to them by a client and a real Pulsar broker producing
to them from before the adoption to the end: no pod is restarted before approve (same pod UIDs), and GitOps tools
read the held adoption from the API server (Argo CD Suspended, kstatus InProgress); approve replaces
the StatefulSet with the operator's and rolls every pod onto its template while Pulsar keeps producing; then every
entry reads back byte-identical from each bookie, the claims are the same (PVC UIDs) and the bookie ids registered
in ZooKeeper are the chart's. Then the adopted bookies switch in place to our bookie on the chart's own disks and
directories, and back to Apache BookKeeper's: no send fails, every message Pulsar acknowledged is read back
byte-identical, every entry of the ledgers written first is still byte-identical on each bookie, the same claims,
bookie ids and cookies throughout, and those first ledgers not re-replicated (their metadata unchanged). The
operator disables re-replication for the adoption roll and for each switch: no ledger, Pulsar's included, is ever
marked under-replicated, and replication is enabled again at the end, as it was before."""

from __future__ import annotations

import asyncio
import functools
import importlib
import random
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataStore
from bookie.protocol.entry import DigestType
from bookie.protocol.messages import StatusCode
from bookie_fleet.pulsar import JVM_OPTS, Producer, PulsarBroker, consume
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator.models import BOOKIE_IMAGE

from tests.operator.conftest import (
    JAVA,
    OperatorProcess,
    await_events,
    bookie_cluster,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.gitops_health import argocd_health, kstatus
from tests.operator.ledger_identities import identities
from tests.operator.re_replication_watch import ReplicationWatch
from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.pulsar_chart import bookie_objects

pytestmark = pytest.mark.bootstrap_part("gitops")


raw = importlib.import_module("tests.support.raw_client")

RELEASE = "pulsar"
NAME = f"{RELEASE}-bookie"
SEED = 4702
LEDGERS = (11, 12, 13)
ENTRIES = 40
PULSAR_RATE = 100   # messages per second, through the adoption's roll and both switches
TOPIC = "public/default/through-the-take-over"


def _pods(kube: KubeTarget, ns: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in kube.pods(ns, f"release={RELEASE},component=bookie")}


def _all_ready(kube: KubeTarget, ns: str) -> dict[str, dict[str, Any]] | None:
    pods = _pods(kube, ns)
    return pods if len(pods) == 3 and all(map(pod_ready, pods.values())) else None


def _uids(objs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: o["metadata"]["uid"] for name, o in objs.items()}


def _claims(kube: KubeTarget, ns: str) -> dict[str, str]:
    items = (kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims") or {}).get("items", [])
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in items}


def _adoption(kube: KubeTarget, ns: str, phase: str) -> dict[str, Any] | None:
    adoption = get_cluster(kube, ns, NAME).get("status", {}).get("adoption") or {}
    return adoption if adoption.get("phase") == phase else None


async def _write(store: MetadataStore, ips: dict[str, str]) -> dict[tuple[int, int], bytes]:
    """Closed ledgers on all three bookies, written entry by entry (seeded payloads)."""
    rng = random.Random(SEED)
    ids = tuple(sorted(ips))
    written: dict[tuple[int, int], bytes] = {}
    conns = {b: await raw.RawConnection.open(f"{ips[b]}:3181") for b in ids}
    try:
        for lid in LEDGERS:
            await store.create_ledger_metadata(lid, LedgerMetadata(
                ensemble_size=3, write_quorum_size=3, ack_quorum_size=2, ensembles={0: ids},
                state=LedgerState.CLOSED, last_entry_id=ENTRIES - 1, length=0, digest_type=DigestType.CRC32C,
                password=raw.PASSWORD))
            for e in range(ENTRIES):
                body = raw.entry(lid, e, rng.randbytes(rng.randint(200, 4000)))
                written[(lid, e)] = body
                for b in ids:
                    assert (await conns[b].add(lid, e, body=body)).status == 0, (b, lid, e, f"seed {SEED}")
    finally:
        for c in conns.values():
            await c.close()
    return written


async def _read_back(ips: dict[str, str], written: dict[tuple[int, int], bytes]) -> None:
    for bookie, ip in sorted(ips.items()):
        async with await raw.RawConnection.open(f"{ip}:3181") as conn:
            for (lid, e), body in written.items():
                response = await conn.read(lid, e)
                assert response.status == StatusCode.EOK, (bookie, lid, e, response.status, f"seed {SEED}")
                assert bytes(response.body) == body, f"{bookie}: entry {lid}/{e} changed (seed {SEED})"


def _switched(kube: KubeTarget, ns: str, implementation: str) -> dict[str, dict[str, Any]] | None:
    """The pods once a switch is over: all three Ready on ``implementation``, no switch left in status."""
    pods = _all_ready(kube, ns)
    if pods is None or "implementationSwitch" in get_cluster(kube, ns, NAME)["status"]:
        return None
    on_target = [p for p in pods.values() if p["metadata"]["labels"].get("bookie-fleet.dev/implementation")
                 == implementation]
    return pods if len(on_target) == 3 else None


def _restored(kube: KubeTarget, ns: str) -> dict[str, Any] | None:
    obj = get_cluster(kube, ns, NAME)
    return obj if "reReplicationSuspended" not in obj["status"] else None


def _hosts(tmp_path: Path, ips: dict[str, str]) -> Path:
    """A hosts file for the broker's JVM (``jdk.net.hosts.file``): the chart's bookies publish their cluster DNS
    names as their addresses, which pods resolve and this machine does not, so the broker resolves them as a pod
    would. Once adopted, the bookies publish their pod IPs and need no name."""
    path = tmp_path / "hosts"
    lines = [f"127.0.0.1 localhost {socket.gethostname()}"]
    lines += [f"{ip} {bookie_id.rsplit(':', 1)[0]}" for bookie_id, ip in sorted(ips.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def _ips(pods: dict[str, dict[str, Any]], ns: str) -> dict[str, str]:
    return {f"{name}.{NAME}.{ns}.svc.cluster.local:3181": p["status"]["podIP"] for name, p in pods.items()}


@pytest.mark.timeout(1800)   # three JVM bookies started, then each restarted three times, on 2 shared cores
async def test_chart_bookies_adopted_then_rolled_onto_the_operator_statefulset_keeping_disks_and_ids(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess], tmp_path: Path) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}-ledgers"
    started = time.monotonic()
    async with MetadataStore(zookeeper.connect_string, root) as store:
        await store.init_cluster()
    kube.apply(bookie_objects(RELEASE, f"zk+hierarchical://{zookeeper.connect_string}{root}", replicas=3,
                              flushInterval=500), namespace=ns)
    chart_pods = wait_for(lambda: _all_ready(kube, ns), 300, 1, "the chart's three bookies Ready")
    ips = _ips(chart_pods, ns)
    async with MetadataStore(zookeeper.connect_string, root) as store:
        assert sorted(await store.list_bookies()) == sorted(ips), "hostname bookie ids, as the chart sets them"
        written = await _write(store, ips)
    pod_uids, claim_uids = _uids(chart_pods), _claims(kube, ns)
    assert len(claim_uids) == 6
    print(f"chart bookies up and written in {time.monotonic() - started:.0f}s")

    operator_factory(ns)
    kube.apply(bookie_cluster(NAME, zookeeper.connect_string, root, **JAVA, replicas=3, ensembleSize=3,
                              adopt={"statefulSetName": NAME}, inspector={"enabled": False},
                              networkPolicy={"enabled": False}), namespace=ns)
    planned = wait_for(lambda: _adoption(kube, ns, "AwaitingApproval"), 120, 1, "the adoption planned")
    assert "-httpServerPort=8000" in planned["diff"].splitlines(), planned["diff"]
    assert planned["found"]["bookieId"] == f"{NAME}-0.{NAME}.{ns}.svc.cluster.local:3181"
    await_events(kube, ns, NAME, "AdoptionPlanned")
    # Held for approval, as GitOps tools read it from the API server: suspended for Argo CD, in progress for kstatus.
    waiting = f"StatefulSet {NAME}: set spec.adopt.approve to take it over"

    def held() -> tuple[tuple[str, str], tuple[str, str]] | None:
        obj = get_cluster(kube, ns, NAME)
        readings = argocd_health(obj), kstatus(obj)
        return readings if readings[0][0] == "Suspended" else None

    argocd, flux = wait_for(held, 60, 1, "Argo CD's reading of the adoption held for approval")
    assert argocd == ("Suspended", f"AwaitingApproval: {waiting}") and flux == ("InProgress", waiting)
    await asyncio.sleep(10)   # a few of the operator's ticks: still nothing may change before approve
    assert _uids(_pods(kube, ns)) == pod_uids, "no pod restarted before approve"
    sts = kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/{NAME}")
    assert sts is not None and not sts["metadata"].get("ownerReferences"), "the chart's StatefulSet untouched"

    # A Pulsar broker produces to the chart's bookies from here to the end: through the adoption's roll and both
    # switches (2/2/2 ensembles on the three bookies, Pulsar's defaults).
    broker = PulsarBroker(tmp_path / "pulsar", zookeeper.connect_string, root, chroot=f"/pulsar-{ns}",
                          log_level="warn", jvm_opts=(*JVM_OPTS, f"-Djdk.net.hosts.file={_hosts(tmp_path, ips)}"))
    producer: Producer | None = None
    try:
        await asyncio.to_thread(broker.setup_metadata)
        await asyncio.to_thread(broker.start)
        broker.admin("PUT", f"persistent/{TOPIC}/subscription/check")
        producer = Producer(broker, TOPIC, 0, keys=16, max_size=4096, rate=PULSAR_RATE)
        await asyncio.to_thread(producer.wait_for, lambda: len(producer.acked) >= PULSAR_RATE, 120,
                                "messages before approve")
        async with ReplicationWatch(zookeeper.connect_string, root) as watch:
            await _approve(kube, ns, zookeeper, root, producer, pod_uids, claim_uids, written)
            await _switch_and_back(kube, ns, zookeeper, root, producer, claim_uids, written)
            assert await watch.now_disabled_by() is None, "re-replication enabled again, as it was before"
        await _everything_pulsar_acknowledged_reads_back(broker, producer)
    finally:
        if producer is not None:
            producer.kill()
        await asyncio.to_thread(broker.stop)
    assert watch.marked == set(), f"ledgers marked under-replicated meanwhile: {sorted(watch.marked)}"
    assert len(watch.disabled_by - {None}) == 1, f"disabled by the operator meanwhile: {watch.disabled_by}"
    # One suspension each: the adoption roll, the switch to ours, the switch back. The last Restored Event is posted
    # just after the status the switch back waited for.
    await asyncio.to_thread(await_events, kube, ns, NAME, "ReReplicationRestored", at_least=3)
    assert [len(events(kube, ns, NAME, r)) for r in ("ReReplicationSuspended", "ReReplicationRestored")] == [3, 3]
    print(f"whole story {time.monotonic() - started:.0f}s")


async def _approve(kube: KubeTarget, ns: str, zookeeper: ZooKeeperServer, root: str, producer: Producer,
                   pod_uids: dict[str, str], claim_uids: dict[str, str],
                   written: dict[tuple[int, int], bytes]) -> None:
    approved, sent = time.monotonic(), len(producer.acked)
    patch_spec(kube, ns, NAME, {"adopt": {"approve": True}})
    await asyncio.to_thread(wait_for, lambda: _adoption(kube, ns, "Adopted"), 900, 2,
                            "every pod rolled onto the operator's StatefulSet")
    print(f"adopted and rolled in {time.monotonic() - approved:.0f}s, "
          f"{len(producer.acked) - sent} messages acknowledged meanwhile")
    assert len(producer.acked) > sent, "Pulsar kept producing through the roll"
    await asyncio.to_thread(wait_ready, kube, ns, NAME, timeout=300)
    await asyncio.to_thread(wait_for, lambda: _restored(kube, ns), 120, 1, "re-replication restored after the roll")
    assert not events(kube, ns, NAME, "ApplyFailed"), "every object of the operator applied"
    rolled = _pods(kube, ns)
    assert len(rolled) == 3 and all(map(pod_ready, rolled.values()))
    assert not set(_uids(rolled).values()) & set(pod_uids.values()), "every pod restarted onto the new template"
    assert all([c["name"] for c in p["spec"]["containers"]] == ["bookie"] for p in rolled.values())
    sts = kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/{NAME}")
    assert sts is not None and sts["metadata"]["ownerReferences"][0]["kind"] == "BookieCluster"
    assert _claims(kube, ns) == claim_uids, "the same claims: no PVC recreated"
    ips = _ips(rolled, ns)
    async with MetadataStore(zookeeper.connect_string, root) as store:
        registered = await store.list_bookies()
    assert sorted(registered) == sorted(ips), "the bookie ids are the chart's"
    await _read_back(ips, written)


async def _switch_and_back(kube: KubeTarget, ns: str, zookeeper: ZooKeeperServer, root: str, producer: Producer,
                           claim_uids: dict[str, str], written: dict[tuple[int, int], bytes]) -> None:
    """The adopted fleet switches to our bookie on the chart's disks and directories, and back."""
    before = await identities(zookeeper.connect_string, root, LEDGERS)
    ids = _ips(_pods(kube, ns), ns).keys()
    for implementation, image in (("bookie-fleet", BOOKIE_IMAGE), ("apache-bookkeeper", JAVA["image"])):
        switching, sent = time.monotonic(), len(producer.acked)
        patch_spec(kube, ns, NAME, {"implementation": implementation, "image": image})
        pods = await asyncio.to_thread(wait_for, functools.partial(_switched, kube, ns, implementation), 900, 2,
                                       f"every adopted bookie on {implementation}")
        print(f"switched to {implementation} in {time.monotonic() - switching:.0f}s, "
              f"{len(producer.acked) - sent} messages acknowledged meanwhile")
        await asyncio.to_thread(wait_for, lambda: _restored(kube, ns), 120, 1,
                                f"re-replication restored after the switch to {implementation}")
        assert _claims(kube, ns) == claim_uids, "the same claims: no PVC recreated"
        assert _ips(pods, ns).keys() == ids, "the same bookie ids"
        await _read_back(_ips(pods, ns), written)
    after = await identities(zookeeper.connect_string, root, LEDGERS)
    assert after == before, "the same bookies and cookies, the first ledgers not re-replicated, none marked"


async def _everything_pulsar_acknowledged_reads_back(broker: PulsarBroker, producer: Producer) -> None:
    at_end = len(producer.acked)
    await asyncio.to_thread(producer.wait_for, lambda: len(producer.acked) >= at_end + PULSAR_RATE, 120,
                            "messages after the last switch")
    await asyncio.to_thread(producer.finish)
    acked, failed = producer.acked, producer.failed
    assert not failed, f"{len(failed)} sends failed, first {sorted(failed.items())[:5]}"
    got = await asyncio.to_thread(consume, broker, TOPIC, "check", len(acked))
    seen = {seq: (key, sha) for seq, key, sha in got}
    lost = sorted(set(acked) - set(seen))
    assert not lost, f"{len(lost)} acknowledged messages lost, first {lost[:10]}"
    assert all(seen[seq] == (ack.key, ack.sha256) for seq, ack in acked.items()), "a message changed"
    print(f"{len(acked)} messages acknowledged and read back")
