"""Several nodes on one machine: Nodes labelled ``localkube.io/emulated-by=<the runner's node>`` are run by the
runner too (Ready, pods scheduled onto them and run), with their own labels (zones) and taints. The scheduler
honours nodeSelector and taints and spreads a StatefulSet's pods over the nodes that fit."""

from __future__ import annotations

from typing import Any

from tests.support.kube import ZONE_TOLERATION, KubeTarget, pod_ready, wait_for


def statefulset(image: str, tolerate: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": {"localkube.io/emulated-by": "localkube"},
        "containers": [{"name": "c", "image": image, "command": ["sh", "-c", "echo up; sleep 3600"]}],
        "terminationGracePeriodSeconds": 1}
    if tolerate:
        spec["tolerations"] = [ZONE_TOLERATION]
    name = "spread" if tolerate else "stuck"
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": {
        "replicas": 3 if tolerate else 1, "serviceName": name, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def test_pods_spread_over_emulated_zone_nodes(kube: KubeTarget, kube_namespace: str, shell_image: str,
                                               zone_nodes: dict[str, str]) -> None:
    ns = kube_namespace
    for name in zone_nodes:
        wait_for(lambda n=name: any(c["type"] == "Ready" and c["status"] == "True" for c in  # type: ignore[misc]
                                    ((kube.get(f"/api/v1/nodes/{n}") or {}).get("status") or {}).get("conditions")
                                    or []), 30, what=f"node {name} Ready")
    kube.apply([statefulset(shell_image, tolerate=True), statefulset(shell_image, tolerate=False)], namespace=ns)

    def running() -> list[dict[str, Any]] | None:
        pods = kube.pods(ns, "app=spread")
        return pods if len(pods) == 3 and all(pod_ready(p) for p in pods) else None

    pods = wait_for(running, 120, what="3 pods Ready")
    nodes = sorted(p["spec"]["nodeName"] for p in pods)
    assert nodes == sorted(zone_nodes), "one pod per zone node"
    assert "up" in kube.kubectl("-n", ns, "logs", pods[0]["metadata"]["name"]).stdout   # kubelet API of the node

    stuck = wait_for(lambda: [e for e in kube.events(ns, "stuck-0") if e["reason"] == "FailedScheduling"], 30,
                     what="FailedScheduling for the pod without the toleration")
    message = stuck[0]["message"]
    assert "3 node(s) had untolerated taint {localkube.io/zone-test: true}" in message
    assert "1 node(s) didn't match Pod's node selector" in message
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/stuck-0")
    assert pod is not None and not pod["spec"].get("nodeName")
