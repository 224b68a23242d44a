"""Suspending BookKeeper's re-replication while the operator restarts bookies on purpose, and restoring it.

A bookie restarted by a rolling restart, an adoption roll or an implementation switch is gone for as long as
its pod takes to stop and start; on a loaded machine that outlasts lostBookieRecoveryDelay, and the auditor
then marks every ledger it holds under-replicated and autorecovery copies them, for a bookie that comes back
with all its data. So before the first planned restart the operator disables replication (BookKeeper's
``underreplication/disable`` znode, ``bookkeeper shell autorecovery -disable``) and enables it again once the
restart is over and every bookie is back, ready and registered.

Why the disable znode and not a larger lostBookieRecoveryDelay: the auditor of both implementations waits while
it exists and audits afresh once it is gone, so a bookie that is back by then is never marked, however long its
restart took; no delay is long enough for every restart (an image pull, a JVM start on a loaded node), and the
delay covers only the lost-bookie check, not the auditor's periodic checks nor the replication workers. It is a
flag, so the previous setting is restored exactly: the znode the operator creates holds its own marker, and
only a znode holding that marker is ever deleted; a disable that was somebody else's (BookKeeper's tools write
it empty) is left as it was, before, during and after.

The marker also makes the suspension survive an operator crash: status.reReplicationSuspended records it, and a
marker found with no status (the operator died between creating it and writing status) is the operator's own.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass
from typing import Literal

from bookie_operator.decisions.observed import ObservedBookie, iso
from bookie_operator.models import ImplementationSwitchStatus, ReReplicationStatus

# What the ``disable`` znode says: absent (replication enabled), holding this cluster's marker, or anything else
# (somebody else's disable: a person's, BookKeeper's shell, another BookieCluster on the same metadata).
Switch = Literal["enabled", "ours", "others"]


class ReplicationAction(enum.Enum):
    NONE = "none"
    DISABLE = "disable"      # create the disable znode with this cluster's marker
    ENABLE = "enable"        # delete it, only if it still holds this cluster's marker


@dataclass(frozen=True)
class ReplicationFacts:
    restart: str | None          # the planned restart under way (None: none)
    stopped: str | None          # why planned restarts stopped short (a paused or failed switch, a decommission)
    settled: bool                # every bookie exists, is ready, not terminating, and registered
    under_replicated: int | None  # None: ZooKeeper did not answer
    switch: Switch | None        # None: ZooKeeper did not answer


@dataclass(frozen=True)
class ReplicationStep:
    status: ReReplicationStatus | None
    action: ReplicationAction = ReplicationAction.NONE
    event: tuple[str, str] | None = None     # (reason, message) of a Normal Event
    hold: str | None = None                  # why no bookie may be restarted this tick


def marker(namespace: str, name: str, uid: str) -> bytes:
    """The disable znode's content when this cluster created it (BookKeeper reads only whether it exists)."""
    return f"bookie-operator {namespace}/{name} {uid}".encode()


def read_switch(data: bytes | None, own: bytes) -> Switch:
    if data is None:
        return "enabled"
    return "ours" if data == own else "others"


def planned_restart(switch: ImplementationSwitchStatus | None, decommissioning: bool, outdated: bool,
                    adoption_rolling: bool, switch_paused: bool = False) -> tuple[str | None, str | None]:
    """(the planned restart under way, why planned restarts stopped): the same operations, in the same order,
    as the reconcile's steps that restart pods. A switch is judged by spec.implementationSwitch.paused
    (``switch_paused``), not by its phase in status, which the switch's own step writes after this one: a switch
    the spec pauses holds once no bookie is in flight (the one restarting finishes first), and one the spec
    resumes restarts its next bookie in this very tick."""
    if decommissioning:         # it needs autorecovery to move the bookie's ledgers
        return None, "a decommission needs re-replication"
    if switch is not None:
        if switch.phase == "Failed":
            return None, "the implementation switch is failed"
        if switch_paused and switch.current is None:
            return None, "the implementation switch is paused"
        return f"the implementation switch to {switch.target}", None
    if outdated:
        return ("the adoption roll" if adoption_rolling else "the rolling restart"), None
    return None, None


def settled(bookies: list[ObservedBookie], replicas: int, registered: set[str] | None) -> bool:
    """Every bookie back: its pod exists, is ready and not terminating, and it is registered (the auditor
    counts a bookie as lost by its registration, not by its pod)."""
    present = [b for b in bookies if b.exists]
    if len(present) < replicas or any(not b.ready or b.terminating for b in present):
        return False
    return registered is not None and all(b.bookie_id in registered for b in present)


def re_replication_step(state: ReReplicationStatus | None, facts: ReplicationFacts,
                        now: dt.datetime) -> ReplicationStep:
    if facts.switch is None:
        hold = "ZooKeeper to tell whether re-replication is disabled" if facts.restart and state is None else None
        return ReplicationStep(state, hold=hold)
    if state is None:
        return _start(facts, now)
    return _continue(state, facts)


def _start(facts: ReplicationFacts, now: dt.datetime) -> ReplicationStep:
    if facts.restart is None:
        if facts.switch == "ours":      # suspended by an operator that died before it could record it
            return ReplicationStep(None, ReplicationAction.ENABLE, (
                "ReReplicationRestored", "re-replication enabled again: the operator's own disable was found "
                "with no restart under way"))
        return ReplicationStep(None)
    # Only on a healthy cluster, as the restarts themselves: a bookie that is down, or marks to clear, need
    # autorecovery. No hold: the restarts' own gates wait for the same, and the one restart they allow on an
    # unhealthy cluster (a reversed switch's bookie that could not start) takes nothing down that was up.
    if not facts.settled or facts.under_replicated != 0:
        return ReplicationStep(None)
    previously = facts.switch == "others"
    status = ReReplicationStatus(reason=facts.restart, previously_disabled=previously, since=iso(now))
    if previously:
        return ReplicationStep(status, event=("ReReplicationSuspended", f"for {facts.restart}: re-replication "
                               "was already disabled by someone else, and is left so afterwards"))
    action = ReplicationAction.DISABLE if facts.switch == "enabled" else ReplicationAction.NONE
    return ReplicationStep(status, action, ("ReReplicationSuspended", f"for {facts.restart}: re-replication "
                           "disabled (underreplication/disable) until every bookie is back and ready, so that no "
                           "ledger of a restarting bookie is marked under-replicated or copied"))


def _continue(state: ReReplicationStatus, facts: ReplicationFacts) -> ReplicationStep:
    marks = facts.settled and bool(facts.under_replicated)
    if facts.stopped or marks or (facts.restart is None and facts.settled):
        why = facts.stopped or (f"{facts.under_replicated} under-replicated ledgers to re-replicate" if marks
                                else f"{state.reason} is over and every bookie is back")
        if facts.switch == "ours":
            return ReplicationStep(None, ReplicationAction.ENABLE, (
                "ReReplicationRestored", f"re-replication enabled again ({why})"))
        left = ("left disabled, as it was before" if facts.switch == "others" and state.previously_disabled
                else "left disabled by someone else" if facts.switch == "others" else "already enabled")
        return ReplicationStep(None, event=("ReReplicationRestored", f"re-replication {left} ({why})"))
    if facts.switch == "enabled":
        # Enabled by someone meanwhile while bookies are still being restarted: suspended again, by this
        # cluster (what is restored at the end is then "enabled").
        return ReplicationStep(state.model_copy(update={"previously_disabled": False}), ReplicationAction.DISABLE)
    return ReplicationStep(state)
