"""The admin API's token: the operator creates <cluster>-admin-token once (owned by the BookieCluster), mounts
it into our bookies and names it in their configuration, and presents it; a Secret named by the spec is used
as it is, and a missing or unusable one stops the reconcile with a condition saying what to do."""

from __future__ import annotations

import base64

import pytest
from bookie_operator import builders, models
from bookie_operator.reconcile.admin_token import AdminTokenProblem, first_token

from tests.operator.fakes import NS, World, cluster_spec


def _secret(token_text: str) -> dict[str, object]:
    return {"kind": "Secret", "metadata": {"name": "mine", "namespace": NS},
            "data": {"token": base64.b64encode(token_text.encode()).decode()}}


async def test_the_operator_creates_the_token_once_and_presents_it() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    for _ in range(4):
        await w.tick(seconds=90)  # past the re-read interval: the Secret is read again, never re-created
    assert w.kube.created == ["Secret/bk-admin-token", "Secret/bk-audit-token"]
    secret = w.kube.objects[("Secret", NS, "bk-admin-token")]
    assert secret["metadata"]["ownerReferences"][0]["name"] == "bk"
    token = first_token(secret)
    assert len(token) >= 32
    assert {t for b in w.bookies.values() for t in b.tokens} == {token}
    assert len(w.kube.reasons("AdminTokenCreated")) == 1 and len(w.kube.reasons("AuditTokenCreated")) == 1
    audit_token = first_token(w.kube.objects[("Secret", NS, "bk-audit-token")])
    assert len(audit_token) >= 32 and audit_token != token


async def test_a_named_secret_is_used_and_never_created() -> None:
    w = World()
    w.kube.objects[("Secret", NS, "mine")] = _secret("# rotated in\nan-existing-token-of-ours\nold-token-still-ok\n")
    w.kube.create_cluster("bk", cluster_spec(adminApi={"tokenSecretName": "mine"}))
    await w.tick()
    await w.tick()
    assert w.kube.created == ["Secret/bk-audit-token"]   # the audit's is always the operator's
    assert {t for b in w.bookies.values() for t in b.tokens} == {"an-existing-token-of-ours"}
    sts = w.kube.objects[("StatefulSet", NS, "bk")]
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["admin-token"]["secret"]["secretName"] == "mine"


async def test_a_missing_named_secret_stops_the_reconcile_with_a_reason() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(adminApi={"tokenSecretName": "absent"}))
    outcome = await w.tick()
    assert outcome.waiting and w.kube.applied == [] and w.kube.created == []
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "AdminTokenUnavailable"
    assert "absent" in degraded["message"] and "key token" in degraded["message"]

    w.kube.objects[("Secret", NS, "absent")] = _secret("a-token-that-now-exists\n")
    await w.tick()
    assert "StatefulSet/bk" in w.kube.applied


@pytest.mark.parametrize(("data", "message"), [
    ({}, "has no key token"), ({"token": "***"}, "not base64"),
    ({"token": base64.b64encode(b"short\n").decode()}, "at least 16 characters")])
def test_an_unusable_secret_is_named(data: dict[str, str], message: str) -> None:
    with pytest.raises(AdminTokenProblem, match=message):
        first_token({"data": data})


def test_our_bookies_mount_the_token_and_read_it_from_their_configuration() -> None:
    spec = models.parse_spec(cluster_spec())
    owner = builders.Owner("bk", NS, "uid")
    pod = builders.statefulset(owner, spec, 3)["spec"]["template"]["spec"]
    [bookie] = [c for c in pod["containers"] if c["name"] == "bookie"]
    mount = next(m for m in bookie["volumeMounts"] if m["name"] == "admin-token")
    assert mount == {"name": "admin-token", "mountPath": builders.ADMIN_TOKEN_DIR, "readOnly": True}
    volume = next(v for v in pod["volumes"] if v["name"] == "admin-token")
    assert volume["secret"]["defaultMode"] == 0o444 and volume["secret"]["secretName"] == "bk-admin-token"
    assert builders.bookie_config(spec)["httpServerAuthTokenFile"] == f"{builders.ADMIN_TOKEN_DIR}/token"
    read = next(v for v in pod["volumes"] if v["name"] == "read-token")
    assert read["secret"]["secretName"] == "bk-audit-token"
    assert builders.bookie_config(spec)["httpServerReadTokenFile"] == f"{builders.READ_TOKEN_DIR}/token"


def test_java_bookies_get_no_token_key_and_the_key_is_the_operators() -> None:
    java = models.parse_spec(cluster_spec(implementation="apache-bookkeeper"))
    assert "httpServerAuthTokenFile" not in builders.bookie_config(java)
    with pytest.raises(models.InvalidSpec, match="httpServerAuthTokenFile: owned by the operator"):
        models.parse_spec(cluster_spec(config={"httpServerAuthTokenFile": "/x"}))
