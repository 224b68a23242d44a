"""A container from an image: an exec readiness probe runs inside it (`runc exec`, its user and mounts),
`kubectl logs` shows its output, and what it writes to /dev/termination-log becomes the terminated state's
message."""

from __future__ import annotations

from typing import Any

from tests.support.kube import KubeTarget, pod_ready, wait_for

SCRIPT = """
echo starting
sleep 2
touch /work/ready
echo ready-now
sleep 3600
"""


def test_exec_probe_logs_and_termination_message(kube: KubeTarget, kube_namespace: str, shell_image: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probed"}, "spec": {
        "volumes": [{"name": "work", "emptyDir": {}}],
        "containers": [{"name": "c", "image": shell_image, "command": ["sh", "-c", SCRIPT],
                        "securityContext": {"readOnlyRootFilesystem": True},
                        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
                        # Passes only inside the container: the file is in its volume, the user its own.
                        "readinessProbe": {"periodSeconds": 1, "exec": {
                            "command": ["sh", "-c", "test -f /work/ready && test $(id -u) = 1000"]}}}]}},
               namespace=kube_namespace)

    def ready() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/probed")
        return pod if pod and pod_ready(pod) else None

    wait_for(ready, 90, what="Ready through the exec probe")
    assert kube.kubectl("-n", kube_namespace, "logs", "probed").stdout == "starting\nready-now\n"
    assert kube.kubectl("-n", kube_namespace, "logs", "probed", "--tail=1").stdout == "ready-now\n"

    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "quitter"}, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": shell_image, "command": [
            "sh", "-c", "echo 'disk full, giving up' > /dev/termination-log; exit 3"]}]}}, namespace=kube_namespace)

    def terminated() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/quitter")
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
        return statuses[0]["state"].get("terminated") if statuses else None

    state = wait_for(terminated, 60, what="terminated state")
    assert state["exitCode"] == 3 and state["reason"] == "Error"
    assert state["message"] == "disk full, giving up\n"
