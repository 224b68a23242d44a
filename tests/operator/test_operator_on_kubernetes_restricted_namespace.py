"""A BookieCluster in a namespace that enforces the ``restricted`` Pod Security Standard: the API server's
PodSecurity admission refuses a pod without the restricted fields there, admits the operator's bookie pods,
and the cluster reaches Ready under runc (non-root, no capabilities, seccomp, read-only root) with its
NetworkPolicy in place."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer
from localkube.kapi import ApiError

from tests.operator.conftest import OperatorProcess, bookie_cluster, wait_ready
from tests.support.kube import KubeTarget, wait_for

RESTRICTED = "pod-security.kubernetes.io/enforce=restricted"
OPERATOR_LABELS = "app.kubernetes.io/name=bookie-operator,app.kubernetes.io/instance=bkop"


def test_a_pod_without_the_restricted_fields_is_refused_and_the_bookies_are_admitted_and_ready(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[..., OperatorProcess]) -> None:
    ns = kube_namespace
    kube.kubectl("label", "namespace", ns, RESTRICTED, "pod-security.kubernetes.io/enforce-version=latest")

    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}
    with pytest.raises(ApiError) as refused:
        kube.api.create(f"/api/v1/namespaces/{ns}/pods", bare)
    assert refused.value.status == 403
    for missing in ("allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true",
                    "seccompProfile"):
        assert missing in str(refused.value), str(refused.value)

    operator_factory(ns, extra_args=["--operator-namespace", "ops", "--operator-pod-labels", OPERATOR_LABELS])
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers"), namespace=ns)
    obj = wait_ready(kube, ns, "bk", timeout=240)
    assert obj["status"]["readyReplicas"] == 3

    sts_events = [e for e in kube.events(ns) if e.get("reason") == "FailedCreate"]
    assert sts_events == [], sts_events           # no pod of the StatefulSet was ever refused
    for pod in kube.pods(ns, "app.kubernetes.io/instance=bk"):
        status = pod["status"]["containerStatuses"][0]
        assert status["containerID"].startswith("runc://")
        assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}

    policy = kube.get(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/bk")
    assert policy is not None
    assert policy["metadata"]["ownerReferences"][0]["kind"] == "BookieCluster"
    assert {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]} == {3181, 8080, 8000}
    admin = next(rule for rule in policy["spec"]["ingress"] if rule["ports"][0]["port"] == 8080)
    assert admin["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ops"}},
                              "podSelector": {"matchLabels": {"app.kubernetes.io/name": "bookie-operator",
                                                              "app.kubernetes.io/instance": "bkop"}}}]
    assert {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]} == {
        int(zookeeper.connect_string.rpartition(":")[2]), 53, 3181}

    # Turned off in the spec, the operator removes its NetworkPolicy.
    kube.kubectl("-n", ns, "patch", "bookieclusters.bookie-fleet.dev", "bk", "--type", "merge",
                 "-p", '{"spec": {"networkPolicy": {"enabled": false}}}')
    wait_for(lambda: kube.get(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/bk") is None, 60,
             what="the NetworkPolicy deleted")
