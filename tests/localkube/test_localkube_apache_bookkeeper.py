"""Apache BookKeeper's bookie image (Maven Central's jars, hack/apache-bookkeeper) runs as a container: an init
container formats the cluster metadata in a real ZooKeeper (BookieShell), then the bookie (BK_* env as in the
image) registers itself under its pod IP and listens there."""

from __future__ import annotations

import socket
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer
from kazoo.client import KazooClient

from tests.support.kube import KubeTarget, pod_ready, wait_for


def test_apache_bookkeeper_image_runs_the_java_bookie(kube: KubeTarget, kube_namespace: str,
                                                      zookeeper: ZooKeeperServer) -> None:
    root = f"/{kube_namespace}-ledgers"   # initnewcluster creates one level only
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "BK_metadataServiceUri", "value": f"zk+hierarchical://{zookeeper.connect_string}{root}"},
           {"name": "BK_advertisedAddress", "value": "$(POD_IP)"},
           {"name": "BK_allowLoopback", "value": "true"},
           {"name": "BK_bookiePort", "value": "32181"},
           {"name": "BK_journalDirectories", "value": "/bk/journal"},
           {"name": "BK_ledgerDirectories", "value": "/bk/ledgers"},
           {"name": "BK_httpServerEnabled", "value": "false"},
           {"name": "BK_journalSyncData", "value": "false"}]
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bookie"}, "spec": {
        "initContainers": [{"name": "format", "image": "bookie-fleet/apache-bookkeeper:4.18.0",
                            "args": ["shell", "initnewcluster"], "env": env}],
        "containers": [{"name": "bookie", "image": "bookie-fleet/apache-bookkeeper:4.18.0", "env": env,
                        "volumeMounts": [{"name": "data", "mountPath": "/bk"}],
                        "readinessProbe": {"tcpSocket": {"port": 32181}, "periodSeconds": 1}}],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }}, namespace=kube_namespace)

    def ready() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/bookie")
        return pod if pod and pod_ready(pod) else None

    pod = wait_for(ready, 120, what="the Java bookie Ready")
    ip = pod["status"]["podIP"]
    init = pod["status"]["initContainerStatuses"][0]["state"]["terminated"]
    assert init["exitCode"] == 0
    with socket.create_connection((ip, 32181), timeout=5):
        pass
    zk = KazooClient(hosts=zookeeper.connect_string)
    zk.start()
    try:
        wait_for(lambda: f"{ip}:32181" in zk.get_children(f"{root}/available"), 30,
                 what="the bookie registered in ZooKeeper")
    finally:
        zk.stop()
        zk.close()
