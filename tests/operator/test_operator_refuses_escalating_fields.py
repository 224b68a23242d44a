"""A BookieCluster may not give its writer more than the bookies need: another ServiceAccount, a hostPath volume,
sidecars, a privileged sidecar or one with added capabilities, or a Secret that is not the cluster's own are
refused, each with a message naming the field (an InvalidSpec condition and one Event, nothing applied), unless
the operator's settings allow that kind. A Secret is the cluster's own by its ownerReference or its label, never
by its name (the spec's writer chooses the cluster's name)."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import chart_values, models
from bookie_operator.decisions import escalations

from tests.operator.fakes import NS, World, cluster_spec

SIDECAR = {"name": "exporter", "image": "exporter:1"}


def _refused(allowed: frozenset[str] = frozenset(), secrets: escalations.Ownership | None = None,
             **fields: Any) -> list[str]:
    return escalations.refused("bk", models.parse_spec(cluster_spec(**fields)), allowed, secrets or {})


def _owned(cluster: str, uid: str) -> dict[str, Any]:
    return {"ownerReferences": [{"apiVersion": f"{models.GROUP}/{models.VERSION}", "kind": models.KIND,
                                 "name": cluster, "uid": uid, "controller": True}]}


def _labelled(cluster: str) -> dict[str, Any]:
    return {"labels": {"bookie-fleet.dev/cluster": cluster}}


@pytest.mark.parametrize(("fields", "field", "kind"), [
    ({"serviceAccountName": "powerful"}, "spec.serviceAccountName", "serviceAccountName"),
    ({"extraVolumes": [{"name": "node", "hostPath": {"path": "/"}}]}, "spec.extraVolumes[0].hostPath", "hostPath"),
    ({"sidecars": [SIDECAR]}, "spec.sidecars[0]", "sidecars"),
    ({"adminApi": {"tokenSecretName": "payments-db"}}, "spec.adminApi.tokenSecretName", "foreignSecrets"),
    ({"tls": {"bookie": {"secretName": "other-tls"}}}, "spec.tls.bookie.secretName", "foreignSecrets"),
    ({"metadataService": {"zkServers": "zk:2181", "digestSecret": {"secretName": "zk"}}},
     "spec.metadataService.digestSecret.secretName", "foreignSecrets"),
    ({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "payments-db", "key": "password"}}}]},
     "spec.env[0].valueFrom.secretKeyRef.name", "foreignSecrets"),
    ({"extraVolumes": [{"name": "s", "secret": {"secretName": "payments-db"}}]},
     "spec.extraVolumes[0].secret.secretName", "foreignSecrets"),
    ({"extraVolumes": [{"name": "p", "projected": {"sources": [{"secret": {"name": "payments-db"}}]}}]},
     "spec.extraVolumes[0].projected.sources[0].secret.name", "foreignSecrets"),
])
def test_each_escalating_field_is_refused_by_name_unless_allowed(fields: dict[str, Any], field: str,
                                                                 kind: str) -> None:
    [message] = _refused(**fields)
    assert message.startswith(field + ":") and f"--allow-escalation {kind}" in message, message
    assert _refused(frozenset({kind}), **fields) == []


def test_a_sidecars_privileges_and_secrets_need_their_own_allowance() -> None:
    sidecar = {**SIDECAR, "securityContext": {"privileged": True, "capabilities": {"add": ["NET_ADMIN"]},
                                              "allowPrivilegeEscalation": True, "runAsUser": 0},
               "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "payments-db", "key": "p"}}}],
               "envFrom": [{"secretRef": {"name": "bk-mine"}}, {"secretRef": {"name": "payments-api"}}]}
    fields = [m.split(":")[0] for m in _refused(frozenset({"sidecars"}), {"bk-mine": True}, sidecars=[sidecar])]
    assert fields == ["spec.sidecars[0].securityContext.privileged",
                      "spec.sidecars[0].securityContext.capabilities.add",
                      "spec.sidecars[0].securityContext.allowPrivilegeEscalation",
                      "spec.sidecars[0].securityContext.runAsUser",
                      "spec.sidecars[0].env[0].valueFrom.secretKeyRef.name",
                      "spec.sidecars[0].envFrom[1].secretRef.name"]
    assert _refused(frozenset({"sidecars", "privileged", "foreignSecrets"}), sidecars=[sidecar]) == []


def test_the_clusters_own_secrets_and_safe_volumes_pass() -> None:
    own = {"bk-admin": True, "bk-tls": True, "bk": True, "bk-extra": True}
    assert _refused(secrets=own, adminApi={"tokenSecretName": "bk-admin"},
                    tls={"bookie": {"secretName": "bk-tls"}, "admin": {"secretName": "bk"}},
                    env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "bk-extra", "key": "k"}}},
                         {"name": "Y", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    extraVolumes=[{"name": "scratch", "emptyDir": {}}, {"name": "c", "configMap": {"name": "x"}}],
                    imagePullSecrets=[{"name": "registry"}]) == []
    # A Secret that does not exist is not refused: it is awaited (test_operator_awaits_referenced_secrets.py).
    assert _refused(secrets={"bk-tls": None}, tls={"bookie": {"secretName": "bk-tls"}}) == []


def test_a_secret_is_the_clusters_own_by_owner_reference_or_label_never_by_name() -> None:
    assert escalations.owns("bk", "uid-bk", _owned("bk", "uid-bk"))
    assert escalations.owns("bk", "uid-bk", _labelled("bk"))
    # Named for the cluster, but neither owned nor labelled: someone else's.
    assert not escalations.owns("bk", "uid-bk", {"labels": {"app": "bk"}})
    # Owned by a namesake (a deleted cluster of the same name), by another cluster, by another kind, or labelled
    # for another cluster.
    assert not escalations.owns("bk", "uid-bk", _owned("bk", "uid-of-a-deleted-bk"))
    assert not escalations.owns("bk", "uid-bk", _owned("other", "uid-bk"))
    assert not escalations.owns("bk", "uid-bk", {"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "bk", "uid": "uid-bk"}]})
    assert not escalations.owns("bk", "uid-bk", _labelled("bkx"))


def test_a_cluster_named_as_a_prefix_of_a_foreign_secret_does_not_own_it() -> None:
    secret = "postgres-password"
    spec = models.parse_spec(cluster_spec(
        env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}}}]))
    foreign = {secret: escalations.owns("postgres", "uid-pg", {"name": secret, "labels": {"app": "postgres"}})}
    [message] = escalations.refused("postgres", spec, frozenset(), foreign)
    assert message.startswith("spec.env[0].valueFrom.secretKeyRef.name: Secret postgres-password is not the "
                              "cluster's own (neither owned by BookieCluster postgres nor labelled "
                              "bookie-fleet.dev/cluster=postgres)"), message
    # What was not read is not trusted either.
    assert len(escalations.refused("postgres", spec, frozenset(), {})) == 1
    labelled = {secret: escalations.owns("postgres", "uid-pg", _labelled("postgres"))}
    assert escalations.refused("postgres", spec, frozenset(), labelled) == []


def test_unknown_allowances_are_named() -> None:
    assert escalations.parse_allowed(" hostPath,sidecars ") == {"hostPath", "sidecars"}
    assert escalations.parse_allowed("") == frozenset()
    with pytest.raises(ValueError, match="unknown escalation hostpath: the kinds are serviceAccountName"):
        escalations.parse_allowed("hostpath")


async def test_the_reconcile_refuses_with_a_condition_and_one_event_and_applies_nothing() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(serviceAccountName="powerful",
                                             extraVolumes=[{"name": "node", "hostPath": {"path": "/var/run"}}]))
    for _ in range(3):
        await w.tick()
    assert w.kube.applied == [] and w.kube.created == []
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "InvalidSpec"
    assert "spec.serviceAccountName" in degraded["message"] and "spec.extraVolumes[0].hostPath" in degraded["message"]
    [event] = w.kube.reasons("InvalidSpec")
    assert "spec.serviceAccountName" in event and "--allow-escalation hostPath" in event

    w.operator.allowed_escalations = frozenset({"serviceAccountName", "hostPath"})
    await w.tick()
    pod = w.kube.objects[("StatefulSet", NS, "bk")]["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == "powerful"


async def test_every_secret_the_operator_creates_is_the_clusters_own() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    made = {name: obj["metadata"] for (kind, _, name), obj in w.kube.objects.items() if kind == "Secret"}
    assert set(made) == {"bk-admin-token", "bk-audit-token", "bk-token-hashes"}, made
    for meta in made.values():   # owned, so the BookieCluster's deletion deletes them too
        owners = [(r["kind"], r["name"], r["uid"]) for r in meta["ownerReferences"]]
        assert owners == [("BookieCluster", "bk", "uid-bk")], meta
        assert escalations.owns("bk", "uid-bk", {"ownerReferences": meta["ownerReferences"]})
    # So a spec may name them (the admin token, to rotate it by hand) and is not refused.
    w.kube.patch_spec("bk", {"adminApi": {"tokenSecretName": "bk-admin-token"}})
    await w.tick()
    assert w.kube.reasons("InvalidSpec") == []


async def test_the_reconcile_reads_who_owns_each_referenced_secret() -> None:
    w = World()
    env = [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "bk-password", "key": "p"}}}]
    w.kube.objects[("Secret", NS, "bk-password")] = {"kind": "Secret", "metadata": {"name": "bk-password"}}
    w.kube.create_cluster("bk", cluster_spec(env=env))
    await w.tick()
    assert w.kube.applied == [] and w.kube.created == []
    [event] = w.kube.reasons("InvalidSpec")
    assert "spec.env[0].valueFrom.secretKeyRef.name: Secret bk-password is not the cluster's own" in event

    w.kube.objects[("Secret", NS, "bk-password")]["metadata"].update(_labelled("bk"))
    await w.tick()
    assert ("StatefulSet", NS, "bk") in w.kube.objects


def test_the_chart_offers_exactly_the_kinds_the_operator_knows() -> None:
    schema = chart_values.ChartValues.model_json_schema(by_alias=True)
    assert tuple(schema["properties"]["allowEscalations"]["items"]["enum"]) == escalations.KINDS
