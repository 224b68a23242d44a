"""Switching the bookies between implementations in place: the resumable state machine kept in
``status.implementationSwitch``.

A change of spec.implementation on a running cluster restarts each bookie on its own volumes with the other
image: same bookie id, same cookie, no data moved (both implementations read the same journal, entry logs and
index). One bookie at a time, highest ordinal first, each only when every bookie is ready and nothing is
under-replicated, as a rolling restart. The state says which bookie is being restarted; which ones run which
implementation is read again every tick from the pods' implementation label, so an operator restarted at any
point (even between deleting a pod and writing its status) carries on from what it finds. Setting
spec.implementation back reverses the switch the same way; a bookie that cannot start on the target stops it
there (phase Failed), the others left as they were.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bookie_operator.decisions.observed import ObservedBookie, iso, sort_by_ordinal
from bookie_operator.models import ImplementationSwitchPhase, ImplementationSwitchStatus


@dataclass(frozen=True)
class SwitchFacts:
    """What the reconcile observed for the switch."""

    bookies: list[ObservedBookie]
    replicas: int                        # pods the StatefulSet runs
    template_ready: bool                 # the StatefulSet's template (and its update revision) is the target's
    update_revision: str | None
    under_replicated: int | None         # None: unknown (ZooKeeper did not answer)
    paused: bool                         # spec.implementationSwitch.paused
    config_problem: str | None           # why spec.config is not valid for both implementations
    busy: str | None                     # another operation that holds the bookies (a decommission)
    start_failures: Mapping[int, tuple[str, str]]   # ordinal -> (reason, message) of a container that cannot start


@dataclass(frozen=True)
class SwitchStep:
    status: ImplementationSwitchStatus | None   # None: finished
    restart: ObservedBookie | None              # the pod to delete (the StatefulSet recreates it on the target)
    waiting: str | None
    finished: bool = False
    failure: str | None = None                  # the current bookie cannot start on the target


def on_source(bookies: list[ObservedBookie], target: str) -> list[ObservedBookie]:
    """Pods running another implementation than ``target``, in the order they are switched (highest ordinal
    first, as rolling restarts and the StatefulSet's own updates go). Pods without the label (made by something
    else than this operator) are not the switch's: the rolling restart brings them to the template."""
    return [b for b in reversed(sort_by_ordinal(bookies))
            if b.exists and b.implementation is not None and b.implementation != target]


def start_switch(target: str, bookies: list[ObservedBookie], now: dt.datetime) -> ImplementationSwitchStatus | None:
    """A new switch when pods run another implementation than spec.implementation."""
    pending = on_source(bookies, target)
    if not pending:
        return None
    return ImplementationSwitchStatus(
        target=target, source=pending[0].implementation, phase="Waiting",  # type: ignore[arg-type]
        started_at=iso(now), phase_since=iso(now))


def reverse_switch(state: ImplementationSwitchStatus, target: str, bookies: list[ObservedBookie],
                   now: dt.datetime) -> ImplementationSwitchStatus:
    """spec.implementation set back mid-way: the converted bookies go back the same way. A bookie that is down
    on the abandoned target (it could not start there) is the first one back, whatever the gates say: it serves
    nothing, so restarting it cannot lower availability."""
    current = state.current
    down = next((b for b in bookies if b.ordinal == current and b.exists and not b.ready), None)
    return ImplementationSwitchStatus(
        target=target, source=state.target, phase="Restarting" if down else "Waiting",  # type: ignore[arg-type]
        current=current if down else None, started_at=iso(now), phase_since=iso(now))


def switch_step(state: ImplementationSwitchStatus, facts: SwitchFacts, now: dt.datetime) -> SwitchStep:
    """One step of the switch: finish the current bookie, or check the gates and pick the next one."""
    pending = on_source(facts.bookies, state.target)
    state = state.model_copy(update={
        "remaining": [b.ordinal for b in pending],
        "converted": [b.ordinal for b in sort_by_ordinal(facts.bookies)
                      if b.exists and b.implementation == state.target]})

    def to(phase: ImplementationSwitchPhase, message: str = "", current: int | None = None) \
            -> ImplementationSwitchStatus:
        since = state.phase_since if phase == state.phase else iso(now)
        return state.model_copy(update={"phase": phase, "phase_since": since, "message": message, "current": current})

    if state.current is not None:
        return _current_step(state, facts, to)
    present = [b for b in facts.bookies if b.exists]
    if not pending and len(present) >= facts.replicas and all(b.implementation == state.target for b in present):
        return SwitchStep(None, None, None, finished=True)
    if facts.paused:
        return _wait(to("Paused", "spec.implementationSwitch.paused"), "spec.implementationSwitch.paused to be "
                     "false")
    for blocker in (facts.busy, facts.config_problem, _gate(facts, present)):
        if blocker:
            return _wait(to("Waiting", blocker), blocker)
    if not pending:     # a pod is being recreated by the StatefulSet: the gate above waits for it
        return _wait(to("Waiting", "every bookie to run the target"), "every bookie to run the target")
    nxt = pending[0]
    return SwitchStep(to("Restarting", f"{nxt.pod}: restarting on {state.target}", nxt.ordinal), nxt,
                      f"{nxt.pod} to start on {state.target}")


def _current_step(state: ImplementationSwitchStatus, facts: SwitchFacts,
                  to: Callable[..., ImplementationSwitchStatus]) -> SwitchStep:
    """The bookie being restarted: delete its pod while it still runs the old template (idempotent), wait for
    it on the target, stop there when it cannot start."""
    ordinal = state.current
    bookie = next((b for b in facts.bookies if b.ordinal == ordinal and b.exists), None)
    pod = bookie.pod if bookie else f"ordinal {ordinal}"
    on_target = bookie is not None and bookie.implementation == state.target
    if on_target and bookie is not None and bookie.ready and not bookie.terminating:
        return SwitchStep(to("Waiting", f"{bookie.pod} runs {state.target}"), None, None)
    failure = facts.start_failures.get(ordinal) if ordinal is not None else None
    if failure is not None and on_target:
        reason, message = failure
        what = (f"{pod} cannot start on {state.target} ({reason}: {message}); the switch stops here, the other "
                f"bookies are left as they are: set spec.implementation back to {state.source} to restart {pod} "
                f"on {state.source}")
        return SwitchStep(to("Failed", f"{pod}: {reason}: {message}", ordinal), _outdated(bookie, facts),
                          f"{pod} to start on {state.target} (it cannot: Degraded says why)", failure=what)
    if bookie is not None and not bookie.terminating and facts.template_ready and _outdated(bookie, facts):
        return SwitchStep(to("Restarting", f"{pod}: restarting on {state.target}", ordinal), bookie,
                          f"{pod} to start on {state.target}")
    return SwitchStep(to("Restarting", f"{pod}: starting on {state.target}", ordinal), None,
                      f"{pod} to start on {state.target}")


def _outdated(bookie: ObservedBookie | None, facts: SwitchFacts) -> ObservedBookie | None:
    """The bookie, if its pod is not the StatefulSet's current template: the old implementation, or a target
    template the spec has changed since (a fixed image for a bookie that could not start)."""
    if bookie is None or bookie.terminating or not facts.template_ready:
        return None
    if facts.update_revision is not None and bookie.revision != facts.update_revision:
        return bookie
    return None


def _gate(facts: SwitchFacts, present: list[ObservedBookie]) -> str | None:
    """What the next bookie waits for, as a rolling restart does; None: it may go."""
    if not facts.template_ready:
        return "the StatefulSet to carry the target's pod template"
    if len(present) < facts.replicas or any(not b.ready or b.terminating for b in present):
        return "every bookie ready before the next switch"
    if facts.under_replicated is None:
        return "ZooKeeper's count of under-replicated ledgers before the next switch"
    if facts.under_replicated > 0:
        return f"no under-replicated ledgers before the next switch ({facts.under_replicated} now)"
    return None


def _wait(status: ImplementationSwitchStatus, what: str) -> SwitchStep:
    return SwitchStep(status, None, what)

