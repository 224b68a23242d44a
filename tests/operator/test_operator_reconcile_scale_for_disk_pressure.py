"""The whole reconcile under disk pressure with scale-up allowed, without a cluster: the added bookie is counted
in status.scaledUpBy and the spec is never written, so re-applying the original manifest (what Argo CD or Flux
does every sync) changes nothing; once the pressure is gone, the added bookie leaves through the decommission."""

from __future__ import annotations

from tests.operator.fakes import World, cluster_spec

MANIFEST = cluster_spec(replicas=2, ensembleSize=2,
                        diskPolicy={"readOnlyHighWaterMark": 0.85, "writableLowWaterMark": 0.70,
                                    "scaleUp": {"enabled": True, "maxReplicas": 3}})


def sts_replicas(w: World) -> int:
    return int(w.kube.objects[("StatefulSet", "team", "bk")]["spec"]["replicas"])


async def test_scale_up_lives_in_status_and_a_reapplied_manifest_does_not_undo_it() -> None:
    w = World()
    w.kube.create_cluster("bk", MANIFEST)
    await w.tick()
    await w.tick()
    w.bookie(0).used = 0.90
    seen: list[int] = []
    for _ in range(6):
        w.kube.patch_spec("bk", {"replicas": 2})   # the GitOps controller syncs the manifest again
        await w.tick()
        seen.append(sts_replicas(w))
    assert w.kube.cluster("bk")["spec"]["replicas"] == 2
    assert w.status["scaledUpBy"] == 1
    assert seen[-1] == 3 and seen == sorted(seen)   # up once, never back down
    assert w.bookie(0).read_only                    # the full bookie went read-only once bk-2 was there
    assert len(w.kube.reasons("ScaledUp")) == 1 and not w.kube.reasons("DecommissionStarted")


async def test_once_the_pressure_is_gone_the_added_bookie_is_decommissioned() -> None:
    w = World()
    w.kube.create_cluster("bk", MANIFEST)
    await w.tick()
    await w.tick()
    w.bookie(0).used = 0.90
    for _ in range(4):
        await w.tick()
    assert w.status["scaledUpBy"] == 1
    w.bookie(0).used = 0.20                         # compaction reclaimed the space
    for _ in range(20):
        await w.tick()
        if w.status.get("decommissioned"):
            break
    assert w.status["scaledUpBy"] == 0 and w.status["decommissioned"] == [w.bookie_id(2)]
    assert sts_replicas(w) == 2 and w.kube.cluster("bk")["spec"]["replicas"] == 2
    assert len(w.kube.reasons("ScalingBack")) == 1 and len(w.kube.reasons("DecommissionStarted")) == 1
