"""Nothing that references a Secret is applied before that Secret exists and is judged the cluster's own: a missing one
is awaited, naming the field, the Secret and the keys it must hold (whoever creates it first decides whose it is,
and the kubelet would mount it before the next tick judged it); one created unlabelled is refused; one labelled for
the cluster lets the reconcile go on. The Secrets the operator makes itself are not awaited, so a fresh cluster is
applied on its first tick. A Secret that was the cluster's own and no longer is stops every further apply. The
operator judges a Secret by its metadata alone: it never reads a referenced Secret's data to do so."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import models
from bookie_operator.decisions import escalations
from bookie_operator.kube import KubeError, metadata_only

from tests.operator.fakes import NS, World, cluster_spec, own_secret_metadata

ENV = [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "bk-password", "key": "p"}}}]
MISSING = "spec.env[0].valueFrom.secretKeyRef.name: Secret bk-password does not exist yet; create it with the key p"


def _spec(**fields: Any) -> models.BookieClusterSpec:
    return models.parse_spec(cluster_spec(**fields))


def _secret(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bk-password", "namespace": NS,
                                                               "labels": labels or {}},
            "data": {"p": "c2VjcmV0"}}


def _degraded(w: World) -> dict[str, Any]:
    return next(c for c in w.status["conditions"] if c["type"] == "Degraded")


def test_a_missing_secret_is_awaited_naming_the_field_a_foreign_one_refused_an_own_one_fine() -> None:
    spec = _spec(env=ENV, tls={"bookie": {"secretName": "bk-tls"}})
    missing = {"bk-password": None, "bk-tls": None}
    assert escalations.awaited("bk", spec, missing) == [
        "spec.tls.bookie.secretName: Secret bk-tls does not exist yet; create it with the keys tls.crt, tls.key, "
        "ca.crt", MISSING]
    assert escalations.refused("bk", spec, frozenset(), missing) == []
    foreign = {"bk-password": False, "bk-tls": True}
    assert escalations.awaited("bk", spec, foreign) == []
    [refusal] = escalations.refused("bk", spec, frozenset(), foreign)
    assert refusal.startswith("spec.env[0].valueFrom.secretKeyRef.name: Secret bk-password is not the cluster's "
                              "own"), refusal
    own = {"bk-password": True, "bk-tls": True}
    assert escalations.awaited("bk", spec, own) == [] and escalations.refused("bk", spec, frozenset(), own) == []


def test_the_secrets_the_operator_makes_are_not_awaited() -> None:
    volumes = [{"name": f"x-{n}", "secret": {"secretName": f"bk-{n}"}} for n in ("admin-token", "audit-token",
                                                                                 "token-hashes")]
    missing: escalations.Ownership = {f"bk-{n}": None for n in ("admin-token", "audit-token", "token-hashes")}
    assert escalations.awaited("bk", _spec(extraVolumes=volumes), missing) == []
    # Named as the admin token's Secret, the operator does not create it: the user does, so it is awaited.
    named = _spec(adminApi={"tokenSecretName": "bk-admin-token"})
    assert escalations.awaited("bk", named, missing) == [
        "spec.adminApi.tokenSecretName: Secret bk-admin-token does not exist yet; create it with the key token"]
    # Another cluster's names are no exception.
    assert escalations.awaited("other", _spec(extraVolumes=volumes), missing) != []


async def test_the_reconcile_applies_nothing_until_the_secret_exists_and_is_the_clusters_own() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(env=ENV))
    for _ in range(3):
        outcome = await w.tick()
    assert outcome.waiting == [MISSING] and w.kube.applied == [] and w.kube.created == []
    assert _degraded(w)["reason"] == "SecretMissing" and _degraded(w)["message"] == MISSING
    assert w.kube.reasons("SecretMissing") == [MISSING]                 # once, not every tick

    w.kube.objects[("Secret", NS, "bk-password")] = _secret()             # someone else's, unlabelled
    await w.tick()
    assert w.kube.applied == [] and _degraded(w)["reason"] == "InvalidSpec"
    assert "spec.env[0].valueFrom.secretKeyRef.name: Secret bk-password is not the cluster's own" in \
        _degraded(w)["message"]

    w.kube.objects[("Secret", NS, "bk-password")]["metadata"] = own_secret_metadata("bk-password")
    await w.tick()
    assert "StatefulSet/bk" in w.kube.applied


async def test_a_fresh_cluster_referencing_the_operators_own_secret_is_applied_on_its_first_tick() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(extraVolumes=[
        {"name": "audit", "secret": {"secretName": "bk-audit-token"}}]))
    outcome = await w.tick()
    assert "StatefulSet/bk" in w.kube.applied, outcome.waiting
    await w.tick()      # now it exists, owned by the cluster: judged its own
    assert w.kube.reasons("InvalidSpec") == [] and w.kube.reasons("SecretMissing") == []


async def test_a_secret_that_turns_foreign_stops_every_further_apply() -> None:
    w = World()
    w.kube.objects[("Secret", NS, "bk-password")] = _secret(own_secret_metadata("bk-password")["labels"])
    w.kube.create_cluster("bk", cluster_spec(env=ENV))
    await w.tick()
    assert "StatefulSet/bk" in w.kube.applied

    w.kube.objects[("Secret", NS, "bk-password")] = _secret({"app": "payments"})   # replaced by someone else's
    w.kube.patch_spec("bk", {"replicas": 4})
    applied = len(w.kube.applied)
    await w.tick()
    degraded = _degraded(w)
    assert degraded["status"] == "True" and degraded["reason"] == "InvalidSpec"
    assert degraded["message"].startswith("spec.env[0].valueFrom.secretKeyRef.name: Secret bk-password is not "
                                          "the cluster's own"), degraded
    assert len(w.kube.reasons("InvalidSpec")) == 1
    assert len(w.kube.applied) == applied
    assert w.kube.objects[("StatefulSet", NS, "bk")]["spec"]["replicas"] == 3


async def test_the_ownership_is_judged_without_reading_the_secrets_data() -> None:
    w = World()
    full_reads: list[str] = []
    read = w.kube.get

    async def get(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        if kind == "Secret":
            full_reads.append(name)
        return await read(kind, namespace, name)

    w.kube.get = get  # type: ignore[method-assign]
    w.kube.objects[("Secret", NS, "bk-password")] = _secret({"app": "payments"})
    w.kube.create_cluster("bk", cluster_spec(env=ENV))
    for _ in range(2):
        await w.tick()
    assert w.kube.reasons("InvalidSpec") and full_reads == []


def test_a_metadata_read_keeps_no_annotation_and_refuses_a_whole_object() -> None:
    copy = '{"kind":"Secret","stringData":{"p":"secret"}}'
    answer = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {
        "name": "bk-password", "labels": {"app": "payments"}, "ownerReferences": [{"kind": "BookieCluster"}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": copy}, "managedFields": [{}]}}
    kept = metadata_only("/api/v1/namespaces/team/secrets/bk-password", answer)
    assert kept["metadata"] == {"name": "bk-password", "labels": {"app": "payments"},
                                "ownerReferences": [{"kind": "BookieCluster"}]}
    with pytest.raises(KubeError, match="answered 'Secret', not the PartialObjectMetadata asked for"):
        metadata_only("/api/v1/namespaces/team/secrets/bk-password",
                      {"apiVersion": "v1", "kind": "Secret", "metadata": {}, "data": {"p": "c2VjcmV0"}})
