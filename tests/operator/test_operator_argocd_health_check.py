"""Argo CD reads a BookieCluster's health with deploy/argocd's Lua check: run here by Lua 5.1 (gopher-lua's
language, with the libraries Argo CD gives a check) over the statuses the operator's own decisions write in
each state: Progressing while it creates or rolls, Healthy when Ready, Degraded when a bookie cannot start or the
spec is invalid, Suspended during a decommission and while a long operation waits for the user (a paused switch or
rebalance, an adoption awaiting approval: statuses the whole reconcile writes against fakes), and Progressing, never
Healthy, for what it does not know."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bookie_operator import decisions
from bookie_operator.decisions import start_failures
from bookie_operator.models import BookieClusterStatus

from tests.operator.gitops_health import ARGOCD_CHECK, argocd_health
from tests.operator.health_objects import (
    GENERATION,
    adoption_awaiting_approval,
    cluster,
    facts,
    invalid_spec,
    paused_rebalance,
    paused_switch,
    recovering,
    refused_adoption,
    switching_from_java,
    written,
)
from tests.operator.helpers import NOW, spec
from tests.operator.test_operator_reconcile_implementation_switch import fail_to_start

REPO = Path(__file__).resolve().parents[2]
ARGOCD_CM = REPO / "deploy" / "argocd" / "argocd-cm.yaml"


def test_a_cluster_being_created_is_progressing() -> None:
    status, message = argocd_health(cluster(written(facts(existing=1, ready=0, writable=0, scaling=True))))
    assert (status, message) == ("Progressing", "Reconciling: scaling to 3; 0/3 bookies ready")


def test_a_rolling_restart_is_progressing_while_ready() -> None:
    rolling = written(facts(outdated=["bk-2"]))
    assert decisions.condition(rolling.conditions, "Ready").status == "True"  # type: ignore[union-attr]
    assert argocd_health(cluster(rolling)) == ("Progressing", "Reconciling: rolling bk-2")


def test_a_ready_cluster_is_healthy() -> None:
    assert argocd_health(cluster(written(facts()))) == ("Healthy", "BookiesReady: 3 bookies ready, 3 writable")


def test_a_bookie_that_cannot_start_makes_the_cluster_degraded() -> None:
    reason, message = start_failures.classify("DirectoryNotWritable: /bookie/ledgers-0 is read-only")
    failure = start_failures.StartFailure(2, "bk-2", reason, message, 1, 3, "2026-11-22T11:59:00Z")
    verdict = start_failures.degraded({2: failure}, "bk", spec(), "instance-1")
    assert verdict is not None
    f = facts(ready=2, writable=2, problems=[verdict.message], problem_reason=verdict.reason)
    status, text = argocd_health(cluster(written(f)))
    assert status == "Degraded" and text.startswith("DirectoryNotWritable: ") and "bk-2" in text


def test_an_invalid_spec_makes_the_cluster_degraded() -> None:
    assert argocd_health(cluster(invalid_spec("spec.replicas: too few"))) == (
        "Degraded", "InvalidSpec: spec.replicas: too few")


def test_a_decommission_in_progress_suspends_the_cluster() -> None:
    f = facts(existing=4, ready=4, writable=3, scaling=True, decommission=recovering())
    status, message = argocd_health(cluster(written(f)))
    assert status == "Suspended"
    assert message == "Decommissioning Recovering: bk-3 (bk-3.bk-headless.team.svc.cluster.local:3181)"


@pytest.mark.parametrize("status", [
    None,                                                                      # never reconciled
    BookieClusterStatus(),                                                     # no conditions yet
    BookieClusterStatus(observed_generation=GENERATION - 1, conditions=decisions.set_condition(
        [], "Ready", True, "BookiesReady", "", NOW, GENERATION - 1)),            # a new spec not yet seen
    BookieClusterStatus(observed_generation=GENERATION, conditions=decisions.set_condition(
        [], "Ready", None, "Unknown", "", NOW, GENERATION)),                   # Ready Unknown
    BookieClusterStatus(observed_generation=GENERATION, conditions=decisions.set_condition(
        [], "SomethingNew", True, "Whatever", "", NOW, GENERATION)),           # only types it does not know
], ids=["no-status", "no-conditions", "generation-not-observed", "ready-unknown", "unknown-types"])
def test_a_status_it_does_not_know_is_progressing_never_healthy(status: BookieClusterStatus | None) -> None:
    assert argocd_health(cluster(status))[0] == "Progressing"


def test_the_argocd_cm_snippet_holds_the_same_check() -> None:
    data = yaml.safe_load(ARGOCD_CM.read_text())["data"]
    assert data == {"resource.customizations.health.bookie-fleet.dev_BookieCluster": ARGOCD_CHECK.read_text()}


# ------------------------------------------------------------------ long operations held by the user
async def test_a_paused_implementation_switch_is_suspended_and_resumed_it_progresses() -> None:
    w = await switching_from_java()
    assert argocd_health(w.kube.cluster("bk"))[0] == "Progressing"
    w = await paused_switch(w)
    assert argocd_health(w.kube.cluster("bk")) == (
        "Suspended", "ImplementationSwitchPaused: apache-bookkeeper to bookie-fleet, 1 switched, 2 to go: "
        "spec.implementationSwitch.paused")
    w.kube.patch_spec("bk", {"implementationSwitch": {"paused": False}})
    await w.tick()
    assert argocd_health(w.kube.cluster("bk"))[0] == "Progressing"


async def test_a_failed_implementation_switch_is_degraded_even_when_paused() -> None:
    w = await switching_from_java()
    w.statefulsets.settle("bk")
    fail_to_start(w, 2, "IncompatibleDisk: /bookie/ledgers-0: a table this bookie cannot open")
    w.kube.patch_spec("bk", {"implementationSwitch": {"paused": True}})
    for _ in range(3):
        await w.tick()
    assert w.status["implementationSwitch"]["phase"] == "Failed"
    assert argocd_health(w.kube.cluster("bk"))[0] == "Degraded"


async def test_a_paused_rebalance_is_suspended() -> None:
    w = await paused_rebalance()
    assert argocd_health(w.kube.cluster("bk")) == ("Suspended", "RebalancePaused: spec.rebalance.paused")
    w.kube.patch_spec("bk", {"rebalance": {"paused": False}})
    await w.tick()
    await w.tick()
    assert argocd_health(w.kube.cluster("bk"))[0] == "Healthy"


async def test_an_adoption_awaiting_approval_is_suspended() -> None:
    w = await adoption_awaiting_approval()
    status, message = argocd_health(w.kube.cluster(w.name))
    assert status == "Suspended"
    assert message == "AwaitingApproval: StatefulSet pulsar-bookie: set spec.adopt.approve to take it over"
    w.kube.patch_spec(w.name, {"adopt": {"approve": True}})
    await w.tick()
    assert w.status["adoption"]["phase"] == "Replacing"
    assert argocd_health(w.kube.cluster(w.name))[0] == "Progressing"


async def test_a_refused_adoption_is_degraded() -> None:
    w = await refused_adoption()
    status, message = argocd_health(w.kube.cluster(w.name))
    assert status == "Degraded" and message.startswith("ReplicasDiffer: "), message
