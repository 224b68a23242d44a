"""A bookie that keeps itself read-only (a damaged journal found at start-up) is left so by the reconcile: no
request to make it writable on every tick, no stream of failure Events, one Warning that says why, and a
status that names the bookie's reason rather than a disk-usage one."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec


async def test_a_bookie_with_a_corrupt_journal_is_left_read_only_and_reported_once() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=3))
    await w.tick()
    await w.tick()
    w.bookie(2).read_only, w.bookie(2).read_only_reason = True, "journal-corrupt"
    for _ in range(5):
        await w.tick()

    assert w.bookie(2).read_only
    assert "set_read_only(False)" not in w.bookie(2).calls
    assert w.kube.reasons("ReadOnlyChangeFailed") == []
    assert len(w.kube.reasons("BookieHeldReadOnly")) == 1
    status = next(b for b in w.status["bookies"] if b["ordinal"] == 2)
    assert status["state"] == "ReadOnly" and status["readOnlyReason"].endswith("journal-corrupt")
    pressure = next(c for c in w.status["conditions"] if c["type"] == "DiskPressure")
    assert pressure["status"] == "False"


async def test_a_bookie_that_switched_itself_read_only_for_its_disk_is_still_made_writable() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=3))
    await w.tick()
    await w.tick()
    w.bookie(2).read_only, w.bookie(2).read_only_reason = True, "disk-full"
    await w.tick()
    assert not w.bookie(2).read_only
    assert w.kube.reasons("BookieHeldReadOnly") == []
