"""Flux and kpt read a BookieCluster's health through kstatus (sigs.k8s.io/cli-utils), which knows no custom
resource but reads the Reconciling, Stalled and Ready conditions and status.observedGeneration. Over the statuses
the operator's own decisions write: InProgress while it creates, rolls or a bookie leaves (even with every bookie
Ready), Current when settled, Failed when it cannot go on without the user (a bookie that cannot start, an invalid
spec, a refused adoption), and InProgress, not Failed, while ledgers heal on their own. kstatus has no Suspended: a
long operation the user holds (an adoption awaiting approval, a paused switch or rebalance: statuses the whole
reconcile writes against fakes) is InProgress, never Current, with the hold as Reconciling's reason."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import decisions
from bookie_operator.decisions import start_failures
from bookie_operator.models import BookieClusterStatus, DecommissionRequestStatus

from tests.operator.gitops_health import kstatus
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
    with_conditions,
    written,
)
from tests.operator.helpers import NOW, spec

pytestmark = pytest.mark.bootstrap_part("gitops")


def test_a_cluster_being_created_is_in_progress() -> None:
    status, message = kstatus(cluster(written(facts(existing=1, ready=0, writable=0, scaling=True))))
    assert (status, message) == ("InProgress", "scaling to 3; 0/3 bookies ready")


def test_a_rolling_restart_is_in_progress_while_every_bookie_is_ready() -> None:
    assert kstatus(cluster(written(facts(outdated=["bk-2"])))) == ("InProgress", "rolling bk-2")


def test_a_settled_cluster_is_current() -> None:
    assert kstatus(cluster(written(facts())))[0] == "Current"


def test_a_bookie_that_cannot_start_is_failed() -> None:
    failure = start_failures.StartFailure(2, "bk-2", *start_failures.classify(
        "DirectoryNotWritable: /bookie/ledgers-0 is read-only"), 1, 3, "2026-11-22T11:59:00Z")
    verdict = start_failures.degraded({2: failure}, "bk", spec(), "instance-1")
    assert verdict is not None
    status, message = kstatus(cluster(written(facts(ready=2, writable=2, problems=[verdict.message],
                                                    problem_reason=verdict.reason))))
    assert status == "Failed" and "bk-2" in message


def test_an_invalid_spec_is_failed_even_after_progressing() -> None:
    progressing = written(facts(existing=1, ready=0, writable=0, scaling=True)).conditions
    conditions = progressing
    for c in decisions.invalid_spec_conditions("spec.replicas: too few"):   # what reconcile/observe.py writes
        conditions = decisions.set_condition(conditions, c.type, c.status, c.reason, c.message, NOW, GENERATION)
    assert kstatus(cluster(BookieClusterStatus(observed_generation=GENERATION, conditions=conditions))) == (
        "Failed", "spec.replicas: too few")
    assert kstatus(cluster(invalid_spec("spec.replicas: too few")))[0] == "Failed"


def test_ledgers_healing_on_their_own_are_not_failed() -> None:
    status, _ = kstatus(cluster(written(facts(under_replicated=7))))
    assert status != "Failed"


def test_a_decommission_is_in_progress() -> None:
    f = facts(existing=4, ready=4, writable=3, scaling=True, decommission=recovering())
    assert kstatus(cluster(written(f)))[0] == "InProgress"


def test_a_spec_the_operator_has_not_seen_yet_is_in_progress() -> None:
    seen_before = BookieClusterStatus(observed_generation=GENERATION - 1, conditions=with_conditions(
        decisions.cluster_conditions(facts()).conditions))
    status, message = kstatus(cluster(seen_before))
    assert status == "InProgress" and "observed generation is 3" in message


# ------------------------------------------------------------------ long operations held by the user
def _kstatus_conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """Reconciling and Stalled as kstatus reads them: (status, reason, message) by type."""
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in obj["status"]["conditions"]
            if c["type"] in ("Reconciling", "Stalled")}


async def test_a_refused_adoption_is_failed_with_the_refusal() -> None:
    w = await refused_adoption()
    obj = w.kube.cluster(w.name)
    refusal = w.status["adoption"]["message"]
    assert kstatus(obj) == ("Failed", refusal)
    assert _kstatus_conditions(obj) == {"Stalled": ("True", "ReplicasDiffer", refusal),
                                        "Reconciling": ("False", "ReplicasDiffer", refusal)}


async def test_an_adoption_awaiting_approval_is_in_progress_until_approved() -> None:
    w = await adoption_awaiting_approval()
    obj = w.kube.cluster(w.name)
    waiting = "StatefulSet pulsar-bookie: set spec.adopt.approve to take it over"
    assert kstatus(obj) == ("InProgress", waiting)
    assert _kstatus_conditions(obj)["Reconciling"] == ("True", "AwaitingApproval", waiting)
    w.kube.patch_spec(w.name, {"adopt": {"approve": True}})
    await w.tick()
    assert w.status["adoption"]["phase"] == "Replacing"
    obj = w.kube.cluster(w.name)
    assert kstatus(obj)[0] == "InProgress" and _kstatus_conditions(obj)["Reconciling"][1] == "Replacing"


async def test_a_paused_implementation_switch_is_in_progress_and_says_it_is_paused() -> None:
    obj = (await paused_switch()).kube.cluster("bk")
    status, message = kstatus(obj)
    assert status == "InProgress"
    assert message.startswith("implementation switch apache-bookkeeper to bookie-fleet paused by "
                              "spec.implementationSwitch.paused (1 switched, 2 to go)"), message
    assert _kstatus_conditions(obj)["Reconciling"][:2] == ("True", "ImplementationSwitchPaused")


async def test_a_paused_rebalance_is_in_progress_while_every_bookie_is_ready() -> None:
    w = await paused_rebalance()
    obj = w.kube.cluster("bk")
    assert decisions.condition(BookieClusterStatus.model_validate(obj["status"]).conditions,
                               "Ready").status == "True"  # type: ignore[union-attr]
    assert kstatus(obj) == ("InProgress", "rebalance paused by spec.rebalance.paused")
    w.kube.patch_spec("bk", {"rebalance": {"paused": False}})
    await w.tick()
    await w.tick()
    assert kstatus(w.kube.cluster("bk"))[0] == "Current"


def test_a_paused_switch_whose_bookie_cannot_start_is_failed_not_held() -> None:
    held = [("ImplementationSwitchPaused", "implementation switch paused by spec.implementationSwitch.paused")]
    f = facts(ready=2, writable=2, outdated=["bk-0", "bk-1"], held=held,
              problems=["bk-2: IncompatibleDisk"], problem_reason="IncompatibleDisk")
    assert kstatus(cluster(written(f))) == ("Failed", "bk-2: IncompatibleDisk")


def test_a_chosen_bookie_leaving_is_in_progress_while_nothing_else_changes() -> None:
    leaving = DecommissionRequestStatus(entry="bk-1", phase="Recovering", ordinal=1, pod="bk-1",
                                        bookie_id="bk-1.bk-headless.team.svc.cluster.local:3181",
                                        phase_since="2026-11-22T11:59:00Z")
    obj = cluster(written(facts(chosen_decommissions=[leaving])))
    assert kstatus(obj) == ("InProgress", "bk-1 (bk-1.bk-headless.team.svc.cluster.local:3181)")
