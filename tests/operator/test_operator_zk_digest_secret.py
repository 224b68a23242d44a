"""``spec.metadataService.digestSecret``: a cluster's ZooKeeper digest identity from a Secret. Our bookies get it
mounted as zkDigestAuthFile; the operator's own session for that cluster presents it instead of the operator's
--zk-digest-file (with CREATOR_ALL ACLs when spec.config turns zkEnableSecurity on); a Secret that cannot be
used is a Degraded condition naming it; Apache BookKeeper's bookies, which have no digest identity, are refused."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from bookie.metadata.security import ZkSecurity
from bookie_operator import builders
from bookie_operator.builders import Owner
from bookie_operator.zk import MetadataService

from tests.operator.fakes import NS, World, cluster_spec, own_secret_metadata
from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
ZK = {"zkServers": "zk:2181", "digestSecret": {"secretName": "bk-zk-digest"}}
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}


def test_our_bookies_get_the_digest_file_from_the_secret() -> None:
    s = spec(metadataService=ZK)
    assert builders.bookie_config(s)["zkDigestAuthFile"] == "/opt/bookie/secrets/zk-digest/digest"
    pod = builders.statefulset(OWNER, s, 3)["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "zk-digest")
    assert volume["secret"] == {"secretName": "bk-zk-digest", "items": [{"key": "digest", "path": "digest"}],
                                "defaultMode": 0o444}
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "zk-digest")
    assert mount == {"name": "zk-digest", "mountPath": "/opt/bookie/secrets/zk-digest", "readOnly": True}
    other_key = spec(metadataService={**ZK, "digestSecret": {"secretName": "s", "key": "zk"}})
    volumes = builders.statefulset(OWNER, other_key, 3)["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "zk-digest")["secret"]["items"] == [{"key": "zk",
                                                                                        "path": "digest"}]
    plain = spec()
    assert "zkDigestAuthFile" not in builders.bookie_config(plain)
    assert not any(v["name"] == "zk-digest" for v in builders.statefulset(OWNER, plain, 3)["spec"]["template"]
                   ["spec"]["volumes"])


def test_java_bookies_and_a_second_source_are_refused() -> None:
    with pytest.raises(ValueError, match="Apache BookKeeper's bookies authenticate to ZooKeeper by SASL"):
        spec(metadataService=ZK, **JAVA)
    with pytest.raises(ValueError, match=re.escape("spec.config.zkDigestAuthFile: set by spec.metadataService")):
        spec(metadataService=ZK, config={"zkDigestAuthFile": "/elsewhere"})


def test_the_clusters_digest_replaces_the_operators_own_and_keeps_its_tls() -> None:
    own = ZkSecurity(tls=True, ca=Path("/ca.crt"), certfile=Path("/c.crt"), keyfile=Path("/c.key"),
                     digest="operator:secret")
    service = MetadataService(own)
    cluster = service.security_for("fleet:pw", acl=True)
    assert (cluster.digest, cluster.acl, cluster.tls, cluster.ca, cluster.certfile) == (
        "fleet:pw", True, True, Path("/ca.crt"), Path("/c.crt"))
    assert service.security_for() == own
    assert MetadataService(ZkSecurity(acl=True)).security_for("a:b").acl is True


def _digest_secret(text: bytes, key: str = "digest") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": own_secret_metadata("bk-zk-digest"),
            "data": {key: base64.b64encode(text).decode()}}


async def test_the_operator_presents_the_clusters_digest() -> None:
    w = World()
    w.kube.objects[("Secret", NS, "bk-zk-digest")] = _digest_secret(b"# the fleet\nbookie-fleet:s3cret\n")
    w.kube.create_cluster("bk", cluster_spec(metadataService={**ZK, "ledgersRoot": "/ledgers"},
                                             config={"zkEnableSecurity": True}))
    await w.tick()
    await w.tick()
    assert w.metadata.identities and set(w.metadata.identities) == {("bookie-fleet:s3cret", True)}


@pytest.mark.parametrize(("secret", "reason", "problem"), [
    (None, "SecretMissing", "Secret bk-zk-digest does not exist yet; create it with the key digest"),
    (_digest_secret(b"no-colon-here"), "MetadataServiceUnavailable", "expected one line user:password"),
    (_digest_secret(b"a:b", key="other"), "MetadataServiceUnavailable", "Secret bk-zk-digest: has no key digest"),
])
async def test_an_unusable_digest_secret_is_named(secret: dict[str, object] | None, reason: str,
                                                  problem: str) -> None:
    w = World()
    if secret is not None:
        w.kube.objects[("Secret", NS, "bk-zk-digest")] = secret
    w.kube.create_cluster("bk", cluster_spec(metadataService={**ZK, "ledgersRoot": "/ledgers"}))
    await w.tick()
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == reason
    assert problem in degraded["message"] and "spec.metadataService.digestSecret" in degraded["message"]
    assert not w.metadata.identities          # no session was opened without the cluster's identity


def test_zk_enable_security_sees_the_identity_the_operator_sets() -> None:
    """spec.config's zkEnableSecurity needs an identity, which the operator's own fields provide."""
    with pytest.raises(ValueError, match="zkEnableSecurity=true needs an identity"):
        spec(config={"zkEnableSecurity": True})
    spec(metadataService=ZK, config={"zkEnableSecurity": True})
    spec(tls={"zookeeper": {"secretName": "bk-zk-tls"}}, config={"zkEnableSecurity": True})
