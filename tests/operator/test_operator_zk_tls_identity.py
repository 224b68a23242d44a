"""``spec.tls.zookeeper``: the operator's session for a cluster presents that Secret's client certificate and
trusts its ``ca.crt``, as the cluster's bookies do, instead of the operator's own ``--zk-tls-*`` identity; so
clusters of different teams on one TLS ZooKeeper each keep their x509 identity. The Secret is read again after
a minute (a rotated certificate reaches the next session); one that is missing or lacks a key is a Degraded
condition naming it, and no session is opened without it."""

from __future__ import annotations

import base64

import pytest
import trustme
from bookie_operator.reconcile.context import ZK_SECRET_RECHECK_S
from bookie_operator.zk import ZkTlsIdentity

from tests.operator.fakes import NS, World, cluster_spec, own_secret_metadata

TLS = {"zookeeper": {"secretName": "bk-zk-tls"}}


def _pem(ca: trustme.CA, name: str) -> dict[str, bytes]:
    issued = ca.issue_cert(name)
    return {"tls.crt": issued.cert_chain_pems[0].bytes(), "tls.key": issued.private_key_pem.bytes(),
            "ca.crt": ca.cert_pem.bytes()}


def _secret(data: dict[str, bytes]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": own_secret_metadata("bk-zk-tls"),
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def _identity(data: dict[str, bytes]) -> ZkTlsIdentity:
    return ZkTlsIdentity(ca=data["ca.crt"], cert=data["tls.crt"], key=data["tls.key"])


async def test_the_operator_presents_the_clusters_certificate_and_follows_its_rotation() -> None:
    ca = trustme.CA()
    first, rotated = _pem(ca, "bookie-fleet"), _pem(ca, "bookie-fleet")
    w = World()
    w.kube.objects[("Secret", NS, "bk-zk-tls")] = _secret(first)
    w.kube.create_cluster("bk", cluster_spec(tls=TLS))
    await w.tick()
    await w.tick()
    assert w.metadata.x509_identities and set(w.metadata.x509_identities) == {_identity(first)}

    w.kube.objects[("Secret", NS, "bk-zk-tls")] = _secret(rotated)
    await w.tick()
    assert w.metadata.x509_identities[-1] == _identity(first)         # read again only after a minute
    w.clock.advance(ZK_SECRET_RECHECK_S + 1)
    await w.tick()
    assert w.metadata.x509_identities[-1] == _identity(rotated)


async def test_without_spec_tls_zookeeper_the_operators_own_identity_is_used() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    assert w.metadata.x509_identities and set(w.metadata.x509_identities) == {None}


@pytest.mark.parametrize(("present", "reason", "problem"), [
    (None, "SecretMissing", "Secret bk-zk-tls does not exist yet; create it with the keys tls.crt, tls.key, ca.crt"),
    ("tls.crt", "MetadataServiceUnavailable", "Secret bk-zk-tls: has no key ca.crt"),
])
async def test_an_unusable_secret_is_named(present: str | None, reason: str, problem: str) -> None:
    w = World()
    if present is not None:
        w.kube.objects[("Secret", NS, "bk-zk-tls")] = _secret({present: _pem(trustme.CA(), "x")[present]})
    w.kube.create_cluster("bk", cluster_spec(tls=TLS))
    await w.tick()
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == reason
    assert problem in degraded["message"] and "spec.tls.zookeeper" in degraded["message"], degraded
    assert not w.metadata.x509_identities     # no session was opened without the cluster's identity
