"""A container from an image that fails restarts with back-off, each time on a fresh writable root (what the
previous run wrote to / is gone, what it wrote to a volume stays), and a failing exec liveness probe
restarts it too."""

from __future__ import annotations

from typing import Any

from tests.support.kube import KubeTarget, wait_for

SCRIPT = """
if [ -e /marker ]; then echo root-kept; else echo root-fresh; fi
touch /marker
echo run >> /keep/runs
echo "runs $(wc -l < /keep/runs)"
exit 1
"""


def _status(kube: KubeTarget, namespace: str, name: str) -> dict[str, Any]:
    pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}") or {}
    statuses = pod.get("status", {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def test_restarts_get_a_fresh_root(kube: KubeTarget, kube_namespace: str, shell_image: str) -> None:
    kube.apply([
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crasher"}, "spec": {
            "volumes": [{"name": "keep", "emptyDir": {}}],
            "containers": [{"name": "c", "image": shell_image, "command": ["sh", "-c", SCRIPT],
                            "volumeMounts": [{"name": "keep", "mountPath": "/keep"}]}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unhealthy"}, "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": shell_image, "command": ["sleep", "3600"],
                            "livenessProbe": {"exec": {"command": ["test", "-e", "/nonexistent"]},
                                              "periodSeconds": 1, "failureThreshold": 1}}]}},
    ], namespace=kube_namespace)

    wait_for(lambda: _status(kube, kube_namespace, "crasher").get("restartCount", 0) >= 2, 120,
             what="two restarts")
    logs = kube.kubectl("-n", kube_namespace, "logs", "crasher").stdout
    assert "root-kept" not in logs and logs.count("root-fresh") >= 2
    assert "runs 2" in logs
    last = _status(kube, kube_namespace, "crasher")["lastState"]["terminated"]
    assert last["exitCode"] == 1 and last["containerID"].startswith("runc://")

    wait_for(lambda: _status(kube, kube_namespace, "unhealthy").get("restartCount", 0) >= 1, 120,
             what="a restart by the liveness probe")
    events = [e["message"] for e in kube.events(kube_namespace, "unhealthy") if e["reason"] == "Unhealthy"]
    assert any("Liveness probe failed" in m for m in events)
