"""Each pod has its own hostname (UTS namespace) and a kubelet-style /etc/hosts: a StatefulSet pod's FQDN
(<pod>.<service>.<namespace>.svc.cluster.local) resolves to its pod IP, for itself (/etc/hosts) and for its
peers (cluster DNS, from the headless Service's EndpointSlice), so software that identifies itself by
hostname (BookKeeper's useHostNameAsBookieID) works."""

from __future__ import annotations

import json
import socket
from typing import Any

from tests.support.kube import KubeTarget, pod_ready, wait_for

REPORT = """\
import json, socket, sys, time
peer = sys.argv[1]
while True:
    try:
        peer_ip = socket.gethostbyname(peer)
        break
    except OSError:
        time.sleep(0.5)   # the peer may not be running yet
print("REPORT " + json.dumps({"hostname": socket.gethostname(), "fqdn": socket.getfqdn(),
                              "self": socket.gethostbyname(socket.getfqdn()), "peer": peer_ip}), flush=True)
time.sleep(3600)
"""


def test_statefulset_pods_have_hostnames_and_resolve_each_other(kube: KubeTarget, kube_namespace: str) -> None:
    ns = kube_namespace
    peer = f"peers-1.peers.{ns}.svc.cluster.local"
    headless = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "peers"}, "spec": {
        "clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"app": "peers"},
        "ports": [{"name": "none", "port": 1}]}}
    kube.apply([headless, {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "peers"}, "spec": {
        "serviceName": "peers", "replicas": 2, "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {"app": "peers"}},
        "template": {"metadata": {"labels": {"app": "peers"}}, "spec": {"containers": [{
            "name": "report", "image": "python", "command": ["python3", "-c", REPORT, peer]}]}}}}], namespace=ns)

    def reports() -> dict[str, dict[str, Any]] | None:
        pods = kube.pods(ns, "app=peers")
        if len(pods) != 2 or not all(pod_ready(p) for p in pods):
            return None
        found = {}
        for pod in pods:
            out = kube.kubectl("-n", ns, "logs", pod["metadata"]["name"], check=False).stdout
            if "REPORT " not in out:
                return None
            found[pod["metadata"]["name"]] = {"ip": pod["status"]["podIP"],
                                              **json.loads(out.split("REPORT ", 1)[1].splitlines()[0])}
        return found

    found = wait_for(reports, 60, what="both pods' reports")
    for name, report in found.items():
        assert report["hostname"] == name
        assert report["fqdn"] == f"{name}.peers.{ns}.svc.cluster.local"
        assert report["self"] == report["ip"]
        assert report["peer"] == found["peers-1"]["ip"]
    assert socket.gethostname() not in found   # the machine's own hostname is untouched
