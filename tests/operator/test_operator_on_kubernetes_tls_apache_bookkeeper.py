"""Apache BookKeeper's bookies configured by ``spec.tls.bookie`` from the same kind of Secret (cert-manager's
layout, a PKCS#8 key): BookKeeper's own tls* keys in their bk_server.conf, Ready in a namespace that enforces the
restricted Pod Security Standard, and our client writes and reads through them over TLS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trustme
from bookie.client import ClientConfig
from bookie.tls import ClientTLS
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import JAVA, OperatorProcess, bookie_cluster, condition, wait_ready
from tests.support.certificates import RESTRICTED, issued, tls_secret, write_and_read
from tests.support.kube import KubeTarget


async def test_java_bookies_serve_tls_from_the_secret(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[..., OperatorProcess], tmp_path: Path) -> None:
    ns = kube_namespace
    kube.kubectl("label", "namespace", ns, RESTRICTED)
    ca = trustme.CA()
    cert, key = issued(ca, f"*.bk-headless.{ns}.svc.cluster.local")
    kube.apply([tls_secret("bk-tls", cert, key, ca.cert_pem.bytes(), cluster="bk")], namespace=ns)
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers", replicas=2, ensembleSize=2, **JAVA,
                              tls={"bookie": {"secretName": "bk-tls"}}), namespace=ns)
    obj = wait_ready(kube, ns, "bk", timeout=300)
    valid = condition(obj, "CertificatesValid")
    assert valid is not None and valid["status"] == "True", valid

    conf = kube.get(f"/api/v1/namespaces/{ns}/configmaps/bk-config")
    assert conf is not None
    text = conf["data"]["bk_server.conf"]
    for line in ("tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory", "tlsKeyStoreType=PEM",
                 "tlsKeyStore=/opt/bookie/tls/bookie/tls.key", "tlsCertificatePath=/opt/bookie/tls/bookie/tls.crt",
                 "tlsTrustStore=/opt/bookie/tls/bookie/ca.crt"):
        assert line in text.splitlines(), line

    (tmp_path / "ca.crt").write_bytes(ca.cert_pem.bytes())
    client = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=f"/{ns}/ledgers",
                          tls=ClientTLS(trust_store=str(tmp_path / "ca.crt")))
    assert await write_and_read(client) == [f"entry-{i}".encode() for i in range(10)]
