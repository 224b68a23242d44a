"""A BookieCluster may not give its writer more than the bookies need: another ServiceAccount, a hostPath volume,
sidecars, a privileged sidecar or one with added capabilities, or a Secret that is not the cluster's own are
refused, each with a message naming the field (an InvalidSpec condition and one Event, nothing applied), unless
the operator's settings allow that kind."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import chart_values, models
from bookie_operator.decisions import escalations

from tests.operator.fakes import NS, World, cluster_spec

SIDECAR = {"name": "exporter", "image": "exporter:1"}


def _refused(allowed: frozenset[str] = frozenset(), **fields: Any) -> list[str]:
    return escalations.refused("bk", models.parse_spec(cluster_spec(**fields)), allowed)


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
    fields = [m.split(":")[0] for m in _refused(frozenset({"sidecars"}), sidecars=[sidecar])]
    assert fields == ["spec.sidecars[0].securityContext.privileged",
                      "spec.sidecars[0].securityContext.capabilities.add",
                      "spec.sidecars[0].securityContext.allowPrivilegeEscalation",
                      "spec.sidecars[0].securityContext.runAsUser",
                      "spec.sidecars[0].env[0].valueFrom.secretKeyRef.name",
                      "spec.sidecars[0].envFrom[1].secretRef.name"]
    assert _refused(frozenset({"sidecars", "privileged", "foreignSecrets"}), sidecars=[sidecar]) == []


def test_the_clusters_own_secrets_and_safe_volumes_pass() -> None:
    assert _refused(adminApi={"tokenSecretName": "bk-admin"},
                    tls={"bookie": {"secretName": "bk-tls"}, "admin": {"secretName": "bk"}},
                    env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "bk-extra", "key": "k"}}},
                         {"name": "Y", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    extraVolumes=[{"name": "scratch", "emptyDir": {}}, {"name": "c", "configMap": {"name": "x"}}],
                    imagePullSecrets=[{"name": "registry"}]) == []
    # A name that merely starts with the cluster's is someone else's.
    assert [m.split(":")[0] for m in _refused(tls={"bookie": {"secretName": "bkx-tls"}})] == \
        ["spec.tls.bookie.secretName"]


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


def test_the_chart_offers_exactly_the_kinds_the_operator_knows() -> None:
    schema = chart_values.ChartValues.model_json_schema(by_alias=True)
    assert tuple(schema["properties"]["allowEscalations"]["items"]["enum"]) == escalations.KINDS
