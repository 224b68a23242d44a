"""The whole reconcile under disk pressure, without a cluster: the full bookie is set read-only once, stays so
between the marks, and is set writable again below the low-water mark, each change announced once."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec


async def test_a_full_bookie_goes_read_only_and_comes_back_below_the_low_water_mark() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(diskPolicy={"readOnlyHighWaterMark": 0.85,
                                                         "writableLowWaterMark": 0.70}))
    await w.tick()
    await w.tick()
    w.bookie(1).used = 0.90
    for _ in range(3):
        await w.tick()
    assert w.bookie(1).read_only
    status = next(b for b in w.status["bookies"] if b["ordinal"] == 1)
    assert status["state"] == "ReadOnly" and status["readOnlyReason"].startswith("operator: disk 90%")

    w.bookie(1).used = 0.75                    # between the marks: stays read-only
    for _ in range(3):
        await w.tick()
    assert w.bookie(1).read_only

    w.bookie(1).used = 0.50
    for _ in range(3):
        await w.tick()
    assert not w.bookie(1).read_only
    assert len(w.kube.reasons("BookieReadOnly")) == 1 and len(w.kube.reasons("BookieWritable")) == 1
    assert w.bookie(1).calls.count("set_read_only(True)") == 1
    assert w.bookie(1).calls.count("set_read_only(False)") == 1
