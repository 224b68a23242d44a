"""The chart's RBAC as ``helm template`` renders it. By default the operator watches the release's namespace
only: a Role there, and no ClusterRole that grants anything in a namespace. ``watchNamespaces`` gives a Role in
each listed namespace; ``clusterWide`` (the opt-in) a ClusterRole with the same rules. Cluster-wide in every
case only what no Role can grant: the operator's own CRD (with ``crds.manage``) and reads of StorageClasses and
Nodes. The namespaced rules are exactly what the operator's calls need, verb by verb."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import bookie_operator
import pytest
import yaml
from bookie_operator import builders, kube, models

from tests.operator.test_operator_helm_chart import CHART

Obj = dict[str, Any]
NAMESPACED = {"bookieclusters", "bookieclusters/status", "configmaps", "secrets", "services", "poddisruptionbudgets",
              "networkpolicies", "statefulsets", "pods", "persistentvolumeclaims", "events",
              # the storage audit: its report store, Spark's identity bound to the audit ClusterRole, a Job per run
              "serviceaccounts", "rolebindings", "clusterroles", "deployments", "jobs"}
AUDIT_ROLE = "bkop-bookie-operator-audit"
CRD = "bookieclusters.bookie-fleet.dev"
CRD_RULE = {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "resourceNames": [CRD],
            "verbs": ["get", "patch"]}
CLUSTER_SCOPED = [{"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]


def render(*sets: str) -> list[Obj]:
    args = ["helm", "template", "bkop", str(CHART), "--namespace", "ops"]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def resources(role: Obj) -> set[str]:
    return {r for rule in role["rules"] for r in rule["resources"]}


def of_kind(docs: list[Obj], kind: str) -> list[Obj]:
    return [d for d in docs if d["kind"] == kind]


def operator_cluster_role(docs: list[Obj]) -> Obj:
    """The operator's own ClusterRole (the other one is the storage audit's, bound by the operator per cluster)."""
    (role,) = [r for r in of_kind(docs, "ClusterRole") if r["metadata"]["name"] != AUDIT_ROLE]
    return role


def operator_roles(docs: list[Obj]) -> dict[str, Obj]:
    """Namespace -> the operator's Role there (not the leader election's)."""
    return {r["metadata"]["namespace"]: r for r in of_kind(docs, "Role")
            if r["metadata"]["name"] == "bkop-bookie-operator"}


def args(docs: list[Obj]) -> list[str]:
    return list(of_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"])


def test_by_default_the_operator_watches_its_own_namespace_with_a_role_there() -> None:
    docs = render()
    assert set(operator_roles(docs)) == {"ops"}
    assert resources(operator_roles(docs)["ops"]) == NAMESPACED
    # No ClusterRole grants a namespaced resource: no StatefulSet, Secret or pod verb anywhere else.
    assert operator_cluster_role(docs)["rules"] == [CRD_RULE, *CLUSTER_SCOPED]
    assert not ({"secrets", "pods", "statefulsets", "bookieclusters"} & resources(operator_cluster_role(docs)))
    bindings = {(b["metadata"]["namespace"], b["roleRef"]["name"]) for b in of_kind(docs, "RoleBinding")}
    assert bindings == {("ops", "bkop-bookie-operator"), ("ops", "bkop-bookie-operator-leader-election")}
    assert "--namespace=ops" in args(docs) and "--all-namespaces" not in args(docs)


def test_watching_listed_namespaces_the_rules_are_roles_there() -> None:
    docs = render("watchNamespaces={team-a,team-b}")
    # Only what no Role can grant: the operator's own CRD, and the cluster-scoped objects the reconcile reads.
    assert operator_cluster_role(docs)["rules"] == [CRD_RULE, *CLUSTER_SCOPED]
    roles = operator_roles(docs)
    assert set(roles) == {"team-a", "team-b"}                 # the release's namespace only if listed
    assert resources(roles["team-a"]) == NAMESPACED
    assert {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in of_kind(docs, "Role")} == {
        ("team-a", "bkop-bookie-operator"), ("team-b", "bkop-bookie-operator"),
        ("ops", "bkop-bookie-operator-leader-election")}
    bindings = {(b["metadata"]["namespace"], b["roleRef"]["name"]) for b in of_kind(docs, "RoleBinding")}
    assert {("team-a", "bkop-bookie-operator"), ("team-b", "bkop-bookie-operator")} <= bindings
    for binding in of_kind(docs, "RoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bkop-bookie-operator", "namespace": "ops"}]
    assert "--namespace=team-a" in args(docs) and "--namespace=team-b" in args(docs)
    assert "--namespace=ops" not in args(docs) and "--all-namespaces" not in args(docs)


def test_cluster_wide_is_an_opt_in_with_the_same_rules_in_a_cluster_role() -> None:
    docs = render("clusterWide=true")
    cluster_role = operator_cluster_role(docs)
    # Kopf watches CRDs when it watches every namespace; it lists no namespaces then (none granted).
    assert NAMESPACED | {"customresourcedefinitions"} <= resources(cluster_role)
    assert "namespaces" not in resources(cluster_role)
    # Seeing every namespace, it moves BookieClusters stored in an older version and trims storedVersions.
    assert {"apiGroups": ["bookie-fleet.dev"], "resources": ["bookieclusters"], "verbs": ["list", "update"]} \
        in cluster_role["rules"]
    assert {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions/status"],
            "resourceNames": [CRD], "verbs": ["patch"]} in cluster_role["rules"]
    assert operator_roles(docs) == {}
    assert [r["metadata"]["name"] for r in of_kind(docs, "Role")] == ["bkop-bookie-operator-leader-election"]
    assert "--all-namespaces" in args(docs) and not [a for a in args(docs) if a.startswith("--namespace=")]


def test_cluster_wide_with_listed_namespaces_is_refused() -> None:
    run = subprocess.run(["helm", "template", "bkop", str(CHART), "--set", "clusterWide=true",
                          "--set", "watchNamespaces={team-a}"], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "at '/clusterWide': value must be false" in run.stderr, run.stderr


def test_without_crd_management_only_the_cluster_scoped_reads_remain() -> None:
    for docs in (render("crds.manage=false"), render("watchNamespaces={team-a}", "crds.manage=false")):
        assert operator_cluster_role(docs)["rules"] == CLUSTER_SCOPED
    assert "customresourcedefinitions/status" not in resources(operator_cluster_role(render("clusterWide=true",
                                                                                           "crds.manage=false")))


def test_the_operator_may_bind_the_audit_cluster_role_only() -> None:
    for docs in (render(), render("watchNamespaces={team-a}"), render("clusterWide=true")):
        roles = [operator_cluster_role(docs), *of_kind(docs, "Role")]
        binds = [rule for role in roles for rule in role["rules"] if "clusterroles" in rule["resources"]]
        assert binds == [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                          "resourceNames": [AUDIT_ROLE], "verbs": ["bind"]}]
        assert [r["metadata"]["name"] for r in of_kind(docs, "ClusterRole")].count(AUDIT_ROLE) == 1


def test_no_rule_grants_everything() -> None:
    for docs in (render(), render("watchNamespaces={team-a}"), render("clusterWide=true")):
        for role in of_kind(docs, "ClusterRole") + of_kind(docs, "Role"):
            for rule in role["rules"]:
                assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule


# ------------------------------------------------------------------ the rules are what the operator's calls need
OPERATOR = Path(bookie_operator.__file__).parent
# Reads and deletes name their kind in the call: kube.get("Pod", ...), kube.delete(models.KIND, ...); a
# metadata-only read (kube.get_metadata) is a get too.
CALL = re.compile(r"kube\.(get_metadata|get|list|delete)\(\s*(?:\"(\w+)\"|(models\.KIND))")
# The objects the operator builds, and how it writes each kind: server-side apply after a get to compare
# (apply creates what is missing, so create too), or create alone.
BUILT = re.compile(r"\"apiVersion\":\s*\"[^\"]*\",\s*\"kind\":\s*\"(\w+)\"")
APPLIED = {"ConfigMap", "Service", "PodDisruptionBudget", "NetworkPolicy", "StatefulSet", "PersistentVolumeClaim",
           "ServiceAccount", "RoleBinding", "Deployment",
           "Secret"}    # the tokens created once (create), the Secret of their hashes applied
WRITES = {**{kind: {"get", "create", "patch"} for kind in APPLIED},
          "Job": {"create"},                       # one per audit run
          "Pod": {"patch"}}                        # adoption labels the pods it takes over
NOT_WRITTEN = {"ClusterRole",   # the audit's, which the chart creates (the builder keeps the two equal)
               "Pod"}           # also the Spark pod template, inside a ConfigMap
# Kopf lists, watches and patches (finalizer, annotations) what it serves and posts Events; the reconcile
# patches the status subresource and posts Events; a RoleBinding to the audit ClusterRole needs bind on it.
FRAMEWORK = {("bookie-fleet.dev", "bookieclusters"): {"list", "watch", "patch"},
             ("bookie-fleet.dev", "bookieclusters/status"): {"patch"},
             ("", "events"): {"create"},
             ("rbac.authorization.k8s.io", "clusterroles"): {"bind"}}


def group_resource(kind: str) -> tuple[str, str]:
    prefix, plural = kube._RESOURCES[kind]
    return ("" if prefix == "/api/v1" else prefix.split("/")[2]), plural


def needed() -> tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str], set[str]]]:
    """(namespaced, cluster-scoped): the verbs the operator's calls need, by (apiGroup, resource)."""
    calls: dict[str, set[str]] = defaultdict(set)
    built: set[str] = set()
    for path in OPERATOR.rglob("*.py"):
        text = path.read_text()
        for verb, kind, constant in CALL.findall(text):
            calls[models.KIND if constant else kind].add("get" if verb == "get_metadata" else verb)
        if path.name in ("builders.py", "audit_builders.py") or path.parent.name == "reconcile":
            built.update(BUILT.findall(text))
    unknown = built - set(WRITES) - NOT_WRITTEN
    assert not unknown, f"say in WRITES how the operator writes {unknown}"
    assert set(WRITES) <= built, f"WRITES names a kind the operator no longer builds: {set(WRITES) - built}"
    # What the spec turns off is deleted (reconcile/apply.py, _delete_own).
    off = builders.unwanted_objects(builders.Owner("bk", "ns", "uid"), models.parse_spec(
        {"metadataService": {"zkServers": "zk:2181"}, "networkPolicy": {"enabled": False}}))
    for kind, _ in off:
        calls[kind].add("delete")
    for kind, verbs in WRITES.items():
        calls[kind] |= verbs
    namespaced: dict[tuple[str, str], set[str]] = defaultdict(set)
    cluster: dict[tuple[str, str], set[str]] = defaultdict(set)
    for kind, verbs in calls.items():
        (cluster if kind in kube.CLUSTER_SCOPED else namespaced)[group_resource(kind)] |= verbs
    for key, verbs in FRAMEWORK.items():
        namespaced[key] |= verbs
    return dict(namespaced), dict(cluster)


def granted(role: Obj) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out[(group, resource)] |= set(rule["verbs"])
    return dict(out)


@pytest.mark.parametrize("sets", [(), ("clusterWide=true",)], ids=["role", "cluster-wide"])
def test_the_rules_are_exactly_what_the_operators_calls_need(sets: tuple[str, ...]) -> None:
    namespaced, cluster = needed()
    docs = render(*sets)
    cluster_role = granted(operator_cluster_role(docs))
    for key in (("apiextensions.k8s.io", "customresourcedefinitions"),         # the CRD (checked above)
                ("apiextensions.k8s.io", "customresourcedefinitions/status")):
        cluster_role.pop(key, None)
    if sets:
        cluster_role[("bookie-fleet.dev", "bookieclusters")] -= {"update"}   # moving stored objects (above)
        assert cluster_role == {**namespaced, **cluster}
    else:
        assert granted(operator_roles(docs)["ops"]) == namespaced
        assert cluster_role == cluster


def test_the_operator_pods_meet_the_restricted_profile_and_name_themselves() -> None:
    (deploy,) = of_kind(render(), "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
    # Who the operator is, for the bookies' NetworkPolicy: exactly the labels its pods carry, in its namespace.
    assert "--operator-namespace=$(POD_NAMESPACE)" in container["args"]
    assert "--leader-election-namespace=$(POD_NAMESPACE)" in container["args"]
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in container["env"]
    labels = next(a for a in container["args"] if a.startswith("--operator-pod-labels="))
    pairs = dict(item.split("=", 1) for item in labels.split("=", 1)[1].split(","))
    assert pairs.items() <= deploy["spec"]["template"]["metadata"]["labels"].items()
    assert pairs == deploy["spec"]["selector"]["matchLabels"]
