"""``spec.tls.adminClient``: the operator's own client certificate for the bookies' admin API. The bookies trust
the admin Secret's CA for client certificates and admit ``adminAllowedRoles``; the Secret is never mounted into
them; the reconcile hands the certificate and key to the admin client of every bookie; a spec with adminClient
but no HTTPS on the admin API is refused."""

from __future__ import annotations

import base64
import re

import pytest
import trustme
from bookie_operator import builders
from bookie_operator.builders import Owner
from bookie_operator.models import BookieClusterSpec
from bookie_operator.reconcile.ports import AdminTls
from pydantic import ValidationError

from tests.operator.fakes import NS, FakeBookie, World, cluster_spec, own_secret_metadata
from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
TLS = {"admin": {"secretName": "bk-admin-tls"}, "adminClient": {"secretName": "bk-operator-tls"}}


def test_the_bookies_admit_the_operators_role_by_the_admin_ca() -> None:
    conf = builders.bookie_config(spec(tls=TLS))
    assert conf["httpServerTlsTrustStorePath"] == "/opt/bookie/tls/admin/ca.crt"
    assert conf["httpServerAllowedRoles"] == "bookie-operator"
    custom = builders.bookie_config(spec(tls={**TLS, "adminAllowedRoles": ["ops", "operator"]}))
    assert custom["httpServerAllowedRoles"] == "ops,operator"
    without = builders.bookie_config(spec(tls={"admin": TLS["admin"]}))
    assert "httpServerTlsTrustStorePath" not in without and "httpServerAllowedRoles" not in without


def test_the_operators_secret_is_never_mounted_into_the_bookies() -> None:
    pod = builders.statefulset(OWNER, spec(tls=TLS), 3)["spec"]["template"]["spec"]
    secrets = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert "bk-admin-tls" in secrets and "bk-operator-tls" not in secrets


def test_admin_client_without_https_is_refused() -> None:
    with pytest.raises(ValidationError, match=re.escape("spec.tls.adminClient needs spec.tls.admin")):
        BookieClusterSpec.model_validate(
            {"metadataService": {"zkServers": "zk:2181"}, "tls": {"adminClient": {"secretName": "x"}}})


def test_the_allowed_roles_are_owned_by_the_operator() -> None:
    with pytest.raises(ValidationError, match=re.escape("httpServerAllowedRoles: set by spec.tls.admin")):
        BookieClusterSpec.model_validate({"metadataService": {"zkServers": "zk:2181"}, "tls": TLS,
                                          "config": {"httpServerAllowedRoles": "anyone"}})


def _secret(name: str, data: dict[str, bytes]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": own_secret_metadata(name),
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


async def test_the_reconcile_presents_the_certificate_to_every_bookie() -> None:
    ca = trustme.CA()
    server = ca.issue_cert(f"*.bk-headless.{NS}.svc.cluster.local")
    client = ca.issue_cert("bookie-operator.test", organization_unit_name="0:bookie-operator")
    w = World()
    w.kube.objects[("Secret", NS, "bk-admin-tls")] = _secret("bk-admin-tls", {
        "tls.crt": server.cert_chain_pems[0].bytes(), "tls.key": server.private_key_pem.bytes(),
        "ca.crt": ca.cert_pem.bytes()})
    w.kube.objects[("Secret", NS, "bk-operator-tls")] = _secret("bk-operator-tls", {
        "tls.crt": client.cert_chain_pems[0].bytes(), "tls.key": client.private_key_pem.bytes(),
        "ca.crt": ca.cert_pem.bytes()})
    w.kube.create_cluster("bk", cluster_spec(tls=TLS))
    seen: list[AdminTls | None] = []

    def admin_for(host: str, port: int, token: str | None, tls: AdminTls | None = None) -> FakeBookie:
        seen.append(tls)
        return w._admin_for(host, port, token, tls)

    w.operator.admin_for = admin_for
    for _ in range(3):
        await w.tick()
    assert seen and all(t is not None for t in seen)
    assert {t.client_certificate for t in seen if t is not None} == {client.cert_chain_pems[0].bytes()}
    assert {t.client_key for t in seen if t is not None} == {client.private_key_pem.bytes()}
    valid = next(c for c in w.status["conditions"] if c["type"] == "CertificatesValid")
    assert valid["status"] == "True" and "adminClient: valid until" in valid["message"], valid
