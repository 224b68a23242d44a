"""The whole reconcile through the adoption of a chart-shaped bookie StatefulSet, without a cluster: nothing is
applied, deleted or restarted before approve; then the StatefulSet is replaced by the operator's (same name, claim
templates and Service), the pods are restarted one at a time under the usual gate, and an operator that dies in any
phase, after acting and before writing status, resumes without repeating more than that one idempotent action. A
StatefulSet that cannot be adopted is refused, named in a condition and an Event, with nothing changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from bookie_operator import builders

from tests.operator.fakes import NS, OperatorCrashed, World, cluster_spec
from tests.support.pulsar_chart import bookie_objects

NAME = "pulsar-bookie"
PHASES = ["AwaitingApproval", "Replacing", "Rolling", "Adopted"]
Obj = dict[str, Any]


def chart_world(**config: Any) -> World:
    """The chart's ConfigMap, Service, StatefulSet and its three Ready pods, and a BookieCluster adopting them."""
    w = World(name=NAME)
    spec = cluster_spec(implementation="apache-bookkeeper", image="bookie-fleet/apache-bookkeeper:4.18.0",
                        adopt={"statefulSetName": NAME})
    uri = f"zk+hierarchical://{spec['metadataService']['zkServers']}/ledgers"
    for obj in bookie_objects("pulsar", uri, replicas=3, **config):
        obj = copy.deepcopy(obj)
        obj["metadata"].update(namespace=NS, uid=f"uid-chart-{obj['kind']}")
        w.kube.objects[(obj["kind"], NS, NAME)] = obj
    for o in range(3):
        w.kube.objects[("Pod", NS, f"{NAME}-{o}")] = {
            "kind": "Pod",
            "metadata": {"name": f"{NAME}-{o}", "namespace": NS, "uid": f"uid-pod-{o}",
                         "labels": {"app": "pulsar", "release": "pulsar", "component": "bookie",
                                    "controller-revision-hash": "chart-rev"}},
            "status": {"phase": "Running", "podIP": f"10.0.0.{o + 1}",
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    w.kube.create_cluster(NAME, spec)
    return w


def pods(w: World) -> dict[str, Obj]:
    return {name: copy.deepcopy(o) for (kind, _, name), o in w.kube.objects.items() if kind == "Pod"}


async def run_to_end(w: World, crash_in: str | None, limit: int = 40) -> list[str]:
    """Tick until Adopted; returns the phases seen. ``crash_in``: the first tick that starts in that phase dies
    after its actions and before its status write."""
    seen: list[str] = []
    for _ in range(limit):
        phase = (w.status.get("adoption") or {}).get("phase")
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
            if phase == crash_in:
                w.kube.crash_before_status_write = True
        if phase == "Adopted":
            return seen
        try:
            await w.tick()
        except OperatorCrashed:
            w.operator = w.new_operator()
    raise AssertionError(f"adoption did not finish: {w.status.get('adoption')}")


async def test_nothing_changes_before_approve_and_the_diff_is_shown() -> None:
    w = chart_world()
    before = pods(w)
    for _ in range(3):
        await w.tick()
    adoption = w.status["adoption"]
    assert adoption["phase"] == "AwaitingApproval", adoption
    assert adoption["found"]["serviceName"] == NAME and adoption["found"]["replicas"] == 3
    assert "-httpServerPort=8000" in adoption["diff"].splitlines()
    assert w.kube.applied == [] and w.kube.deleted == [] and w.kube.created == []
    assert pods(w) == before, "no pod touched"
    assert w.kube.objects[("StatefulSet", NS, NAME)]["metadata"]["uid"] == "uid-chart-StatefulSet"
    planned = w.kube.reasons("AdoptionPlanned")
    assert len(planned) == 1 and "kubectl get bkc pulsar-bookie -o jsonpath='{.status.adoption.diff}'" in planned[0]
    assert len(planned[0]) <= 1024, "an Event's message is cut at 1 KiB: the diff itself is in status"
    conditions = {c["type"]: c for c in w.status["conditions"]}
    assert conditions["Adopting"]["reason"] == "AwaitingApproval" and conditions["Ready"]["status"] == "False"


@pytest.mark.parametrize("crash_in", [None, *PHASES[:-1]])
async def test_approve_replaces_the_statefulset_and_rolls_the_pods_one_at_a_time(crash_in: str | None) -> None:
    w = chart_world()
    await w.tick()
    w.kube.patch_spec(NAME, {"adopt": {"approve": True}})
    seen = await run_to_end(w, crash_in)
    assert seen == PHASES

    sts = w.kube.objects[("StatefulSet", NS, NAME)]
    assert any(o["uid"] == f"uid-{NAME}" for o in sts["metadata"]["ownerReferences"]), "the operator's own"
    assert sts["spec"]["serviceName"] == NAME
    assert [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]] == \
        [f"{NAME}-journal", f"{NAME}-ledgers"]
    restarts = [d for d in w.kube.deleted if d.startswith("Pod/")]
    assert restarts == [f"Pod/{NAME}-{o}" for o in (2, 1, 0)], "each pod restarted once, highest ordinal first"
    # A crash after acting repeats that one action at most once more.
    assert 1 <= w.kube.deleted.count(f"StatefulSet/{NAME}") <= 2
    assert len(w.kube.reasons("Adopted")) == 1
    for pod in pods(w).values():       # every pod on the operator's template
        assert pod["metadata"]["labels"]["controller-revision-hash"] == sts["status"]["updateRevision"]
    env = {e["name"]: e.get("value") for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["BOOKIE_ID"] == f"$(POD_NAME).{NAME}.$(POD_NAMESPACE).svc.cluster.local:3181"
    assert [b["bookieId"] for b in w.status["bookies"]] == \
        [builders.bookie_id(NAME, NS, o, service=NAME) for o in range(3)], "the bookie ids are the chart's"


async def test_each_restart_waits_for_no_under_replicated_ledgers() -> None:
    w = chart_world()
    await w.tick()
    w.kube.patch_spec(NAME, {"adopt": {"approve": True}})
    w.zk.under_replicated_ledgers = 1
    for _ in range(6):
        outcome = await w.tick()
    assert w.status["adoption"]["phase"] == "Rolling"
    assert w.kube.reasons("RollingRestart") == []
    assert "rolling restart: waiting for no under-replicated ledgers before the next restart" in outcome.waiting


@pytest.mark.parametrize(("config", "reason"), [
    ({"useHostNameAsBookieID": "false"}, "IpBookieIds"),
    ({"ledgerDirectories": "/elsewhere"}, "UnsupportedLayout"),
])
async def test_a_statefulset_that_cannot_be_adopted_is_refused_and_left_alone(config: dict[str, str],
                                                                               reason: str) -> None:
    w = chart_world(**config)
    w.kube.patch_spec(NAME, {"adopt": {"approve": True}})
    before = pods(w)
    for _ in range(3):
        await w.tick()
    assert w.status["adoption"]["phase"] == "Refused"
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == reason
    assert len(w.kube.reasons(reason)) == 1, "one Event, not one per tick"
    assert w.kube.applied == [] and w.kube.deleted == [] and pods(w) == before


async def test_a_missing_statefulset_is_refused_by_name() -> None:
    w = chart_world()
    del w.kube.objects[("StatefulSet", NS, NAME)]
    for (kind, ns, name) in [k for k in w.kube.objects if k[0] == "Pod"]:
        del w.kube.objects[(kind, ns, name)]
    w.statefulsets.settle = lambda cluster: None      # type: ignore[method-assign]  # no controller makes pods
    await w.tick()
    assert w.status["adoption"]["phase"] == "Refused"
    assert w.kube.reasons("AdoptionNotFound") == [f"StatefulSet {NAME}: not found in namespace {NS}"]
    assert w.kube.applied == []


async def test_without_spec_adopt_the_statefulset_of_that_name_is_left_alone() -> None:
    w = chart_world()
    await w.tick()
    w.kube.patch_spec(NAME, {"adopt": None})          # the request withdrawn before approval
    before = pods(w)
    for _ in range(3):
        await w.tick()
    assert "adoption" not in w.status
    assert w.kube.objects[("StatefulSet", NS, NAME)]["metadata"]["uid"] == "uid-chart-StatefulSet"
    assert "StatefulSet/" + NAME not in w.kube.applied + w.kube.deleted and pods(w) == before
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert f"StatefulSet {NAME} exists and is not this cluster's" in degraded["message"]


async def test_after_adoption_a_cookie_mismatch_names_the_claims_the_cluster_uses() -> None:
    w = chart_world()
    await w.tick()
    w.kube.patch_spec(NAME, {"adopt": {"approve": True}})
    await run_to_end(w, None)
    w.statefulsets.settle(NAME)
    pod = w.kube.objects[("Pod", NS, f"{NAME}-1")]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod["status"]["containerStatuses"] = [{"name": "bookie", "ready": False, "restartCount": 2, "lastState": {
        "terminated": {"exitCode": 1, "finishedAt": "2026-11-24T02:50:00Z", "message":
                       "org.apache.bookkeeper.bookie.BookieException$InvalidCookieException: instanceId "
                       f"{w.status['instanceId']} is not matching with 3bf5-02"}}}]
    await w.tick()
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "CookieMismatch", degraded
    assert f"delete the claims {NAME}-journal-{NAME}-1, {NAME}-ledgers-{NAME}-1 and then the pods" \
        in degraded["message"], degraded["message"]
