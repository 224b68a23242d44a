"""A ``hostNetwork`` pod shares its node's network namespace: its pod IP is the node's address (its hostIP),
and it gets the node's resolver rather than cluster DNS (dnsPolicy ClusterFirst on the host network)."""

from __future__ import annotations

import os
from typing import Any

from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, container_pid, pod_ready, wait_for


def test_host_network_pod_is_in_the_node_namespace(kube: KubeTarget, kube_cluster: LocalCluster,
                                                   kube_namespace: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-node"}, "spec": {
        "hostNetwork": True, "containers": [{"name": "c", "image": "busybox",
                                             "command": ["sh", "-c", "cat /etc/resolv.conf; sleep 3600"]}]}},
               namespace=kube_namespace)

    def ready() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/on-node")
        return pod if pod and pod_ready(pod) else None

    pod = wait_for(ready, 60, what="the hostNetwork pod Ready")
    node = kube_cluster.node_network
    assert pod["status"]["podIP"] == pod["status"]["hostIP"] == node.node_ip
    pid = container_pid(pod)
    assert pid is not None
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(node.netns_path).st_ino
    log = kube.kubectl("-n", kube_namespace, "logs", "on-node").stdout
    assert "10.96.0.10" not in log and "ndots:5" not in log
