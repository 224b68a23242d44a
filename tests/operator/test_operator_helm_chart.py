"""The Helm chart lints, installs with its default values on the local cluster in a namespace that enforces the
restricted Pod Security Standard, and the operator it deploys (in a pod, with the chart's least-privilege RBAC: a
Role in its own namespace, the only one it watches, and its service account token) reconciles a BookieCluster
there to Ready, whose NetworkPolicy admits the operator's own pods to the admin port. A BookieCluster in another
namespace is left alone, and the operator's identity is refused there. Upgraded to the cluster-wide opt-in, the
operator takes that one on too.

The operator runs from the chart's own image (operator/Dockerfile, built by the bootstrap), as a container."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import CLUSTERS, bookie_cluster, condition, get_cluster, wait_ready
from tests.support.kube import KubeTarget, pod_ready, wait_for

CHART = Path(__file__).resolve().parents[2] / "helm" / "bookie-operator"
FINALIZER = "bookie-fleet.dev/operator"


def test_helm_lint_install_and_the_deployed_operator_reconciles(
        kube: KubeTarget, kube_namespace: str, other_namespace: str, bookie_crd: str,
        zookeeper: ZooKeeperServer) -> None:
    lint = kube.helm("lint", str(CHART), "--strict")
    assert "1 chart(s) linted, 0 chart(s) failed" in lint.stdout
    ns = kube_namespace
    # The operator's own pods are admitted where the restricted Pod Security Standard is enforced.
    kube.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    other = other_namespace
    # Created before the operator starts, so that it would meet it in its first listing if it could list it.
    elsewhere = bookie_cluster("elsewhere", zookeeper.connect_string, f"/{other}/ledgers", replicas=1,
                               ensembleSize=1)
    kube.apply(elsewhere, namespace=other)
    # The chart's defaults: the operator watches the namespace it is installed in.
    kube.helm("install", "bkop", str(CHART), "--namespace", ns, "--wait", "--timeout", "180s",
              "--set", "reconcileInterval=2", "--set", "logFormat=plain")
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
    assert kube.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{other}/roles/bkop-bookie-operator") is None
    account = f"system:serviceaccount:{ns}:bkop-bookie-operator"
    for where, verb, resource, allowed in ((ns, "delete", "pods", "yes"), (other, "list", "pods", "no"),
                                           (ns, "patch", "bookieclusters.bookie-fleet.dev", "yes"),
                                           (other, "patch", "bookieclusters.bookie-fleet.dev", "no"),
                                           (other, "list", "bookieclusters.bookie-fleet.dev", "no"),
                                           (other, "update", "bookieclusters.bookie-fleet.dev", "no"),
                                           (other, "get", "secrets", "no"), (other, "create", "statefulsets", "no"),
                                           (other, "delete", "persistentvolumeclaims", "no"),
                                           (other, "create", "rolebindings", "no"),
                                           ("", "list", "namespaces", "no")):
        scope = ["-n", where] if where else []
        answer = kube.kubectl("auth", "can-i", verb, resource, "--as", account, *scope, check=False)
        assert answer.stdout.strip() == allowed, (where, verb, resource, answer.stdout, answer.stderr)
    # ...and is refused there when it tries, with its own token.
    as_operator = str(kube.service_account_kubeconfig(ns, "bkop-bookie-operator"))
    for attempt in (["patch", "bookiecluster", "elsewhere", "--type=merge", "-p", '{"spec": {"replicas": 2}}'],
                    ["get", "secrets"], ["get", "bookieclusters", "--all-namespaces"]):
        refused = kube.kubectl("--kubeconfig", as_operator, "-n", other, *attempt, check=False)
        assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), (attempt, refused.stderr)

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
    # The BookieCluster of the other namespace, there all along, was never acted on: no finalizer, no status,
    # nothing created for it, no Event.
    untouched = get_cluster(kube, other, "elsewhere")
    assert FINALIZER not in (untouched["metadata"].get("finalizers") or []), untouched["metadata"]
    assert not untouched.get("status"), untouched["status"]
    assert untouched["spec"]["replicas"] == 1
    assert kube.get(f"/apis/apps/v1/namespaces/{other}/statefulsets/elsewhere") is None
    assert kube.events(other, "elsewhere") == []
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

    # The cluster-wide opt-in: a ClusterRole, and the operator takes on the other namespace's BookieCluster too.
    kube.helm("upgrade", "bkop", str(CHART), "--namespace", ns, "--reuse-values", "--set", "clusterWide=true",
              "--wait", "--timeout", "180s")
    assert kube.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/bkop-bookie-operator") is None
    answer = kube.kubectl("auth", "can-i", "patch", "bookieclusters.bookie-fleet.dev", "--as", account, "-n", other)
    assert answer.stdout.strip() == "yes"

    def acted_on() -> Any:
        obj = get_cluster(kube, other, "elsewhere")
        return obj if FINALIZER in (obj["metadata"].get("finalizers") or []) and obj.get("status") else None

    wait_for(acted_on, 120, what="the other namespace's BookieCluster taken on by the cluster-wide operator")
    renewed = kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/bookie-operator")
    assert renewed is not None
    log = kube.kubectl("-n", ns, "logs", renewed["spec"]["holderIdentity"].split("_")[0]).stdout
    assert "Not enough permissions" not in log, log[-3000:]   # Kopf lists no namespaces, and is granted none

    # Uninstall: the operator removes its finalizer first when a cluster is deleted.
    for where, name in ((ns, "bk"), (other, "elsewhere")):
        kube.api.delete(f"{CLUSTERS.format(ns=where)}/{name}")
    for where, name in ((ns, "bk"), (other, "elsewhere")):
        wait_for(lambda w=where, n=name: kube.get(f"{CLUSTERS.format(ns=w)}/{n}") is None,  # type: ignore[misc]
                 60, what=f"BookieCluster {name} deleted")
    kube.helm("uninstall", "bkop", "--namespace", ns, "--wait")
