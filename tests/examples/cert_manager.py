"""What cert-manager would make from an example's certificates file (``examples/<example>-certificates.yaml``), made
without cert-manager: one test CA (trustme) per issuer the Certificates name (a CA issuer's ``ca.crt`` is that
CA), and for each Certificate the Secret of its ``secretName`` in cert-manager's layout (``tls.crt``, ``tls.key``
PKCS#8, ``ca.crt``), with the file's ``dnsNames``, ``commonName`` and first OU (``subject.organizationalUnits``,
the certificate's role). The names are read from the file, so a test of these Secrets tests its Certificates.

Certificates of a CA (``isCA``) make no Secret here: the CA of the issuer they stand behind is the test CA."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
import yaml
from bookie.tls import ClientTLS

from tests.support.certificates import issued, tls_secret

Obj = dict[str, Any]


def certificates_path(example: Path) -> Path:
    return example.with_name(f"{example.stem}-certificates.yaml")


def certificates(path: Path) -> list[Obj]:
    """The file's Certificates that are not CAs."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return [d for d in docs if d["kind"] == "Certificate" and not d["spec"].get("isCA")]


def role(certificate: Obj) -> str | None:
    """The certificate's role as BookKeeper reads it: the first OU, ``0:role`` (None without an OU)."""
    units = certificate["spec"].get("subject", {}).get("organizationalUnits", [])
    assert len(units) <= 1, f"{certificate['metadata']['name']}: one OU, the role"
    return units[0] if units else None


def issuer(certificate: Obj) -> tuple[str, str]:
    ref = certificate["spec"]["issuerRef"]
    return ref.get("kind", "Issuer"), ref["name"]


@dataclass(frozen=True)
class Made:
    """The Secret cert-manager would write for one Certificate (its data, by cert-manager's keys), and the test CA
    standing for its issuer."""

    certificate: Obj
    data: dict[str, bytes]
    ca: trustme.CA

    @property
    def secret_name(self) -> str:
        return str(self.certificate["spec"]["secretName"])

    def secret(self) -> Obj:
        """The Secret with the labels of the Certificate's secretTemplate, as cert-manager writes them."""
        labels = (self.certificate["spec"].get("secretTemplate") or {}).get("labels") or {}
        return tls_secret(self.secret_name, self.data["tls.crt"], self.data["tls.key"], self.data["ca.crt"],
                          labels=labels)

    def client_tls(self, directory: Path) -> ClientTLS:
        """A client configured as the example's header configures Pulsar's broker with this Secret mounted."""
        directory.mkdir(parents=True, exist_ok=True)
        for key, value in self.data.items():
            (directory / key).write_bytes(value)
        return ClientTLS(trust_store=str(directory / "ca.crt"), client_authentication=True,
                         certificate_path=str(directory / "tls.crt"), key_store=str(directory / "tls.key"))


class CertManager:
    """Test CAs in place of the file's issuers. ``namespace``: the bookies' namespace in the file; DNS names in
    it are issued for ``test_namespace`` instead."""

    def __init__(self, namespace: str, test_namespace: str) -> None:
        self.namespace, self.test_namespace = namespace, test_namespace
        self.cas: dict[tuple[str, str], trustme.CA] = {}

    def dns_name(self, name: str) -> str:
        return name.replace(f".{self.namespace}.svc.", f".{self.test_namespace}.svc.")

    def make(self, certificate: Obj) -> Made:
        spec = certificate["spec"]
        ca = self.cas.setdefault(issuer(certificate), trustme.CA())
        names = [self.dns_name(n) for n in spec.get("dnsNames", [])]
        common_name = spec.get("commonName")
        assert names or common_name, f"{certificate['metadata']['name']} names nothing"
        cert, key = issued(ca, *(names or [common_name]), role=role(certificate), common_name=common_name)
        return Made(certificate, {"tls.crt": cert, "tls.key": key, "ca.crt": ca.cert_pem.bytes()}, ca)


def tls_secret_names(tls: Obj) -> dict[str, str]:
    """spec.tls's Secrets: purpose -> Secret name."""
    return {purpose: ref["secretName"] for purpose, ref in tls.items() if isinstance(ref, dict) and "secretName" in ref}


def made_for(example: Path, tls: Obj, test_namespace: str) -> dict[str, Made]:
    """Secret name -> what cert-manager would make, for every Certificate of the example's certificates file;
    ``tls``: the example's spec.tls, whose Secrets' Certificates are in the bookies' namespace."""
    found = certificates(certificates_path(example))
    wanted = set(tls_secret_names(tls).values())
    namespaces = {c["metadata"]["namespace"] for c in found if c["spec"]["secretName"] in wanted}
    assert len(namespaces) == 1, f"spec.tls's Certificates are in one namespace, the bookies': {namespaces}"
    manager = CertManager(namespaces.pop(), test_namespace)
    return {c["spec"]["secretName"]: manager.make(c) for c in found}
