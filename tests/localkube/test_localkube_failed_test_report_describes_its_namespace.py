"""A failed Kubernetes test's report says what its namespace held: each pod's phase and container states, the
namespace's events and what the pod runner logged about it during the test (tests/support/kube_failures.py)."""

from __future__ import annotations

from typing import Any

from tests.support import kube_failures
from tests.support.kube import KubeTarget, fresh_namespace, open_namespaces, wait_for

IMAGE = "example.com/team/never-built:1.0"


def test_the_report_names_the_pod_its_waiting_reason_the_event_and_the_runners_words(
        kube: KubeTarget, kube_namespace: str) -> None:
    offset = kube_failures.runner_log_size(kube)
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stuck"},
                "spec": {"containers": [{"name": "main", "image": IMAGE}]}}, namespace=kube_namespace)

    def waiting() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/stuck") or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return statuses[0] if statuses and "waiting" in statuses[0]["state"] else None

    wait_for(waiting, 30, what="the container waiting")
    wait_for(lambda: kube.events(kube_namespace, "stuck"), 30, what="the pod's events")
    assert kube_namespace in open_namespaces

    report = kube_failures.state_report(kube, offset)
    print(report)

    assert f"namespace {kube_namespace}:" in report
    assert "pod stuck on localkube: phase Pending" in report
    assert "container main: state {'waiting': {'reason': 'ErrImagePull'" in report
    assert "Warning Failed Pod/stuck: " in report and IMAGE in report
    runner = report.split("pod runner log during the test", 1)[1]
    assert f"{kube_namespace}/stuck" in runner, "the runner's own lines about the pod"


def test_a_namespace_is_forgotten_once_deleted(kube: KubeTarget) -> None:
    with fresh_namespace(kube) as name:
        assert name in open_namespaces
    assert name not in open_namespaces
