"""``bookie-fleet playground --tls``: the BookieCluster it applies requires client certificates on the bookie port
and admits the roles ``broker`` and ``bookie`` only, as ``examples/production.yaml``; the Secret it makes is what
the operator accepts for every bookie (CertificatesValid); the broker's certificate carries the role ``broker``
and the bookies' CA, and its keys are Pulsar's ``bookkeeperTLS*``. The run itself (Kubernetes, Pulsar) is the
story's test without ``--tls``: the same steps, only the bookie port's security differs."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path

import yaml
from bookie.tls import roles_from_ou
from bookie_fleet.story import CLUSTER, EXAMPLE, NAMESPACE, TLS_SECRET, PlaygroundPKI, require_client_certificates
from bookie_operator.builders import bookie_id
from bookie_operator.decisions.tls import check_tls
from bookie_operator.models import BookieClusterSpec
from cryptography import x509
from cryptography.x509.oid import NameOID


def test_the_cluster_admits_only_broker_and_bookie_certificates(tmp_path: Path) -> None:
    manifest = require_client_certificates(yaml.safe_load(EXAMPLE.read_text()))
    spec = BookieClusterSpec.model_validate(manifest["spec"])
    assert spec.tls is not None and spec.tls.bookie is not None
    assert spec.tls.bookie.secret_name == TLS_SECRET
    assert spec.tls.client_authentication is True
    assert spec.tls.authorized_roles == ["broker", "bookie"]

    pki = PlaygroundPKI.create(tmp_path)
    data = {str(k): base64.b64decode(v) for k, v in pki.secret["data"].items()}
    secrets: dict[str, dict[str, bytes] | None] = {TLS_SECRET: data}
    hosts = {f"{CLUSTER}-{i}": bookie_id(CLUSTER, NAMESPACE, i).rsplit(":", 1)[0] for i in range(spec.replicas)}
    verdict = check_tls(spec.tls, spec.implementation, secrets, hosts, dt.datetime.now(dt.UTC))
    assert verdict.valid, verdict.message()

    broker = x509.load_pem_x509_certificate(pki.broker.certificate.read_bytes())
    (ou,) = broker.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)
    assert roles_from_ou(str(ou.value)) == ["broker"]
    assert pki.broker.trust_certs.read_bytes() == data["ca.crt"]
    conf = pki.broker.broker_conf()
    assert conf["bookkeeperTLSClientAuthentication"] is True
    assert conf["bookkeeperTLSCertificateFilePath"] == str(pki.broker.certificate)
