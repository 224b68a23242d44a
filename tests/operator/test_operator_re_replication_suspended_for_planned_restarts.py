"""Before the operator restarts bookies on purpose (a rolling restart, an adoption roll, an implementation switch)
it disables BookKeeper's re-replication, recording what was there before, and restores exactly that once every
bookie is back, ready and registered: a disable that was somebody else's is never lifted, one left by an
operator that died before recording it is, and a stopped restart or marks to clear hand the cluster back to
autorecovery (the pure decisions of ``decisions.re_replication``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from bookie_operator.decisions.re_replication import (
    ReplicationAction,
    ReplicationFacts,
    marker,
    planned_restart,
    re_replication_step,
    read_switch,
    settled,
)
from bookie_operator.models import ImplementationSwitchStatus, ReReplicationStatus

from tests.operator.helpers import NOW, bookie

OWN = marker("ns", "bk", "uid-1")
BOOKIES = [bookie(i) for i in range(3)]
REGISTERED = {b.bookie_id for b in BOOKIES}


def facts(**overrides: Any) -> ReplicationFacts:
    values: dict[str, Any] = dict(restart="the rolling restart", stopped=None, settled=True, under_replicated=0,
                                  switch="enabled")
    values.update(overrides)
    return ReplicationFacts(**values)


def suspended(previously_disabled: bool = False) -> ReReplicationStatus:
    return ReReplicationStatus(reason="the rolling restart", previously_disabled=previously_disabled,
                               since="2026-11-22T12:00:00Z")


def switch(phase: str) -> ImplementationSwitchStatus:
    return ImplementationSwitchStatus.model_validate({
        "target": "bookie-fleet", "source": "apache-bookkeeper", "phase": phase,
        "startedAt": "2026-11-22T12:00:00Z", "phaseSince": "2026-11-22T12:00:00Z"})


def test_the_disable_znode_is_ours_only_when_it_holds_this_clusters_marker() -> None:
    assert read_switch(None, OWN) == "enabled"
    assert read_switch(OWN, OWN) == "ours"
    assert read_switch(b"", OWN) == "others"                      # BookKeeper's shell writes it empty
    assert read_switch(marker("ns", "bk", "uid-2"), OWN) == "others"   # a cluster of the same name, recreated


def test_every_restarting_operation_is_planned_and_a_stopped_or_decommissioning_one_is_not() -> None:
    assert planned_restart(None, False, True, False) == ("the rolling restart", None)
    assert planned_restart(None, False, True, True) == ("the adoption roll", None)
    assert planned_restart(switch("Waiting"), False, False, False) == ("the implementation switch to "
                                                                       "bookie-fleet", None)
    assert planned_restart(switch("Restarting"), False, True, False)[0] == "the implementation switch to bookie-fleet"
    assert planned_restart(switch("Paused"), False, False, False, switch_paused=True) == \
        (None, "the implementation switch is paused")
    assert planned_restart(switch("Paused"), False, False, False, switch_paused=False)[0] == \
        "the implementation switch to bookie-fleet", "resumed by the spec: it restarts in this tick"
    assert planned_restart(switch("Waiting"), False, False, False, switch_paused=True) == \
        (None, "the implementation switch is paused"), "paused by the spec before its phase says so"
    in_flight = switch("Restarting").model_copy(update={"current": 1})
    assert planned_restart(in_flight, False, False, False, switch_paused=True)[0] == \
        "the implementation switch to bookie-fleet", "the bookie restarting finishes first"
    assert planned_restart(switch("Failed"), False, False, False) == (None, "the implementation switch is failed")
    assert planned_restart(None, True, True, False) == (None, "a decommission needs re-replication")
    assert planned_restart(None, False, False, False) == (None, None)


def test_settled_needs_every_pod_ready_and_every_bookie_registered() -> None:
    assert settled(BOOKIES, 3, REGISTERED)
    assert not settled(BOOKIES[:2], 3, REGISTERED), "a pod missing"
    assert not settled([*BOOKIES[:2], dataclasses.replace(BOOKIES[2], terminating=True)], 3, REGISTERED)
    assert not settled([*BOOKIES[:2], bookie(2, ready=False)], 3, REGISTERED)
    assert not settled(BOOKIES, 3, REGISTERED - {BOOKIES[0].bookie_id}), "ready but not registered yet"
    assert not settled(BOOKIES, 3, None), "ZooKeeper did not say"


def test_a_planned_restart_disables_replication_first_and_records_that_it_was_enabled() -> None:
    step = re_replication_step(None, facts(), NOW)
    assert step.action is ReplicationAction.DISABLE and step.hold is None
    assert step.status == ReReplicationStatus(reason="the rolling restart", previously_disabled=False,
                                              since="2026-11-22T12:00:00Z")
    assert step.event is not None and step.event[0] == "ReReplicationSuspended"


def test_a_disable_that_was_somebody_elses_is_recorded_and_never_lifted() -> None:
    step = re_replication_step(None, facts(switch="others"), NOW)
    assert step.action is ReplicationAction.NONE and step.status is not None and step.status.previously_disabled
    assert step.event is not None and "already disabled" in step.event[1]
    done = re_replication_step(step.status, facts(restart=None, switch="others"), NOW)
    assert done.status is None and done.action is ReplicationAction.NONE
    assert done.event is not None and "left disabled, as it was before" in done.event[1]


def test_it_stays_suspended_while_bookies_restart_and_is_restored_once_every_bookie_is_back() -> None:
    state = suspended()
    for between in (facts(switch="ours"), facts(switch="ours", settled=False),
                    facts(restart=None, switch="ours", settled=False)):    # the last pod not back yet
        step = re_replication_step(state, between, NOW)
        assert (step.status, step.action, step.event, step.hold) == (state, ReplicationAction.NONE, None, None)
    step = re_replication_step(state, facts(restart=None, switch="ours"), NOW)
    assert step.status is None and step.action is ReplicationAction.ENABLE
    assert step.event == ("ReReplicationRestored", "re-replication enabled again (the rolling restart is over "
                          "and every bookie is back)")


def test_it_is_suspended_only_on_a_healthy_cluster_and_restarts_wait_while_zookeeper_cannot_tell() -> None:
    for unhealthy in (facts(settled=False), facts(under_replicated=2), facts(under_replicated=None)):
        step = re_replication_step(None, unhealthy, NOW)   # the restarts' own gates wait for the same
        assert step.status is None and step.action is ReplicationAction.NONE and step.hold is None
    unknown = re_replication_step(None, facts(switch=None), NOW)
    assert unknown.status is None and unknown.hold == "ZooKeeper to tell whether re-replication is disabled"
    assert re_replication_step(suspended(), facts(switch=None), NOW).status == suspended(), "kept, not guessed"


def test_marks_to_clear_a_paused_or_failed_switch_and_a_decommission_restore_it_at_once() -> None:
    for handed_back in (facts(switch="ours", under_replicated=3),
                        facts(restart=None, stopped="the implementation switch is failed", switch="ours",
                              settled=False),
                        facts(restart=None, stopped="a decommission needs re-replication", switch="ours")):
        step = re_replication_step(suspended(), handed_back, NOW)
        assert step.status is None and step.action is ReplicationAction.ENABLE, handed_back


def test_an_operator_that_crashed_after_disabling_finds_its_marker_and_records_or_restores_it() -> None:
    # Disabled, then died before status was written: with the restart still to come it is recorded as its own.
    step = re_replication_step(None, facts(switch="ours"), NOW)
    assert step.action is ReplicationAction.NONE and step.status is not None
    assert not step.status.previously_disabled
    # ... and with nothing under way any more, it is lifted.
    step = re_replication_step(None, facts(restart=None, switch="ours"), NOW)
    assert step.status is None and step.action is ReplicationAction.ENABLE
    # Status written, the znode deleted, then died before status was cleared: nothing left to do but forget it.
    step = re_replication_step(suspended(), facts(restart=None, switch="enabled"), NOW)
    assert step.status is None and step.action is ReplicationAction.NONE


def test_enabled_by_someone_while_bookies_restart_it_is_disabled_again_and_enabled_at_the_end() -> None:
    step = re_replication_step(suspended(previously_disabled=True), facts(switch="enabled"), NOW)
    assert step.action is ReplicationAction.DISABLE
    assert step.status is not None and not step.status.previously_disabled
    assert re_replication_step(None, facts(restart=None, switch="enabled"), NOW).action is ReplicationAction.NONE
