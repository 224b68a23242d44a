"""Certificates for the Kubernetes tests of ``spec.tls``: test CAs from trustme, the Secrets cert-manager would make
from them (``tls.crt``, ``tls.key``, ``ca.crt``), clients that present a certificate role, and a write and read
through the bookies with such a client."""

from __future__ import annotations

import base64
from pathlib import Path

import trustme
from bookie.client import BookKeeper, ClientConfig
from bookie.tls import ClientTLS
from bookie_operator.builders import CLUSTER_LABEL
from cryptography.hazmat.primitives import serialization

# The namespace label that makes Kubernetes enforce the restricted Pod Security Standard.
RESTRICTED = "pod-security.kubernetes.io/enforce=restricted"


def tls_secret(name: str, cert: bytes, key: bytes, ca: bytes, *, cluster: str | None = None,
               labels: dict[str, str] | None = None) -> dict[str, object]:
    """A Secret in cert-manager's layout; ``cluster``: the BookieCluster whose own it is (its label, without which
    the operator refuses a spec that names it), ``labels``: others (a Certificate's ``secretTemplate.labels``)."""
    all_labels = {**(labels or {}), **({CLUSTER_LABEL: cluster} if cluster else {})}
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, **({"labels": all_labels} if all_labels else {})},
            "data": {k: base64.b64encode(v).decode() for k, v in
                     {"tls.crt": cert, "tls.key": key, "ca.crt": ca}.items()}}


def issued(ca: trustme.CA, *names: str, role: str | None = None,
           common_name: str | None = None) -> tuple[bytes, bytes]:
    """A certificate of ``ca`` for ``names`` (DNS names) with ``role`` as its subject's OU (BookKeeper's
    ``0:role``): its PEM chain and its PKCS#8 key, as cert-manager writes them with ``encoding: PKCS8``."""
    leaf = ca.issue_cert(*names, organization_unit_name=role, common_name=common_name)
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    return b"".join(b.bytes() for b in leaf.cert_chain_pems), pkcs8


def client_tls(directory: Path, ca: trustme.CA, role: str, *, trust: trustme.CA | None = None) -> ClientTLS:
    """A client's TLS files: a certificate of ``ca`` whose OU carries ``role`` (BookKeeper's OU=0:role), and the
    CA it trusts the bookies by (``trust``, by default ``ca``)."""
    cert, key = issued(ca, f"{role}.clients.example", role=f"0:{role}")
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in (("ca.crt", (trust or ca).cert_pem.bytes()), (f"{role}.crt", cert), (f"{role}.key", key)):
        (directory / name).write_bytes(data)
    return ClientTLS(trust_store=str(directory / "ca.crt"), client_authentication=True,
                     certificate_path=str(directory / f"{role}.crt"), key_store=str(directory / f"{role}.key"))


async def write_and_read(config: ClientConfig) -> list[bytes]:
    """Ten entries written to a new ledger on two bookies, then read back."""
    async with BookKeeper(config) as bk:
        handle = await bk.create_ledger(ensemble_size=2, write_quorum=2, ack_quorum=2)
        for i in range(10):
            await handle.add(f"entry-{i}".encode())
        await handle.close()
        return [e.payload for e in await (await bk.open_ledger(handle.ledger_id)).read(0, 9)]
