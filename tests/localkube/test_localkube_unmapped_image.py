"""A pod whose image has no local command stays Pending, with a waiting reason and a Warning Event."""

from __future__ import annotations

from typing import Any

from tests.support.kube import KubeTarget, wait_for


def test_unmapped_image_stays_pending_with_event(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nope"},
                "spec": {"containers": [{"name": "c", "image": "example.com/team/unknown-image:1.0"}]}},
               namespace=kube_namespace)

    def failed_event() -> list[dict[str, object]]:
        return [e for e in kube.events(kube_namespace, "nope") if e["reason"] == "Failed"]

    event = wait_for(failed_event, 30, what="a Failed event")[0]
    assert event["type"] == "Warning"
    assert 'no command for image "example.com/team/unknown-image:1.0"' in str(event["message"])
    def waiting_pod() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/nope")
        return pod if pod and pod.get("status", {}).get("containerStatuses") else None

    pod = wait_for(waiting_pod, 30, what="container statuses")
    assert pod["spec"]["nodeName"] == "localkube"
    assert pod["status"]["phase"] == "Pending"
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ErrImagePull"
    assert "mapped images:" in waiting["message"]
