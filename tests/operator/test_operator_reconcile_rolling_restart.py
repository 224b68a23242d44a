"""The whole reconcile through a configuration change, without a cluster: pods are restarted one at a time,
highest ordinal first, each only once every bookie is ready again and nothing is under-replicated."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec


async def test_a_config_change_rolls_the_pods_one_at_a_time_from_the_highest_ordinal() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    await w.tick()
    w.kube.patch_spec("bk", {"config": {"flushInterval": 2000}})
    for _ in range(10):
        await w.tick()
    assert w.kube.reasons("RollingRestart") == ["bk-2 restarted to apply revision rev-2",
                                                "bk-1 restarted to apply revision rev-2",
                                                "bk-0 restarted to apply revision rev-2"]
    pods = [w.kube.objects[("Pod", "team", f"bk-{o}")] for o in range(3)]
    assert all(p["metadata"]["labels"]["controller-revision-hash"] == "rev-2" for p in pods)


async def test_no_pod_is_restarted_while_ledgers_are_under_replicated() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    await w.tick()
    w.zk.under_replicated_ledgers = 2
    w.kube.patch_spec("bk", {"config": {"flushInterval": 2000}})
    for _ in range(5):
        outcome = await w.tick()
    assert w.kube.reasons("RollingRestart") == []
    assert "rolling restart: waiting for no under-replicated ledgers before the next restart" in outcome.waiting
    w.zk.under_replicated_ledgers = 0
    await w.tick()
    assert w.kube.reasons("RollingRestart") == ["bk-2 restarted to apply revision rev-2"]
