"""The whole reconcile on a new cluster, without a cluster: metadata initialised once, the desired objects
applied once, Ready when every bookie runs and is registered, and an idle cluster writes nothing more."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec


def condition(world: World, type_: str) -> dict[str, str]:
    return next(c for c in world.status["conditions"] if c["type"] == type_)


async def test_a_new_cluster_is_initialised_applied_and_becomes_ready() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    first = await w.tick()
    assert w.zk.calls == ["init_cluster"] and w.status["instanceId"] == "instance-1"
    assert sorted(w.kube.applied) == ["ConfigMap/bk-config", "NetworkPolicy/bk", "PodDisruptionBudget/bk",
                                      "Service/bk", "Service/bk-headless", "StatefulSet/bk"]
    assert w.kube.created == ["Secret/bk-admin-token", "Secret/bk-audit-token", "Secret/bk-token-hashes"]
    assert first.waiting and condition(w, "Ready")["status"] == "False"

    await w.tick()
    assert condition(w, "Ready") == {**condition(w, "Ready"), "status": "True", "reason": "BookiesReady"}
    assert w.status["readyReplicas"] == 3 and w.status["writableBookies"] == 3

    applies, patches, events = len(w.kube.applied), len(w.kube.status_patches), len(w.kube.events)
    for _ in range(5):
        assert not (await w.tick(seconds=30)).waiting  # past the tokens' re-read: the hashes are not re-applied
    assert (len(w.kube.applied), len(w.kube.status_patches), len(w.kube.events)) == (applies, patches, events)
    assert w.kube.reasons("MetadataInitialized") == ["BookKeeper metadata at /ledgers (instance instance-1)"]
    assert w.zk.calls == ["init_cluster"]


async def test_an_invalid_spec_is_reported_once_and_nothing_is_applied() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(replicas=1, ensembleSize=3))
    for _ in range(3):
        await w.tick()
    assert w.kube.applied == []
    assert condition(w, "Degraded")["reason"] == "InvalidSpec"
    assert len(w.kube.reasons("InvalidSpec")) == 1
