"""The admin API's token: the operator creates <cluster>-admin-token once (owned by the BookieCluster) and
presents it; a Secret named by the spec is used as it is, and a missing or unusable one stops the reconcile with
a condition saying what to do. The bookie pods mount only the hashes of the admin and audit tokens
(<cluster>-token-hashes), which the operator derives again whenever it re-reads the tokens."""

from __future__ import annotations

import base64
import hashlib

import pytest
from bookie_operator import builders, models
from bookie_operator.reconcile.admin_token import AdminTokenProblem, first_token, secret_text, token_hashes

from tests.operator.fakes import NS, World, cluster_spec, own_secret_metadata


def _secret(token_text: str) -> dict[str, object]:
    return {"kind": "Secret", "metadata": own_secret_metadata("bk-mine"),
            "data": {"token": base64.b64encode(token_text.encode()).decode()}}


def _hashed(*tokens: str) -> str:
    return "".join(f"sha256:{hashlib.sha256(t.encode()).hexdigest()}\n" for t in tokens)


def _hashes(w: World, key: str) -> str:
    secret = w.kube.objects[("Secret", NS, "bk-token-hashes")]
    return base64.b64decode(secret["data"][key]).decode()


async def test_the_operator_creates_the_token_once_and_presents_it() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    for _ in range(4):
        await w.tick(seconds=90)  # past the re-read interval: the Secret is read again, never re-created
    assert w.kube.created == ["Secret/bk-admin-token", "Secret/bk-audit-token", "Secret/bk-token-hashes"]
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
    w.kube.objects[("Secret", NS, "bk-mine")] = _secret("# rotated in\nan-existing-token-of-ours\nold-token-still-ok\n")
    w.kube.create_cluster("bk", cluster_spec(adminApi={"tokenSecretName": "bk-mine"}))
    await w.tick()
    await w.tick()
    # The audit's token is always the operator's, as are the hashes the bookies mount.
    assert w.kube.created == ["Secret/bk-audit-token", "Secret/bk-token-hashes"]
    assert {t for b in w.bookies.values() for t in b.tokens} == {"an-existing-token-of-ours"}
    assert _hashes(w, "admin") == _hashed("an-existing-token-of-ours", "old-token-still-ok")


async def test_the_bookies_get_the_hashes_of_both_tokens_and_never_a_token() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    admin = first_token(w.kube.objects[("Secret", NS, "bk-admin-token")])
    audit = first_token(w.kube.objects[("Secret", NS, "bk-audit-token")])
    assert _hashes(w, "admin") == _hashed(admin) and _hashes(w, "read") == _hashed(audit)
    hashes = w.kube.objects[("Secret", NS, "bk-token-hashes")]
    assert hashes["metadata"]["ownerReferences"][0]["name"] == "bk"
    pod = w.kube.objects[("StatefulSet", NS, "bk")]["spec"]["template"]["spec"]
    mounted = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert mounted == {"bk-token-hashes"}, mounted
    assert admin not in repr(pod) and audit not in repr(pod)


async def test_a_rotated_token_reaches_the_hashes_at_the_next_read() -> None:
    w = World()
    w.kube.objects[("Secret", NS, "bk-mine")] = _secret("the-old-token-of-ours\n")
    w.kube.create_cluster("bk", cluster_spec(adminApi={"tokenSecretName": "bk-mine"}))
    await w.tick(seconds=90)  # the clock moves past the re-read interval
    w.kube.objects[("Secret", NS, "bk-mine")] = _secret("the-new-token-of-ours\nthe-old-token-of-ours\n")
    await w.tick()
    assert _hashes(w, "admin") == _hashed("the-new-token-of-ours", "the-old-token-of-ours")
    assert {t for b in w.bookies.values() for t in b.tokens} >= {"the-new-token-of-ours"}


async def test_a_short_token_after_the_first_stops_the_reconcile() -> None:
    """Hashed, a short token would pass the bookies' length check: the operator refuses it as they would."""
    w = World()
    w.kube.objects[("Secret", NS, "bk-mine")] = _secret("a-long-enough-token-first\nshort\n")
    w.kube.create_cluster("bk", cluster_spec(adminApi={"tokenSecretName": "bk-mine"}))
    outcome = await w.tick()
    assert outcome.waiting and ("Secret", NS, "bk-token-hashes") not in w.kube.objects
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "AdminTokenUnavailable" and "key token:2:" in degraded["message"], degraded


def test_hashed_lines_are_kept_and_comments_dropped() -> None:
    line = "sha256:" + "ab" * 32
    assert token_hashes(f"# who\nthe-operators-own-token\n\n  {line}  \n") == \
        _hashed("the-operators-own-token") + line + "\n"
    with pytest.raises(AdminTokenProblem, match="64 lowercase hex"):
        token_hashes("sha256:ABC\n")
    with pytest.raises(AdminTokenProblem, match=r"first line .* is a hash"):
        first_token({"data": {"token": base64.b64encode(f"{line}\n".encode()).decode()}})
    assert secret_text({"data": {"token": base64.b64encode(b"x\n").decode()}}) == "x\n"


async def test_a_missing_named_secret_stops_the_reconcile_with_a_reason() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(adminApi={"tokenSecretName": "bk-absent"}))
    outcome = await w.tick()
    assert outcome.waiting and w.kube.applied == [] and w.kube.created == []
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    # Awaited before anything reads it: whoever creates it first decides whose it is.
    assert degraded["reason"] == "SecretMissing"
    assert degraded["message"] == ("spec.adminApi.tokenSecretName: Secret bk-absent does not exist yet; "
                                   "create it with the key token")

    w.kube.objects[("Secret", NS, "bk-absent")] = _secret("a-token-that-now-exists\n")
    await w.tick()
    assert "StatefulSet/bk" in w.kube.applied


@pytest.mark.parametrize(("data", "message"), [
    ({}, "has no key token"), ({"token": "***"}, "not base64"),
    ({"token": base64.b64encode(b"short\n").decode()}, "at least 16 characters")])
def test_an_unusable_secret_is_named(data: dict[str, str], message: str) -> None:
    with pytest.raises(AdminTokenProblem, match=message):
        first_token({"data": data})


@pytest.mark.parametrize("implementation", ["bookie-fleet", "apache-bookkeeper"])
def test_our_bookies_and_the_inspectors_mount_the_hashes_and_read_them_from_their_configuration(
        implementation: str) -> None:
    image = "bookie-fleet/bookie:0.1.0" if implementation == "bookie-fleet" else "bookie-fleet/apache-bookkeeper:4.17.3"
    spec = models.parse_spec(cluster_spec(implementation=implementation, image=image))
    owner = builders.Owner("bk", NS, "uid")
    pod = builders.statefulset(owner, spec, 3)["spec"]["template"]["spec"]
    ours = "bookie" if implementation == "bookie-fleet" else "inspector"
    [container] = [c for c in pod["containers"] if c["name"] == ours]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "token-hashes")
    assert mount == {"name": "token-hashes", "mountPath": builders.TOKEN_HASHES_DIR, "readOnly": True}
    [volume] = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"] == {"secretName": "bk-token-hashes", "defaultMode": 0o444,
                                "items": [{"key": "admin", "path": "admin"}, {"key": "read", "path": "read"}]}
    conf = builders.bookie_config(spec) if ours == "bookie" else builders.inspector_config(spec)
    assert conf["httpServerAuthTokenFile"] == f"{builders.TOKEN_HASHES_DIR}/admin"
    assert conf["httpServerReadTokenFile"] == f"{builders.TOKEN_HASHES_DIR}/read"


def test_java_bookies_get_no_token_key_and_the_key_is_the_operators() -> None:
    java = models.parse_spec(cluster_spec(implementation="apache-bookkeeper", image="apache/bookkeeper:4.17.3"))
    assert "httpServerAuthTokenFile" not in builders.bookie_config(java)
    with pytest.raises(models.InvalidSpec, match="httpServerAuthTokenFile: owned by the operator"):
        models.parse_spec(cluster_spec(config={"httpServerAuthTokenFile": "/x"}))


@pytest.mark.parametrize("name", ["bk-admin-token", "bk-audit-token"])
async def test_a_token_secret_someone_else_made_under_the_operators_name_is_never_used(name: str) -> None:
    planted = "a-token-its-maker-knows-0123456789"
    w = World()
    w.kube.objects[("Secret", NS, name)] = {
        "kind": "Secret", "metadata": {"name": name, "namespace": NS},
        "data": {"token": base64.b64encode(f"{planted}\n".encode()).decode()}}
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    # No bookie accepts it: the hashes Secret they mount is not written from it.
    assert ("Secret", NS, "bk-token-hashes") not in w.kube.objects
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert f"Secret {name}: exists and is not the cluster's own" in degraded["message"], degraded

    del w.kube.objects[("Secret", NS, name)]
    await w.tick()
    assert _hashed(planted) not in _hashes(w, "admin") + _hashes(w, "read")
    assert w.kube.objects[("Secret", NS, name)]["metadata"]["ownerReferences"][0]["name"] == "bk"
