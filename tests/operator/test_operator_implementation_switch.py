"""A change of spec.implementation switches one bookie at a time, highest ordinal first, only on a healthy
cluster; it pauses, stops at a bookie that cannot start on the target, reverses, and finishes when every pod
runs the target (the pure decisions of ``decisions.implementation_switch``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from bookie_operator import builders
from bookie_operator.decisions.implementation_switch import (
    SwitchFacts,
    reverse_switch,
    start_switch,
    switch_step,
)
from bookie_operator.decisions.observed import ObservedBookie
from bookie_operator.models import ImplementationSwitchStatus

from tests.operator.helpers import NOW, bookie, spec

JAVA, OURS = "apache-bookkeeper", "bookie-fleet"


def fleet(*implementations: str, revision: str = "old", **changes: Any) -> list[ObservedBookie]:
    """Bookies 0..n-1 running the given implementations; ``changes`` maps an ordinal ("b1") to field changes."""
    out = []
    for i, implementation in enumerate(implementations):
        b = dataclasses.replace(bookie(i, revision=revision if implementation == JAVA else "new"),
                                implementation=implementation)
        out.append(dataclasses.replace(b, **changes.get(f"b{i}", {})))
    return out


def facts(bookies: list[ObservedBookie], **overrides: Any) -> SwitchFacts:
    values: dict[str, Any] = dict(bookies=bookies, replicas=3, template_ready=True, update_revision="new",
                                  under_replicated=0, paused=False, config_problem=None, busy=None,
                                  start_failures={})
    values.update(overrides)
    return SwitchFacts(**values)


def started(bookies: list[ObservedBookie]) -> ImplementationSwitchStatus:
    state = start_switch(OURS, bookies, NOW)
    assert state is not None
    return state


def test_a_switch_starts_only_when_pods_run_another_implementation() -> None:
    assert start_switch(OURS, fleet(OURS, OURS, OURS), NOW) is None
    unlabelled = [dataclasses.replace(b, implementation=None) for b in fleet(JAVA, JAVA, JAVA)]
    assert start_switch(OURS, unlabelled, NOW) is None      # not this operator's pods: the rolling restart's
    state = started(fleet(JAVA, JAVA, JAVA))
    assert (state.source, state.target, state.phase, state.current) == (JAVA, OURS, "Waiting", None)


def test_the_highest_ordinal_goes_first_and_the_next_only_once_it_runs_the_target() -> None:
    bookies = fleet(JAVA, JAVA, JAVA)
    step = switch_step(started(bookies), facts(bookies), NOW)
    assert step.restart is not None and step.restart.pod == "bk-2"
    assert step.status is not None and (step.status.phase, step.status.current) == ("Restarting", 2)
    assert step.status.remaining == [2, 1, 0] and step.status.converted == []

    # Deleted, recreated on the target, not ready yet: nothing else moves.
    coming = fleet(JAVA, JAVA, OURS, b2={"ready": False})
    again = switch_step(step.status, facts(coming), NOW)
    assert again.restart is None and again.status is not None and again.status.current == 2
    assert again.waiting == "bk-2 to start on bookie-fleet"

    done = switch_step(again.status, facts(fleet(JAVA, JAVA, OURS)), NOW)
    assert done.restart is None and done.status is not None
    assert (done.status.phase, done.status.current, done.status.converted) == ("Waiting", None, [2])
    nxt = switch_step(done.status, facts(fleet(JAVA, JAVA, OURS)), NOW)
    assert nxt.restart is not None and nxt.restart.pod == "bk-1"


def test_the_current_pod_is_deleted_again_after_a_crash_only_while_it_still_runs_the_source() -> None:
    state = started(fleet(JAVA, JAVA, JAVA)).model_copy(update={"phase": "Restarting", "current": 2})
    assert switch_step(state, facts(fleet(JAVA, JAVA, JAVA)), NOW).restart is not None
    terminating = fleet(JAVA, JAVA, JAVA, b2={"terminating": True, "ready": False})
    assert switch_step(state, facts(terminating), NOW).restart is None
    gone = fleet(JAVA, JAVA, JAVA, b2={"exists": False, "ready": False})
    assert switch_step(state, facts(gone), NOW).restart is None
    # The StatefulSet does not carry the target's template yet: a deleted pod would come back on the source.
    assert switch_step(state, facts(fleet(JAVA, JAVA, JAVA), template_ready=False), NOW).restart is None


def test_the_next_bookie_waits_for_every_bookie_ready_and_no_under_replicated_ledgers() -> None:
    state = started(fleet(JAVA, JAVA, OURS))
    not_ready = switch_step(state, facts(fleet(JAVA, JAVA, OURS, b0={"ready": False})), NOW)
    assert not_ready.restart is None and not_ready.waiting == "every bookie ready before the next switch"
    missing = switch_step(state, facts(fleet(JAVA, JAVA)), NOW)
    assert missing.restart is None and missing.waiting == "every bookie ready before the next switch"
    under = switch_step(state, facts(fleet(JAVA, JAVA, OURS), under_replicated=4), NOW)
    assert under.restart is None and under.status is not None
    assert under.status.message == "no under-replicated ledgers before the next switch (4 now)"
    unknown = switch_step(state, facts(fleet(JAVA, JAVA, OURS), under_replicated=None), NOW)
    assert unknown.restart is None and unknown.waiting is not None
    busy = switch_step(state, facts(fleet(JAVA, JAVA, OURS), busy="the decommission of bk-3"), NOW)
    assert busy.restart is None and busy.waiting == "the decommission of bk-3"


def test_a_config_only_one_implementation_knows_holds_the_switch_before_its_next_bookie() -> None:
    state = started(fleet(JAVA, JAVA, OURS))
    step = switch_step(state, facts(fleet(JAVA, JAVA, OURS), config_problem="spec.config.x: not both"), NOW)
    assert step.restart is None and step.status is not None and step.status.message == "spec.config.x: not both"


def test_a_paused_switch_finishes_the_current_bookie_and_starts_no_other() -> None:
    state = started(fleet(JAVA, JAVA, JAVA)).model_copy(update={"phase": "Restarting", "current": 2})
    finishing = switch_step(state, facts(fleet(JAVA, JAVA, JAVA), paused=True), NOW)
    assert finishing.restart is not None and finishing.restart.pod == "bk-2"
    done = switch_step(finishing.status, facts(fleet(JAVA, JAVA, OURS), paused=True), NOW)  # type: ignore[arg-type]
    paused = switch_step(done.status, facts(fleet(JAVA, JAVA, OURS), paused=True), NOW)  # type: ignore[arg-type]
    assert paused.restart is None and paused.status is not None and paused.status.phase == "Paused"
    resumed = switch_step(paused.status, facts(fleet(JAVA, JAVA, OURS)), NOW)
    assert resumed.restart is not None and resumed.restart.pod == "bk-1"


def test_a_bookie_that_cannot_start_on_the_target_stops_the_switch_and_names_itself() -> None:
    state = started(fleet(JAVA, JAVA, JAVA)).model_copy(update={"phase": "Restarting", "current": 2})
    failing = fleet(JAVA, JAVA, OURS, b2={"ready": False})
    why = ("IncompatibleDisk", "ledgers-0: index written by a newer RocksDB")
    step = switch_step(state, facts(failing, start_failures={2: why}), NOW)
    assert step.restart is None and step.status is not None and step.status.phase == "Failed"
    assert step.failure is not None and "bk-2 cannot start on bookie-fleet (IncompatibleDisk: ledgers-0" in step.failure
    assert "set spec.implementation back to apache-bookkeeper" in step.failure
    # The others stay as they were however long it lasts.
    later = switch_step(step.status, facts(failing, start_failures={2: why}), NOW)
    assert later.restart is None and later.status is not None and later.status.phase == "Failed"


def test_setting_the_implementation_back_restarts_a_bookie_that_cannot_start_first() -> None:
    failed = started(fleet(JAVA, JAVA, JAVA)).model_copy(update={"phase": "Failed", "current": 2})
    failing = fleet(JAVA, JAVA, OURS, b2={"ready": False})
    back = reverse_switch(failed, JAVA, failing, NOW)
    assert (back.source, back.target, back.current, back.phase) == (OURS, JAVA, 2, "Restarting")
    # The StatefulSet's template is Java's again; the pod on ours is outdated and down: restarted at once.
    step = switch_step(back, facts(failing, update_revision="old", under_replicated=7), NOW)
    assert step.restart is not None and step.restart.pod == "bk-2"


def test_setting_the_implementation_back_rolls_the_converted_bookies_back_highest_first() -> None:
    midway = started(fleet(JAVA, JAVA, JAVA)).model_copy(update={"phase": "Waiting"})
    bookies = fleet(JAVA, OURS, OURS)
    back = reverse_switch(midway, JAVA, bookies, NOW)
    assert (back.source, back.target, back.current, back.phase) == (OURS, JAVA, None, "Waiting")
    step = switch_step(back, facts(bookies, update_revision="old"), NOW)
    assert step.restart is not None and step.restart.pod == "bk-2"
    assert step.status is not None and step.status.remaining == [2, 1] and step.status.converted == [0]


def test_the_switch_finishes_when_every_pod_runs_the_target() -> None:
    state = started(fleet(JAVA, OURS, OURS))
    assert switch_step(state, facts(fleet(OURS, OURS, OURS)), NOW).finished
    missing = switch_step(state, facts(fleet(OURS, OURS)), NOW)
    assert not missing.finished and missing.restart is None


def test_the_configuration_during_a_switch_is_read_by_both_implementations() -> None:
    ours = spec(implementation=OURS, config={"flushInterval": 1000, "journalSyncData": False})
    shared = builders.switch_bookie_config(ours, JAVA)
    assert shared["ledgerStorageClass"].endswith("DbLedgerStorage")      # Java's default would be another
    assert "httpServerAuthTokenFile" in shared and "useHostNameAsBookieID" not in shared
    assert shared["httpServerClass"] == "org.apache.bookkeeper.http.vertx.VertxHttpServer"   # Java needs it
    assert shared["flushInterval"] == 1000
    java = spec(implementation=JAVA, image="j", config={"flushInterval": 1000})
    cm = builders.switch_configmap(builders.Owner("bk", "ns", "u"), java, OURS)
    assert set(cm["data"]) == {"bk_server.conf", "inspector.conf"}


def test_a_key_only_one_implementation_knows_is_refused_for_a_switch_with_its_name() -> None:
    java = spec(implementation=JAVA, image="j", config={"allowEphemeralPorts": False})
    try:
        builders.switch_bookie_config(java, OURS)
    except ValueError as exc:
        assert "spec.config.allowEphemeralPorts" in str(exc)
    else:
        raise AssertionError("a key our bookie does not know was accepted for a switch")


def test_while_a_switch_runs_the_ports_of_both_implementations_are_served() -> None:
    ours = spec(implementation=OURS)
    owner = builders.Owner("bk", "ns", "u")
    service = builders.switch_headless_service(owner, ours, JAVA)
    assert {p["name"] for p in service["spec"]["ports"]} == {"bookie", "http", "inspector"}
    policy = builders.switch_network_policy(owner, ours, JAVA, [])
    assert policy is not None
    scraped = {p["port"] for rule in policy["spec"]["ingress"] if rule.get("from") and any(
        "namespaceSelector" in peer for peer in rule["from"]) for p in rule["ports"]}
    # Ours serves /metrics on 8000, the Java bookies' inspector on 8001; monitoring never reaches 8080, the Java
    # bookie's own (unauthenticated) admin API.
    assert scraped == {8000, 8001}
    assert builders.switch_network_policy(owner, spec(implementation=OURS, networkPolicy={"enabled": False}),
                                          JAVA, []) is None
