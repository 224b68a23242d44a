"""The reconcile's certificate step against in-memory clients: a missing Secret is reported once (condition,
Degraded, one Warning Event) without holding the cluster back; the Secret is not read every tick; a fixed
Secret turns the condition valid at the next check; and the admin client is given the Secret's CA and each
pod's host name for HTTPS."""

from __future__ import annotations

import base64

import trustme
from bookie_operator.reconcile.ports import AdminTls
from bookie_operator.reconcile.tls import RECHECK_S

from tests.operator.fakes import NS, FakeBookie, World, cluster_spec, own_secret_metadata


def condition(world: World, type_: str) -> dict[str, str] | None:
    return next((c for c in world.status.get("conditions", []) if c["type"] == type_), None)


def secret(name: str, data: dict[str, bytes]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": own_secret_metadata(name),
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


async def test_an_incomplete_secret_is_reported_once_and_a_fixed_one_at_the_next_check() -> None:
    w = World()
    ca = trustme.CA()
    leaf = ca.issue_cert(f"*.bk-headless.{NS}.svc.cluster.local")
    # The cluster's own Secret, without the CA its certificate must chain to (a missing Secret is awaited before
    # anything is applied: tests/operator/test_operator_awaits_referenced_secrets.py).
    w.kube.objects[("Secret", NS, "bk-admin-tls")] = secret("bk-admin-tls", {
        "tls.crt": leaf.cert_chain_pems[0].bytes(), "tls.key": leaf.private_key_pem.bytes()})
    w.kube.create_cluster("bk", cluster_spec(tls={"admin": {"secretName": "bk-admin-tls"}}))
    for _ in range(4):
        await w.tick()
    incomplete = condition(w, "CertificatesValid")
    assert incomplete is not None and incomplete["status"] == "False"
    assert incomplete["reason"] == "CertificateSecretIncomplete"
    assert incomplete["message"].startswith("spec.tls.admin: Secret bk-admin-tls: ") and "ca.crt" in \
        incomplete["message"], incomplete
    assert w.kube.reasons("CertificateSecretIncomplete") == [incomplete["message"]]   # once, not every tick
    degraded = condition(w, "Degraded")
    assert degraded is not None and degraded["status"] == "True" and incomplete["message"] in degraded["message"]
    assert "StatefulSet/bk" in w.kube.applied                                          # nothing held back

    w.kube.objects[("Secret", NS, "bk-admin-tls")] = secret("bk-admin-tls", {
        "tls.crt": leaf.cert_chain_pems[0].bytes(), "tls.key": leaf.private_key_pem.bytes(),
        "ca.crt": ca.cert_pem.bytes()})
    await w.tick()
    still = condition(w, "CertificatesValid")
    assert still is not None and still["status"] == "False"        # the Secret is not read again every tick
    w.clock.advance(RECHECK_S)
    await w.tick()
    valid = condition(w, "CertificatesValid")
    assert valid is not None and valid["status"] == "True" and valid["message"].startswith("admin: valid until")

    seen: list[AdminTls | None] = []

    def admin_for(host: str, port: int, token: str | None, tls: AdminTls | None = None) -> FakeBookie:
        seen.append(tls)
        return w._admin_for(host, port, token, tls)

    w.operator.admin_for = admin_for
    await w.tick()
    assert sorted(t.server_hostname for t in seen if t is not None) == [
        f"bk-{i}.bk-headless.{NS}.svc.cluster.local" for i in range(3)]
    assert all(t is not None and t.ca_pem == ca.cert_pem.bytes() for t in seen)


async def test_without_spec_tls_there_is_no_certificate_condition() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    await w.tick()
    assert condition(w, "CertificatesValid") is None
