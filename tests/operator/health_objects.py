"""BookieCluster objects as a GitOps tool reads them from the API server, with the statuses the operator's own
decisions write in each state, and the whole reconcile (against fakes) in the states a long operation holds: the
inputs of the Argo CD and kstatus health tests."""

from __future__ import annotations

from typing import Any

from bookie_operator import decisions, models
from bookie_operator.decisions import ClusterFacts, ConditionValue
from bookie_operator.decisions.decommission import DecommissionFacts, decommission_step, start_decommission
from bookie_operator.models import BookieClusterStatus, DecommissionStatus

from tests.operator.crd_schema import status_errors
from tests.operator.fakes import World, cluster_spec
from tests.operator.helpers import NOW, spec
from tests.operator.test_operator_reconcile_adopt import chart_world

GENERATION = 4


def cluster(status: BookieClusterStatus | None) -> dict[str, Any]:
    """A BookieCluster as a GitOps tool reads it from the API server, with the status the operator wrote."""
    obj: dict[str, Any] = {
        "apiVersion": f"{models.GROUP}/{models.VERSION}", "kind": models.KIND,
        "metadata": {"name": "bk", "namespace": "team", "generation": GENERATION},
        "spec": {"replicas": 3, "ensembleSize": 2, "metadataService": {"zkServers": "zk:2181"}}}
    if status is not None:
        obj["status"] = status.model_dump(by_alias=True, exclude_none=True)
        assert status_errors(obj["status"]) == []       # a status the API server would store
    return obj


def facts(**overrides: Any) -> ClusterFacts:
    """A settled three-bookie cluster, changed by ``overrides``."""
    settled: dict[str, Any] = dict(desired_replicas=3, ensemble_size=2, existing=3, ready=3, writable=3,
                                   scaling=False, outdated=[], compaction_run=None, decommission=None,
                                   unregistered=[], under_replicated=0)
    return ClusterFacts(**(settled | overrides))


def written(f: ClusterFacts) -> BookieClusterStatus:
    """The status the reconcile's last step writes for these facts (reconcile/status.py's conditions)."""
    return BookieClusterStatus(observed_generation=GENERATION, replicas=f.existing, ready_replicas=f.ready,
                               writable_bookies=f.writable,
                               conditions=with_conditions(decisions.cluster_conditions(f).conditions),
                               decommission=f.decommission)


def invalid_spec(message: str) -> BookieClusterStatus:
    """The status an invalid spec leaves (reconcile/observe.py writes these conditions)."""
    return BookieClusterStatus(observed_generation=GENERATION,
                               conditions=with_conditions(decisions.invalid_spec_conditions(message)))


def with_conditions(values: list[ConditionValue]) -> list[models.Condition]:
    conditions: list[models.Condition] = []
    for c in values:
        conditions = decisions.set_condition(conditions, c.type, c.status, c.reason, c.message, NOW, GENERATION)
    return conditions


def recovering() -> DecommissionStatus:
    """bk-3 past MarkingReadOnly, as the decommission state machine records it."""
    started = start_decommission(3, "bk-3", "bk-3.bk-headless.team.svc.cluster.local:3181", NOW)
    step = decommission_step(started, DecommissionFacts(read_only=True, ledgers_referencing=12, under_replicated=0,
                                                        cookie_exists=True, pod_exists=True, claims_remaining=2),
                             spec(replicas=3), NOW)
    assert step.status is not None and step.status.phase == "Recovering"
    return step.status


# ------------------------------------------------------------------ long operations, by the whole reconcile
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.17.3"}
OURS = {"implementation": "bookie-fleet", "image": "bookie-fleet/bookie:0.1.0"}


async def settled(w: World, **spec: Any) -> World:
    """``w`` with a BookieCluster of ``spec`` created and reconciled until its bookies run."""
    w.kube.create_cluster(w.name, cluster_spec(**spec))
    await w.tick()
    await w.tick()
    return w


async def switching_from_java() -> World:
    """A settled Apache BookKeeper cluster switched to ours until its first bookie (bk-2) was restarted."""
    w = await settled(World(), **JAVA)
    w.kube.patch_spec("bk", OURS)
    while not any(d == "Pod/bk-2" for d in w.kube.deleted):
        await w.tick()
    return w


async def paused_switch(w: World | None = None) -> World:
    """The switch of ``switching_from_java`` (``w``'s, or a new one) paused by spec.implementationSwitch.paused,
    one bookie switched."""
    w = w or await switching_from_java()
    w.kube.patch_spec("bk", {"implementationSwitch": {"paused": True}})
    for _ in range(4):
        await w.tick()
    assert w.status["implementationSwitch"]["phase"] == "Paused"
    return w


async def paused_rebalance() -> World:
    """A settled cluster whose rebalance is enabled and paused by spec.rebalance.paused."""
    w = await settled(World(), rebalance={"enabled": True, "paused": True})
    await w.tick()
    assert w.status["rebalance"]["phase"] == "Paused"
    return w


async def adoption_awaiting_approval() -> World:
    """A BookieCluster adopting apache/pulsar-helm-chart's bookies, the take-over checked, not approved."""
    w = chart_world()
    await w.tick()
    assert w.status["adoption"]["phase"] == "AwaitingApproval"
    return w


async def refused_adoption() -> World:
    """The adoption of ``adoption_awaiting_approval`` refused: spec.replicas differs from the bookies running."""
    w = chart_world()
    w.kube.patch_spec(w.name, {"replicas": 4})
    await w.tick()
    assert w.status["adoption"]["phase"] == "Refused"
    return w
