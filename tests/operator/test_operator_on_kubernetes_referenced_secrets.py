"""On a real API server, a Secret a BookieCluster references is judged before anything references it: while it
does not exist, no StatefulSet is applied and the cluster says which field waits for which Secret; created
unlabelled (someone else's), it is refused, naming the field; labelled the cluster's own, the StatefulSet is
applied. Labelled off again, the cluster is refused and the StatefulSet no longer follows the spec. The operator
reads such a Secret's metadata alone (a PartialObjectMetadata: labels and ownerReferences, never its data)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator.builders import CLUSTER_LABEL
from bookie_operator.kube import Kube

from tests.operator.conftest import OperatorProcess, await_events, bookie_cluster, condition, get_cluster, patch_spec
from tests.support.kube import KubeTarget, wait_for

NAME = "bk"
SECRET = "bk-password"
FIELD = "spec.env[0].valueFrom.secretKeyRef.name"
PASSWORD = "the-payments-database-password"


async def test_a_referenced_secret_is_awaited_then_judged_by_its_metadata_alone(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[..., OperatorProcess]) -> None:
    ns = kube_namespace
    statefulset = f"/apis/apps/v1/namespaces/{ns}/statefulsets/{NAME}"
    operator_factory(ns)
    kube.apply(bookie_cluster(NAME, zookeeper.connect_string, f"/{ns}/ledgers", replicas=1, ensembleSize=1, env=[
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "password"}}}]), namespace=ns)

    awaited = f"{FIELD}: Secret {SECRET} does not exist yet; create it with the key password"
    degraded = _wait_degraded(kube, ns, "SecretMissing")
    assert degraded["message"] == awaited, degraded
    assert kube.get(statefulset) is None
    [event] = await_events(kube, ns, NAME, "SecretMissing")
    assert event["message"] == awaited

    # Someone else's Secret of that name: refused, and still nothing references it.
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "labels": {"app": "payments"}},
                "stringData": {"password": PASSWORD}}, namespace=ns)
    refusal = f"{FIELD}: Secret {SECRET} is not the cluster's own"
    assert refusal in _wait_degraded(kube, ns, "InvalidSpec")["message"]
    assert kube.get(statefulset) is None

    # Made the cluster's own by whoever may write it: the StatefulSet is applied, referencing it.
    kube.kubectl("-n", ns, "label", "secret", SECRET, f"{CLUSTER_LABEL}={NAME}")
    applied = wait_for(lambda: kube.get(statefulset), 60, what="the StatefulSet once the Secret is the cluster's own")
    [container] = [c for c in applied["spec"]["template"]["spec"]["containers"] if c["name"] == "bookie"]
    assert {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "password"}}} in \
        container["env"]

    await _reads_metadata_alone(kube, ns, get_cluster(kube, ns, NAME)["metadata"]["uid"])

    # No longer the cluster's own: refused, and a changed spec is not applied (the running pod keeps its mount).
    kube.kubectl("-n", ns, "label", "secret", SECRET, f"{CLUSTER_LABEL}-")
    patch_spec(kube, ns, NAME, {"replicas": 2})
    generation = get_cluster(kube, ns, NAME)["metadata"]["generation"]
    refused = _wait_degraded(kube, ns, "InvalidSpec", generation)
    assert refusal in refused["message"], refused
    assert len(await_events(kube, ns, NAME, "InvalidSpec", at_least=2)) >= 2
    live = kube.get(statefulset)
    assert live is not None and live["spec"]["replicas"] == 1


async def _reads_metadata_alone(kube: KubeTarget, ns: str, uid: str) -> None:
    """The operator's metadata-only read brings labels and ownerReferences, never the data a whole GET brings, nor
    the copy of it that kubectl's client-side apply keeps in an annotation."""
    client = await Kube.connect(str(kube.kubeconfig))
    try:
        for name in (SECRET, f"{NAME}-admin-token"):
            whole = await client.get("Secret", ns, name)
            assert whole is not None and whole.get("data"), name
            meta = await client.get_metadata("Secret", ns, name)
            assert meta is not None and meta["kind"] == "PartialObjectMetadata", meta
            assert "data" not in meta and "annotations" not in meta["metadata"], meta
        whole = await client.get("Secret", ns, SECRET)
        assert whole is not None and PASSWORD in str(whole["metadata"]["annotations"])   # kubectl's copy
        assert PASSWORD not in str(await client.get_metadata("Secret", ns, SECRET))
        labelled = await client.get_metadata("Secret", ns, SECRET)
        assert labelled is not None and labelled["metadata"]["labels"][CLUSTER_LABEL] == NAME
        owned = await client.get_metadata("Secret", ns, f"{NAME}-admin-token")
        assert owned is not None
        assert [(r["kind"], r["name"], r["uid"]) for r in owned["metadata"]["ownerReferences"]] == [
            ("BookieCluster", NAME, uid)]
        assert await client.get_metadata("Secret", ns, "no-such-secret") is None
    finally:
        await client.close()


def _wait_degraded(kube: KubeTarget, ns: str, reason: str, generation: int | None = None) -> dict[str, Any]:
    """The Degraded condition once it has ``reason`` (for the cluster's ``generation``, when given)."""
    def degraded() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, NAME)
        c = condition(obj, "Degraded")
        seen = obj.get("status", {}).get("observedGeneration")
        if c and c["status"] == "True" and c["reason"] == reason and generation in (None, seen):
            return c
        return None

    return wait_for(degraded, 60, interval=0.5, what=f"Degraded {reason}")
