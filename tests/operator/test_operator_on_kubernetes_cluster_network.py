"""A BookieCluster on the cluster network, as on any Kubernetes: the EndpointSlices of each of its Services list
its ready pods, and clients running in pods, Apache BookKeeper's Java client and ours, write and read through
the bookie ids (``<pod>.<cluster>-headless.<namespace>.svc.cluster.local:3181``) that cluster DNS resolves,
with the endpoints the bookies published in ZooKeeper removed."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from bookie.metadata import service_info
from bookie_fleet.zookeeper import ZooKeeperServer
from kazoo.client import KazooClient

from tests.operator.conftest import JAVA, OperatorProcess, bookie_cluster, wait_ready
from tests.support.kube import KubeTarget, wait_for

Obj = dict[str, Any]
ENTRIES = 10

OUR_CLIENT = """\
import asyncio, sys
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig

async def main(zk: str, root: str) -> None:
    async with BookKeeper(ClientConfig(zk_servers=zk, ledgers_root=root)) as bk:
        handle = await bk.create_ledger(ensemble_size=3, write_quorum=3, ack_quorum=2)
        for i in range(int(sys.argv[3])):
            await handle.add(f"ours-{i}".encode())
        await handle.close()
        reader = await bk.open_ledger(handle.ledger_id)
        entries = await reader.read(0, handle.last_add_confirmed)
        print("ENTRIES " + " ".join(e.payload.decode() for e in entries), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""
JAVA_CLIENT = """\
set -e
harness() { java -cp "/harness:/opt/bookkeeper/lib/*" ClientHarness "$@"; }
out=$(harness write "$1" "$2" v3 3 3 2 CRC32C secret "$3")
echo "$out" | grep RESULT
ledger=$(echo "$out" | sed -n 's/^LEDGER //p')
harness read "$1" "$2" v3 "$ledger" secret norecover
"""


def _lists_exactly(kube: KubeTarget, ns: str, service: str, addresses: set[str]) -> bool:
    return kube.ready_endpoints(ns, service) == addresses


def _client_pod(name: str, image: str, command: list[str], volumes: list[Obj] | None = None) -> Obj:
    mounts = [{"name": v["name"], "mountPath": "/harness", "readOnly": True} for v in volumes or []]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "restartPolicy": "Never", "volumes": volumes or [],
        "containers": [{"name": "client", "image": image, "command": command, "volumeMounts": mounts}]}}


def _finished_log(kube: KubeTarget, ns: str, name: str) -> str | None:
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    if not pod or pod["status"].get("phase") not in ("Succeeded", "Failed"):
        return None
    log = str(kube.kubectl("-n", ns, "logs", name).stdout)
    assert pod["status"]["phase"] == "Succeeded", log
    return log


def test_services_list_ready_bookies_and_pod_clients_use_bookie_ids_through_dns(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root), namespace=ns)
    status = wait_ready(kube, ns, "bk")["status"]
    ids = [b["bookieId"] for b in status["bookies"]]
    assert ids == [f"bk-{i}.bk-headless.{ns}.svc.cluster.local:3181" for i in range(3)]

    # Every Service of the BookieCluster routes to its ready pods.
    pods = kube.pods(ns, "app.kubernetes.io/instance=bk")
    pod_ips = {p["status"]["podIP"] for p in pods}
    assert len(pod_ips) == 3
    services = [s for s in kube.api.request("GET", f"/api/v1/namespaces/{ns}/services")["items"]
                if any(o["kind"] == "BookieCluster" for o in s["metadata"].get("ownerReferences") or [])]
    assert {s["metadata"]["name"] for s in services} >= {"bk", "bk-headless"}
    for svc in services:
        name = svc["metadata"]["name"]
        wait_for(functools.partial(_lists_exactly, kube, ns, name, pod_ips), 30,
                 what=f"the EndpointSlices of Service {name} listing the 3 ready bookies")

    # Without published endpoints a client has only the bookie id, the address cluster DNS resolves.
    zk = KazooClient(hosts=zookeeper.connect_string)
    zk.start(timeout=10)
    try:
        for bookie_id in ids:
            zk.set(f"{root}/available/{bookie_id}", b"")
        # The Java client runs on the Java bookie image's classpath (Apache BookKeeper 4.18.0): the harness compiled
        # against that version's jars (tests/images/test_images_java_classpath_lock.py ties the two).
        harness = os.environ["BOOKIE_FLEET_BK_COMPAT_HARNESS"]
        kube.apply([
            _client_pod("ours", "bookie-fleet/bookie:0.1.0",
                        ["/opt/venv/bin/python", "-c", OUR_CLIENT, zookeeper.connect_string, root, str(ENTRIES)]),
            _client_pod("java", JAVA["image"], ["sh", "-c", JAVA_CLIENT, "client", zookeeper.connect_string, root,
                                                str(ENTRIES)],
                        [{"name": "harness", "hostPath": {"path": harness, "type": "Directory"}}]),
        ], namespace=ns)
        ours = wait_for(functools.partial(_finished_log, kube, ns, "ours"), 180, what="our client pod's run")
        java = wait_for(functools.partial(_finished_log, kube, ns, "java"), 180, what="the Java client pod's run")
        # Still nothing published: the clients resolved the ids themselves.
        assert all(service_info.decode(zk.get(f"{root}/available/{i}")[0]) == [] for i in ids)
    finally:
        zk.stop()
        zk.close()
    assert f"ENTRIES {' '.join(f'ours-{i}' for i in range(ENTRIES))}" in ours, ours
    assert f"RESULT {ENTRIES - 1} " in java and f"ENTRY {ENTRIES - 1} java-{ENTRIES - 1}" in java, java
