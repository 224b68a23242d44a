"""A throwaway PKI for local fleets, tests and benchmarks: a CA, bookie certificates and client certificates
carrying BookKeeper roles in their OU (``0:role1,role2;1:cluster``, what ``BookieAuthZFactory`` reads).

Made with the ``cryptography`` package; keys are EC P-256 in PKCS#8 PEM, which both our bookie (Python's
ssl) and Apache BookKeeper's (Netty, PEM key stores) read. Files are written atomically, so a bookie that
reloads its certificate files (``tlsCertFilesRefreshDurationSeconds``) never sees half of one.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=30)


@dataclass(frozen=True)
class Issued:
    """PEM files of one certificate (chain) and its key, and the CA bundle that verifies it."""

    certificate: Path
    key: Path
    ca: Path

    @property
    def serial(self) -> int:
        return x509.load_pem_x509_certificate(self.certificate.read_bytes()).serial_number


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    if private:
        tmp.chmod(0o600)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def roles_ou(roles: list[str], cluster: str | None = None) -> str:
    """BookKeeper's OU layout: ``0:<roles, comma separated>[;1:<cluster>]``."""
    return f"0:{','.join(roles)}" + (f";1:{cluster}" if cluster else "")


class LocalCA:
    """A self-signed CA in ``directory`` (``ca.crt``); ``issue`` signs bookie and client certificates."""

    def __init__(self, directory: Path, name: str = "bookie-fleet test CA") -> None:
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self._cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256()))
        self.ca = directory / "ca.crt"
        _write(self.ca, self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, common_name: str, *, ou: str | None = None, ips: tuple[str, ...] = (),
              dns_names: tuple[str, ...] = (), not_after: dt.datetime | None = None,
              directory: Path | None = None) -> Issued:
        """``<name>.crt`` and ``<name>.key`` (in ``directory``, default the CA's), valid for server and client
        authentication, with ``ou`` as the subject's organizational unit."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "bookie-fleet")]
        if ou is not None:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        builder = (
            x509.CertificateBuilder().subject_name(x509.Name(attributes)).issuer_name(self._cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(not_after or now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                           critical=False))
        sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        sans += [x509.DNSName(d) for d in dns_names]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        where = directory or self.directory
        issued = Issued(where / f"{name}.crt", where / f"{name}.key", self.ca)
        # Key first, then certificate: a reader that sees the new certificate finds its key already there.
        _write(issued.key, _key_pem(key), private=True)
        _write(issued.certificate, cert.public_bytes(serialization.Encoding.PEM))
        return issued


TLS_CONTEXT_FACTORY = "org.apache.bookkeeper.tls.TLSContextFactory"
BOOKIE_AUTHZ_FACTORY = "org.apache.bookkeeper.tls.BookieAuthZFactory"


def bookie_tls_conf(issued: Issued, *, client_authentication: bool = False, roles: list[str] | None = None,
                    **extra: object) -> dict[str, object]:
    """BookKeeper's bookie keys for TLS with these PEM files (the same for our bookie and a Java one), and with
    ``roles``, BookieAuthZFactory admitting them (which needs client authentication)."""
    conf: dict[str, object] = {
        "tlsProviderFactoryClass": TLS_CONTEXT_FACTORY,
        "tlsKeyStoreType": "PEM", "tlsKeyStore": str(issued.key),
        "tlsCertificatePath": str(issued.certificate),
        "tlsTrustStoreType": "PEM", "tlsTrustStore": str(issued.ca),
        "tlsClientAuthentication": client_authentication or roles is not None,
    }
    if roles is not None:
        conf["bookieAuthProviderFactoryClass"] = BOOKIE_AUTHZ_FACTORY
        conf["authorizedRoles"] = ",".join(roles)
    conf.update(extra)
    return conf


def java_client_tls_properties(issued: Issued | None, ca: Path) -> dict[str, str]:
    """BookKeeper's ClientConfiguration keys for a TLS client trusting ``ca`` and, with ``issued``, presenting
    that certificate (what a Pulsar broker sets with bookkeeperTLSClientAuthentication)."""
    props = {"tlsProviderFactoryClass": TLS_CONTEXT_FACTORY,
             "clientTrustStoreType": "PEM", "clientTrustStore": str(ca)}
    if issued is not None:
        props.update({"tlsClientAuthentication": "true", "clientKeyStoreType": "PEM",
                      "clientKeyStore": str(issued.key), "tlsCertificatePath": str(issued.certificate)})
    return props
