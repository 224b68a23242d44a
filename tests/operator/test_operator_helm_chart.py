"""The Helm chart lints, installs on the local cluster in a namespace that enforces the restricted Pod Security
Standard, and the operator it deploys (in a pod, with the chart's least-privilege RBAC narrowed to the watched
namespace, and its service account token) reconciles a BookieCluster to Ready, whose NetworkPolicy admits the
operator's own pods to the admin port.

The operator runs from the chart's own image (operator/Dockerfile, built by the bootstrap), as a container."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import bookie_cluster, condition, wait_ready
from tests.support.kube import KubeTarget, pod_ready, wait_for

CHART = Path(__file__).resolve().parents[2] / "helm" / "bookie-operator"


def test_helm_lint_install_and_the_deployed_operator_reconciles(
        kube: KubeTarget, kube_namespace: str, bookie_crd: str, zookeeper: ZooKeeperServer) -> None:
    lint = kube.helm("lint", str(CHART), "--strict")
    assert "1 chart(s) linted, 0 chart(s) failed" in lint.stdout
    ns = kube_namespace
    # The operator's own pods are admitted where the restricted Pod Security Standard is enforced.
    kube.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    kube.helm("install", "bkop", str(CHART), "--namespace", ns, "--wait", "--timeout", "180s",
              "--set", f"watchNamespaces={{{ns}}}", "--set", "reconcileInterval=2", "--set", "logFormat=plain")
    deploy = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/bkop-bookie-operator")
    assert deploy is not None and deploy["spec"]["strategy"]["type"] == "RollingUpdate"
    assert deploy["spec"]["replicas"] == 2                      # one active, one standby (a Lease)

    def both_ready() -> list[dict[str, Any]] | None:
        pods = [p for p in kube.pods(ns, "app.kubernetes.io/name=bookie-operator") if pod_ready(p)]
        return pods if len(pods) == 2 else None

    pods = wait_for(both_ready, 120, what="both operator pods Ready")
    pdb = kube.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/bkop-bookie-operator")
    assert pdb is not None and pdb["spec"]["minAvailable"] == 1
    lease = wait_for(lambda: kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/bookie-operator"),
                     60, what="the leader's Lease")
    assert lease["spec"]["holderIdentity"].split("_")[0] in {p["metadata"]["name"] for p in pods}
    role = kube.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/bkop-bookie-operator")
    assert role is not None
    verbs = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert verbs[(("",), ("pods",))] == {"get", "list", "patch", "delete"}
    assert all("*" not in v for v in verbs.values())
    # Narrowed to the watched namespace: the service account may act there and nowhere else.
    account = f"system:serviceaccount:{ns}:bkop-bookie-operator"
    for where, verb, resource, allowed in ((ns, "delete", "pods", "yes"), ("default", "list", "pods", "no"),
                                           ("default", "patch", "bookieclusters.bookie-fleet.dev", "no"),
                                           ("default", "get", "secrets", "no"),
                                           ("", "list", "namespaces", "no")):
        scope = ["-n", where] if where else []
        answer = kube.kubectl("auth", "can-i", verb, resource, "--as", account, *scope, check=False)
        assert answer.stdout.strip() == allowed, (where, verb, resource, answer.stdout, answer.stderr)

    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers"), namespace=ns)
    try:
        obj = wait_ready(kube, ns, "bk", timeout=180)
    except AssertionError:
        for pod in pods:
            logs = kube.kubectl("-n", ns, "logs", pod["metadata"]["name"], check=False)
            print(f"[operator pod {pod['metadata']['name']}]\n{logs.stdout[-6000:]}{logs.stderr[-2000:]}")
        raise
    ready = condition(obj, "Ready")
    assert ready is not None and ready["status"] == "True"
    # Watching one namespace, Kopf was told not to scan the cluster (it has no right to): no such warnings.
    leader = lease["spec"]["holderIdentity"].split("_")[0]
    log = kube.kubectl("-n", ns, "logs", leader).stdout
    assert "Not enough permissions" not in log, log[-3000:]
    policy = kube.get(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/bk")
    assert policy is not None
    admin = [r for r in policy["spec"]["ingress"] if r["ports"] == [{"protocol": "TCP", "port": 8080}]]
    assert admin == [{"ports": [{"protocol": "TCP", "port": 8080}], "from": [{
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "bookie-operator",
                                        "app.kubernetes.io/instance": "bkop"}}}]}]

    # Uninstall: the operator removes its finalizer first when the cluster is deleted.
    kube.api.delete(f"/apis/bookie-fleet.dev/v1beta1/namespaces/{ns}/bookieclusters/bk")
    wait_for(lambda: kube.get(f"/apis/bookie-fleet.dev/v1beta1/namespaces/{ns}/bookieclusters/bk") is None, 60,
             what="the BookieCluster deleted")
    kube.helm("uninstall", "bkop", "--namespace", ns, "--wait")
