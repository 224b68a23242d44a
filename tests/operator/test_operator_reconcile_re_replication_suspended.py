"""The whole reconcile around planned restarts, without a cluster: re-replication is disabled before the first
pod is deleted and stays so for every restart, status records what to restore, and once every bookie is back it
is enabled again, also when the operator dies after acting and before writing its status in any phase; a
disable that was somebody else's is left alone; one Event each."""

from __future__ import annotations

from typing import Any

import pytest
from bookie.metadata.store import MetadataError
from bookie_operator.decisions.re_replication import marker

from tests.operator.fakes import NS, OperatorCrashed, World, cluster_spec

JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
OURS = {"implementation": "bookie-fleet", "image": "bookie-fleet/bookie:0.1.0"}
CONFIG = {"flushInterval": 1000, "journalSyncData": False}     # keys both implementations know


async def started(**spec: Any) -> tuple[World, list[bytes | None]]:
    """A settled cluster, and what the disable znode held at each pod deletion from now on."""
    w = World()
    w.kube.create_cluster("bk", cluster_spec(config=CONFIG, **spec))
    await w.tick()
    await w.tick()
    at_deletions: list[bytes | None] = []
    delete = w.kube.delete

    async def recording(kind: str, namespace: str, name: str, *, propagation: str = "Background") -> bool:
        if kind == "Pod":
            at_deletions.append(w.zk.disabled_by)
        return await delete(kind, namespace, name, propagation=propagation)

    w.kube.delete = recording  # type: ignore[method-assign]
    return w, at_deletions


def own(w: World) -> bytes:
    meta = w.kube.cluster("bk")["metadata"]
    return marker(NS, "bk", meta.get("uid", "bk"))


async def run(w: World, crash_in: str | None = None, ticks: int = 40) -> list[str]:
    """Tick until nothing is suspended nor switching any more; the phases of the switch seen. ``crash_in``: the
    first tick that starts in that phase ends with the operator dying before its status write."""
    seen: list[str] = []
    busy = {"implementationSwitch", "reReplicationSuspended"}
    began = False
    for _ in range(ticks):
        phase = (w.status.get("implementationSwitch") or {}).get("phase")
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
            w.kube.crash_before_status_write = phase == crash_in
        try:
            await w.tick()
        except OperatorCrashed:
            w.operator = w.new_operator()
        began = began or bool(busy & set(w.status))
        if began and not busy & set(w.status):
            return seen
    raise AssertionError(f"still under way: {w.status}")


@pytest.mark.parametrize("crash_in", [None, "Waiting", "Restarting"])
async def test_a_switch_runs_with_re_replication_disabled_and_restores_it_after_a_crash(crash_in: str | None) \
        -> None:
    w, at_deletions = await started(**JAVA)
    w.kube.patch_spec("bk", OURS)
    await run(w, crash_in)
    assert at_deletions == [own(w)] * 3, "disabled by this cluster before every restart"
    assert w.zk.disabled_by is None, "enabled again at the end"
    assert w.zk.calls.count("enable_replication") == 1
    assert "reReplicationSuspended" not in w.status
    assert len(w.kube.reasons("ReReplicationSuspended")) == 1
    assert w.kube.reasons("ReReplicationRestored") == ["re-replication enabled again (the implementation switch "
                                                       "to bookie-fleet is over and every bookie is back)"]


async def test_a_switch_paused_before_its_first_restart_disables_replication_before_it_once_resumed() -> None:
    w, at_deletions = await started(**JAVA)
    w.kube.patch_spec("bk", {**OURS, "implementationSwitch": {"paused": True}})
    for _ in range(4):
        await w.tick()
    assert w.status["implementationSwitch"]["phase"] == "Paused" and at_deletions == []
    assert w.zk.disabled_by is None, "a paused switch leaves re-replication to autorecovery"
    w.kube.patch_spec("bk", {"implementationSwitch": {"paused": False}})
    await run(w)
    assert at_deletions == [own(w)] * 3, "disabled by this cluster before every restart, the first included"
    assert w.zk.disabled_by is None and "reReplicationSuspended" not in w.status
    assert len(w.kube.reasons("ReReplicationSuspended")) == 1


async def test_a_rolling_restart_leaves_a_users_own_disable_as_it_was() -> None:
    w, at_deletions = await started()
    w.zk.disabled_by = b""                    # `bookkeeper shell autorecovery -disable`
    w.kube.patch_spec("bk", {"config": {"flushInterval": 2000}})
    for _ in range(12):
        await w.tick()
        if len(w.kube.reasons("RollingRestart")) == 1:
            suspended = w.status["reReplicationSuspended"]
            assert (suspended["reason"], suspended["previouslyDisabled"]) == ("the rolling restart", True)
    assert len(w.kube.reasons("RollingRestart")) == 3
    assert at_deletions == [b""] * 3 and w.zk.disabled_by == b"", "the user's disable, never replaced nor lifted"
    assert "disable_replication" not in w.zk.calls and "enable_replication" not in w.zk.calls
    assert "reReplicationSuspended" not in w.status
    assert w.kube.reasons("ReReplicationRestored") == ["re-replication left disabled, as it was before (the "
                                                       "rolling restart is over and every bookie is back)"]


async def test_no_pod_is_restarted_while_zookeeper_cannot_disable_replication() -> None:
    w, at_deletions = await started()
    refuse = w.zk.disable_replication_as

    async def failing(owner: bytes) -> bool:
        raise MetadataError("connection loss")

    w.zk.disable_replication_as = failing  # type: ignore[method-assign]
    w.kube.patch_spec("bk", {"config": {"flushInterval": 2000}})
    for _ in range(4):
        outcome = await w.tick()
    assert at_deletions == [] and w.kube.reasons("RollingRestart") == []
    assert any("re-replication to be disabled in ZooKeeper (connection loss)" in m for m in outcome.waiting)
    w.zk.disable_replication_as = refuse  # type: ignore[method-assign]
    await run(w)
    assert at_deletions == [own(w)] * 3 and w.zk.disabled_by is None
