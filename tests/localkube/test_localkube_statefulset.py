"""A StatefulSet of 3 on the local cluster: 3 Running, Ready pods, each a process listening on its own pod IP;
scaling to 1 kills two processes; a deleted pod comes back under the same name with the same volume."""

from __future__ import annotations

import ipaddress
import os
import socket
import urllib.request

from tests.support.kube import KubeTarget, container_pid, pod_ready, wait_for

SERVER = """\
import functools, http.server, os
os.makedirs("/data", exist_ok=True)
with open("/data/starts", "a") as f:
    f.write(os.environ["POD_NAME"] + "\\n")
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/data")
http.server.ThreadingHTTPServer((os.environ["POD_IP"], 8080), handler).serve_forever()
"""


def statefulset(replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
        "spec": {
            "serviceName": "web", "replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [{
                        "name": "http", "image": "python:3.11-slim",
                        "command": ["python3", "-c", SERVER],
                        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/starts", "port": "http"}, "periodSeconds": 1},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }],
                },
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Mi"}}}}],
        },
    }


def get_text(ip: str, path: str) -> str:
    with urllib.request.urlopen(f"http://{ip}:8080{path}", timeout=5) as response:
        return str(response.read().decode())


def refuses(ip: str) -> bool:
    try:
        with socket.create_connection((ip, 8080), timeout=1):
            return False
    except OSError:
        return True


def test_statefulset_pods_are_processes_on_their_own_ips(kube: KubeTarget, kube_namespace: str) -> None:
    ns = kube_namespace
    kube.apply(statefulset(3), namespace=ns)

    def three_ready() -> list[dict[str, object]] | None:
        pods = kube.pods(ns, "app=web")
        return pods if len(pods) == 3 and all(pod_ready(p) for p in pods) else None

    pods = sorted(wait_for(three_ready, 120, what="3 Ready pods"), key=lambda p: p["metadata"]["name"])  # type: ignore[index]
    ips = [p["status"]["podIP"] for p in pods]  # type: ignore[index]
    assert len(set(ips)) == 3
    for pod, ip in zip(pods, ips, strict=True):
        assert kube.local is not None
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(kube.local.node_network.pod_cidr)
        # The pod's own process answers on the pod's own address, and says who it is.
        assert get_text(ip, "/starts") == f"{pod['metadata']['name']}\n"  # type: ignore[index]
        pid = container_pid(pod)
        assert pid is not None and os.path.exists(f"/proc/{pid}")
    pids = {p["metadata"]["name"]: container_pid(p) for p in pods}  # type: ignore[index]

    # Scale to 1: web-2 and web-1 are deleted, their processes killed.
    kube.kubectl("-n", ns, "scale", "statefulset/web", "--replicas=1")
    wait_for(lambda: [p["metadata"]["name"] for p in kube.pods(ns, "app=web")] == ["web-0"], 60,
             what="only web-0 left")
    for name, ip in (("web-1", ips[1]), ("web-2", ips[2])):
        proc = f"/proc/{pids[name]}"
        wait_for(lambda proc=proc: not os.path.exists(proc), 30, what=f"{name}'s process to end")  # type: ignore[misc]
        assert refuses(ip)
    assert get_text(ips[0], "/starts") == "web-0\n"

    # Delete web-0: the StatefulSet controller recreates it (new uid), on the same claim and volume.
    old_uid = pods[0]["metadata"]["uid"]  # type: ignore[index]
    kube.kubectl("-n", ns, "delete", "pod", "web-0", "--wait=true")
    assert not os.path.exists(f"/proc/{pids['web-0']}")

    def recreated() -> dict[str, object] | None:
        pod = kube.get(f"/api/v1/namespaces/{ns}/pods/web-0")
        return pod if pod and pod["metadata"]["uid"] != old_uid and pod_ready(pod) else None

    pod = wait_for(recreated, 90, what="web-0 recreated and Ready")
    ip = pod["status"]["podIP"]  # type: ignore[index]
    # Same volume: the file written by the first incarnation is there, with the second start appended.
    assert get_text(ip, "/starts") == "web-0\nweb-0\n"
    claim = pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]  # type: ignore[index]
    assert claim == "data-web-0"
