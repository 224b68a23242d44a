"""runAsNonRoot with an image that runs as root: the container never starts; its waiting state is
CreateContainerConfigError with the kubelet's message, and a Warning Event says the same."""

from __future__ import annotations

from typing import Any

from tests.support.kube import KubeTarget, wait_for
from tests.support.ociimage import ROOT_SHELL_IMAGE


def test_root_image_with_run_as_non_root_is_refused(kube: KubeTarget, kube_namespace: str,
                                                    shell_image: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rooty"}, "spec": {
        "securityContext": {"runAsNonRoot": True},
        "containers": [{"name": "c", "image": ROOT_SHELL_IMAGE, "command": ["sleep", "3600"]}]}},
        namespace=kube_namespace)

    def waiting() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/rooty")
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
        state = statuses[0]["state"] if statuses else {}
        return pod if state.get("waiting", {}).get("reason") == "CreateContainerConfigError" else None

    pod = wait_for(waiting, 60, what="CreateContainerConfigError")
    uid = pod["metadata"]["uid"]
    expected = (f'container has runAsNonRoot and image will run as root (pod: "rooty_{kube_namespace}({uid})", '
                "container: c)")
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == expected
    assert pod["status"]["phase"] == "Pending"
    assert "containerID" not in pod["status"]["containerStatuses"][0]
    events = [e for e in kube.events(kube_namespace, "rooty") if e["reason"] == "Failed"]
    assert events and events[0]["type"] == "Warning" and events[0]["message"] == f"Error: {expected}"

    # runAsUser 0 set explicitly breaks the policy too, with its own message.
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "explicit"}, "spec": {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 0},
        "containers": [{"name": "c", "image": shell_image, "command": ["sleep", "3600"]}]}},
        namespace=kube_namespace)

    def waiting_explicit() -> str | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/explicit")
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
        state = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return state.get("message") if state.get("reason") == "CreateContainerConfigError" else None

    assert wait_for(waiting_explicit, 60, what="CreateContainerConfigError").startswith(
        "container's runAsUser breaks non-root policy")
