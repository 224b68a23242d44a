"""Pods on the cluster network, as on any cluster: a pod reaches another pod by its IP, a Service by its
ClusterIP (kube-proxy's rules) and by its DNS names (CoreDNS, with the pod's search path), and a StatefulSet
pod by its FQDN through the headless Service; this machine reaches pods by IP; the Services' EndpointSlices
list the ready pods."""

from __future__ import annotations

import functools
import urllib.request
from typing import Any

from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.ociimage import SHELL_IMAGE

# kube-proxy programs a Service's rules after the EndpointSlices list its pods, moments later or, on a loaded
# machine, seconds later (seen: the ClusterIP unanswered for 10 s): the client tries each address for up to
# half a minute, as a client of a new Service would, and reports the last answer.
CLIENT = """\
for target in "$@"; do
    for attempt in 1 2 3 4 5 6; do
        answer="$(timeout 5 wget -q -O- "http://$target/id" 2>&1 | tr -d '\\n')"
        case "$answer" in web-*) break ;; esac
        sleep 1
    done
    printf 'GET %s %s\\n' "$target" "$answer"
done
printf 'DNS %s\\n' "$(nslookup "web.$NS.svc.cluster.local" 2>&1 | tr '\\n' ' ')"
echo DONE
"""


def _web(ns: str) -> list[dict[str, Any]]:
    labels = {"app": "web"}
    server = {"name": "http", "image": SHELL_IMAGE,
              "command": ["sh", "-c", "echo $HOSTNAME > /www/id && exec httpd -f -p 8080 -h /www"],
              "ports": [{"name": "http", "containerPort": 8080}],
              "volumeMounts": [{"name": "www", "mountPath": "/www"}],
              "readinessProbe": {"httpGet": {"path": "/id", "port": 8080}, "periodSeconds": 1}}
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-headless"},
         "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "http", "port": 8080}]}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": {
            "serviceName": "web-headless", "replicas": 2, "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [server], "volumes": [{"name": "www", "emptyDir": {}}]}}}},
    ]


def _lists_exactly(kube: KubeTarget, ns: str, service: str, addresses: set[str]) -> bool:
    return kube.ready_endpoints(ns, service) == addresses


def test_pods_reach_pods_services_and_statefulset_members(kube: KubeTarget, kube_namespace: str,
                                                          shell_image: str) -> None:
    ns = kube_namespace
    kube.apply(_web(ns), namespace=ns)

    def two_ready() -> list[dict[str, Any]] | None:
        pods = kube.pods(ns, "app=web")
        return pods if len(pods) == 2 and all(pod_ready(p) for p in pods) else None

    pods = {p["metadata"]["name"]: p for p in wait_for(two_ready, 90, what="2 Ready web pods")}
    ips = {name: pod["status"]["podIP"] for name, pod in pods.items()}
    # This machine reaches each pod at its own address.
    for name, ip in ips.items():
        with urllib.request.urlopen(f"http://{ip}:8080/id", timeout=5) as response:
            assert response.read().decode().strip() == name
    # The EndpointSlices of both Services list exactly the ready pods.
    for name in ("web", "web-headless"):
        wait_for(functools.partial(_lists_exactly, kube, ns, name, set(ips.values())), 30,
                 what=f"{name}'s EndpointSlices listing both pods")

    service = kube.get(f"/api/v1/namespaces/{ns}/services/web")
    assert service is not None
    cluster_ip = service["spec"]["clusterIP"]
    targets = [f"{ips['web-0']}:8080", f"{cluster_ip}:80", "web", f"web.{ns}.svc.cluster.local",
               f"web-1.web-headless.{ns}.svc.cluster.local:8080"]
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"}, "spec": {
        "restartPolicy": "Never", "containers": [{
            "name": "client", "image": SHELL_IMAGE, "command": ["sh", "-c", CLIENT, "client", *targets],
            "env": [{"name": "NS", "value": ns}]}]}}, namespace=ns)

    def report() -> str | None:
        pod = kube.get(f"/api/v1/namespaces/{ns}/pods/client")
        if not pod or pod["status"].get("phase") not in ("Succeeded", "Failed"):
            return None
        return str(kube.kubectl("-n", ns, "logs", "client").stdout)

    out = wait_for(report, 240, what="the client pod's report")
    assert "DONE" in out, out
    answers = dict(line.removeprefix("GET ").split(" ", 1) for line in out.splitlines() if line.startswith("GET "))
    assert answers[f"{ips['web-0']}:8080"] == "web-0"                    # pod to pod by IP
    assert answers[f"{cluster_ip}:80"] in ("web-0", "web-1")            # the Service's ClusterIP (kube-proxy)
    assert answers["web"] in ("web-0", "web-1")                         # short name, through the search path
    assert answers[f"web.{ns}.svc.cluster.local"] in ("web-0", "web-1")
    assert answers[f"web-1.web-headless.{ns}.svc.cluster.local:8080"] == "web-1"   # a member by its FQDN
    dns = next(line for line in out.splitlines() if line.startswith("DNS "))
    assert f"Address: {cluster_ip}" in dns, dns
