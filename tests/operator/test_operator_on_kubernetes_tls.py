"""A BookieCluster with ``spec.tls`` in a namespace that enforces the restricted Pod Security Standard: cert-manager
style Secrets (tls.crt, tls.key, ca.crt; test CAs from trustme) for the bookie port (client certificates with an
allowed role required), the admin API and ZooKeeper, which only speaks TLS; the cluster reaches Ready with its
NetworkPolicy, a client with a broker certificate writes and reads over TLS and one without an allowed role is
refused, the operator talks HTTPS to the bookies trusting the Secret's CA and presenting its own client
certificate (spec.tls.adminClient, which the bookies verify against that CA), the certificates are reported valid;
a renewed admin certificate is served without a restart; and a cluster whose certificate does not name its
bookies says so."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from bookie.client import ClientConfig
from bookie.client.errors import UnauthorizedAccess
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import crd
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.operator.conftest import OperatorProcess, await_events, bookie_cluster, condition, get_cluster, wait_ready
from tests.support.certificates import RESTRICTED, client_tls, issued, tls_secret, write_and_read
from tests.support.kube import KubeTarget, wait_for
from tests.support.zookeeper_tls import ZkIdentity


def served_certificate(ip: str, port: int, ca: bytes, hostname: str) -> bytes:
    """The DER certificate the admin port presents, verified against ``ca`` and ``hostname``."""
    context = ssl.create_default_context(cadata=ca.decode())
    with socket.create_connection((ip, port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=hostname) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


async def test_a_tls_cluster_in_a_restricted_namespace(
        kube: KubeTarget, kube_namespace: str, zookeeper_tls: ZooKeeperServer, fleet_zk_identity: ZkIdentity,
        operator_factory: Callable[..., OperatorProcess], tmp_path: Path) -> None:
    ns = kube_namespace
    kube.kubectl("label", "namespace", ns, RESTRICTED)
    headless = f"bk-headless.{ns}.svc.cluster.local"
    admin_ca = trustme.CA()
    ca_pem = admin_ca.cert_pem.bytes()
    cert, key = issued(admin_ca, f"*.{headless}")
    bookie_ca = trustme.CA()
    # The bookies' own certificate carries an allowed role: re-replication connects to other bookies with it.
    bookie_cert, bookie_key = issued(bookie_ca, f"*.{headless}", role="0:bookie")
    operator_cert, operator_key = issued(admin_ca, "bookie-operator.clients.example", role="0:bookie-operator")
    zk = fleet_zk_identity
    kube.apply([tls_secret("bk-tls", bookie_cert, bookie_key, bookie_ca.cert_pem.bytes(), cluster="bk"),
                tls_secret("bk-admin-tls", cert, key, ca_pem, cluster="bk"),
                tls_secret("bk-operator-tls", operator_cert, operator_key, ca_pem, cluster="bk"),
                tls_secret("bk-zk-tls", zk.client.cert.read_bytes(), zk.client.key.read_bytes(),
                           zk.ca.read_bytes(), cluster="bk")], namespace=ns)
    operator_factory(ns, extra_args=["--zk-tls", "--zk-tls-ca", str(zk.ca), "--zk-tls-cert", str(zk.client.cert),
                                     "--zk-tls-key", str(zk.client.key)])
    kube.apply(bookie_cluster("bk", zookeeper_tls.connect_string, f"/{ns}/ledgers", replicas=2, ensembleSize=2,
                              tls={"bookie": {"secretName": "bk-tls"}, "clientAuthentication": True,
                                   "authorizedRoles": ["broker", "bookie"],
                                   "admin": {"secretName": "bk-admin-tls"},
                                   "adminClient": {"secretName": "bk-operator-tls"},
                                   "zookeeper": {"secretName": "bk-zk-tls"}, "refreshSeconds": 1}),
               namespace=ns)

    # Ready means the bookies registered over TLS-only ZooKeeper and the operator read them over HTTPS.
    obj = wait_ready(kube, ns, "bk", timeout=240)
    valid = condition(obj, "CertificatesValid")
    assert valid is not None and valid["status"] == "True" and valid["reason"] == "Valid", valid
    assert all(f"{p}: valid until" in valid["message"] for p in ("bookie", "admin", "adminClient", "zookeeper"))

    # The bookie port: a broker's certificate writes and reads over TLS; a certificate without a role is refused.
    def client(role: str) -> ClientConfig:
        return ClientConfig(zk_servers=zookeeper_tls.connect_string, ledgers_root=f"/{ns}/ledgers",
                            zk_security=zk.security(), tls=client_tls(tmp_path / role, bookie_ca, role))

    assert await write_and_read(client("broker")) == [f"entry-{i}".encode() for i in range(10)]
    with pytest.raises(UnauthorizedAccess):
        await write_and_read(client("viewer"))
    policy = kube.get(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/bk")
    assert policy is not None
    zk_port = int(zookeeper_tls.connect_string.rpartition(":")[2])
    assert zk_port in {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}

    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-0")
    assert pod is not None
    ip, host = pod["status"]["podIP"], f"bk-0.{headless}"
    first = served_certificate(ip, 8080, ca_pem, host)
    assert first == x509.load_pem_x509_certificate(cert).public_bytes(serialization.Encoding.DER)
    restarts = pod["status"]["containerStatuses"][0]["restartCount"]

    # Renewal: the same Secret, a new certificate of the same CA; served without a restart.
    renewed, renewed_key = issued(admin_ca, f"*.{headless}")
    kube.apply([tls_secret("bk-admin-tls", renewed, renewed_key, ca_pem, cluster="bk")], namespace=ns)
    want = x509.load_pem_x509_certificate(renewed).public_bytes(serialization.Encoding.DER)
    wait_for(lambda: served_certificate(ip, 8080, ca_pem, host) == want, 120, interval=2,
             what="the renewed admin certificate served")
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-0")
    assert pod is not None and pod["status"]["containerStatuses"][0]["restartCount"] == restarts

    # A certificate that does not name the bookies: reported, with the bookies and the fix.
    wrong, wrong_key = issued(admin_ca, "somewhere-else.example")
    kube.apply([tls_secret("other-tls", wrong, wrong_key, ca_pem, cluster="other")], namespace=ns)
    kube.apply(bookie_cluster("other", zookeeper_tls.connect_string, f"/{ns}/other", replicas=1, ensembleSize=1,
                              tls={"admin": {"secretName": "other-tls"}}), namespace=ns)

    def reported() -> dict[str, str] | None:
        c = condition(get_cluster(kube, ns, "other"), "CertificatesValid")
        return c if c is not None and c["status"] == "False" else None

    bad = wait_for(reported, 60, what="CertificatesValid=False on the other cluster")
    assert bad["reason"] == "CertificateDoesNotCoverBookieIds"
    assert f"other-0 (other-0.other-headless.{ns}.svc.cluster.local)" in bad["message"]
    assert f"add *.other-headless.{ns}.svc.cluster.local to its dnsNames" in bad["message"]
    (event,) = await_events(kube, ns, "other", "CertificateDoesNotCoverBookieIds")
    assert event["type"] == "Warning"
    degraded = condition(get_cluster(kube, ns, "other"), "Degraded")
    assert degraded is not None and degraded["status"] == "True"
    kube.api.delete(f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{ns}/{crd.models.PLURAL}/other")
