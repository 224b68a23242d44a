"""A bookie that keeps itself read-only (a damaged journal found at start-up) is left so by the reconcile: no
request to make it writable on every tick, no stream of failure Events, one Warning that says why, and a
status that names the bookie's reason rather than a disk-usage one."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec


async def _bookie_2_read_only_for(reason: str, ticks: int) -> World:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=3))
    await w.tick()
    await w.tick()
    w.bookie(2).read_only, w.bookie(2).read_only_reason = True, reason
    for _ in range(ticks):
        await w.tick()
    return w


async def test_a_bookie_with_a_corrupt_journal_is_left_read_only_and_reported_once() -> None:
    w = await _bookie_2_read_only_for("journal-corrupt", ticks=5)

    assert w.bookie(2).read_only
    assert "set_read_only(False)" not in w.bookie(2).calls
    assert w.kube.reasons("ReadOnlyChangeFailed") == []
    assert len(w.kube.reasons("BookieHeldReadOnly")) == 1
    status = next(b for b in w.status["bookies"] if b["ordinal"] == 2)
    assert status["state"] == "ReadOnly" and status["readOnlyReason"].endswith("journal-corrupt")
    pressure = next(c for c in w.status["conditions"] if c["type"] == "DiskPressure")
    assert pressure["status"] == "False"


async def test_a_bookie_that_switched_itself_read_only_for_its_disk_is_still_made_writable() -> None:
    w = await _bookie_2_read_only_for("disk-full", ticks=1)
    assert not w.bookie(2).read_only
    assert w.kube.reasons("BookieHeldReadOnly") == []
