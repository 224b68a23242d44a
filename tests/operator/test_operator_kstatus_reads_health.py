"""Flux and kpt read a BookieCluster's health through kstatus (sigs.k8s.io/cli-utils), which knows no custom
resource but reads the Reconciling, Stalled and Ready conditions and status.observedGeneration. Over the statuses
the operator's own decisions write: InProgress while it creates or rolls (even with every bookie Ready), Current
when settled, Failed when it cannot go on without the user (a bookie that cannot start, an invalid spec), and
InProgress, not Failed, while ledgers heal on their own."""

from __future__ import annotations

from bookie_operator import decisions
from bookie_operator.decisions import start_failures
from bookie_operator.models import BookieClusterStatus

from tests.operator.gitops_health import kstatus
from tests.operator.health_objects import GENERATION, cluster, facts, invalid_spec, recovering, with_conditions, written
from tests.operator.helpers import NOW, spec


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
