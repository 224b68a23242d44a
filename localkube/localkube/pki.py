"""Certificates and keys of the local control plane (a CA, serving and client certificates, the SA signing key)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class KeyPair:
    """PEM files of a certificate and its private key."""

    cert: Path
    key: Path

    def cert_pem(self) -> bytes:
        return self.cert.read_bytes()

    def key_pem(self) -> bytes:
        return self.key.read_bytes()


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    if private:
        tmp.chmod(0o600)
    tmp.replace(path)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


class CertificateAuthority:
    """A self-signed CA kept as ``ca.crt``/``ca.key`` in ``directory``; created once, reused afterwards."""

    def __init__(self, directory: Path, common_name: str = "localkube-ca") -> None:
        self.directory = directory
        self.pair = KeyPair(directory / "ca.crt", directory / "ca.key")
        if not (self.pair.cert.exists() and self.pair.key.exists()):
            key = _new_key()
            now = dt.datetime.now(dt.UTC)
            name = _name(common_name)
            cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                    .serial_number(x509.random_serial_number())
                    .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + _VALIDITY)
                    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                    .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                 content_commitment=False, key_encipherment=False,
                                                 data_encipherment=False, key_agreement=False,
                                                 encipher_only=False, decipher_only=False), critical=True)
                    .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                    .sign(key, hashes.SHA256()))
            _write(self.pair.key, _key_pem(key), private=True)
            _write(self.pair.cert, cert.public_bytes(serialization.Encoding.PEM))
        loaded = serialization.load_pem_private_key(self.pair.key_pem(), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{self.pair.key} is not an EC private key")
        self._key = loaded
        self._cert = x509.load_pem_x509_certificate(self.pair.cert_pem())

    def issue(self, name: str, common_name: str, *, organizations: tuple[str, ...] = (),
              ips: tuple[str, ...] = (), dns_names: tuple[str, ...] = (), server: bool = False,
              client: bool = False) -> KeyPair:
        """``name.crt``/``name.key`` signed by this CA (reused if they already exist for the same addresses)."""
        pair = KeyPair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        if pair.cert.exists() and pair.key.exists() and _subject_alt_names(pair) == (set(ips), set(dns_names)):
            return pair
        key = _new_key()
        now = dt.datetime.now(dt.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
        builder = (x509.CertificateBuilder().subject_name(_name(common_name, organizations))
                   .issuer_name(self._cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + _VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True,
                                                content_commitment=False, data_encipherment=False,
                                                key_agreement=False, key_cert_sign=False, crl_sign=False,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                                  critical=False))
        sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        sans += [x509.DNSName(dns) for dns in dns_names]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        _write(pair.key, _key_pem(key), private=True)
        _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
        return pair


def _subject_alt_names(pair: KeyPair) -> tuple[set[str], set[str]]:
    """(IP addresses, DNS names) a certificate is valid for."""
    cert = x509.load_pem_x509_certificate(pair.cert_pem())
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return ({str(ip) for ip in sans.get_values_for_type(x509.IPAddress)},
            set(sans.get_values_for_type(x509.DNSName)))


def service_account_keys(directory: Path) -> KeyPair:
    """The service-account token signing key (``sa.key``) and its public key (``sa.pub``), created once."""
    pair = KeyPair(directory / "sa.pub", directory / "sa.key")
    if not (pair.cert.exists() and pair.key.exists()):
        key = _new_key()
        _write(pair.key, _key_pem(key), private=True)
        _write(pair.cert, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    return pair
