"""Are the certificates of ``spec.tls`` usable by these bookies? Pure: the Secrets' bytes, the bookie ids'
hosts and ``now`` in, problems out (each with a CamelCase reason for the ``CertificatesValid`` condition).

Checked per Secret: it exists and has cert-manager's keys; tls.crt parses, is valid now, and chains to ca.crt;
tls.key is the key of tls.crt (and PKCS#8 where Apache BookKeeper reads it); for the bookie port and the admin
API, the certificate names every bookie's host (a client that verifies hostnames refuses the others).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from bookie_operator.models import TlsSpec

CERT, KEY, CA, COMBINED = "tls.crt", "tls.key", "ca.crt", "tls-combined.pem"
PKCS8_HEADER = b"-----BEGIN PRIVATE KEY-----"
MAX_CHAIN = 8


class TlsReason(StrEnum):
    SECRET_MISSING = "CertificateSecretMissing"
    KEY_MISSING = "CertificateSecretIncomplete"
    INVALID = "CertificateInvalid"
    EXPIRED = "CertificateExpired"
    NOT_YET_VALID = "CertificateNotYetValid"
    UNTRUSTED = "CertificateNotSignedByCA"
    KEY_MISMATCH = "CertificateKeyMismatch"
    KEY_FORMAT = "CertificateKeyNotPKCS8"
    NOT_COVERED = "CertificateDoesNotCoverBookieIds"


@dataclass(frozen=True)
class TlsProblem:
    purpose: str          # bookie, admin, zookeeper
    secret: str
    reason: TlsReason
    message: str


@dataclass(frozen=True)
class TlsVerdict:
    problems: list[TlsProblem] = field(default_factory=list)
    expires: dict[str, dt.datetime] = field(default_factory=dict)   # purpose -> tls.crt's notAfter

    @property
    def valid(self) -> bool:
        return not self.problems

    def message(self) -> str:
        if self.problems:
            return "; ".join(p.message for p in self.problems)
        return "; ".join(f"{purpose}: valid until {when.strftime('%Y-%m-%dT%H:%M:%SZ')}"
                         for purpose, when in sorted(self.expires.items()))


def check_tls(tls: TlsSpec, implementation: str, secrets: dict[str, dict[str, bytes] | None],
              hosts: dict[str, str], now: dt.datetime) -> TlsVerdict:
    """``secrets``: Secret name -> its decoded data (None: no such Secret); ``hosts``: pod -> its bookie id's host."""
    problems: list[TlsProblem] = []
    expires: dict[str, dt.datetime] = {}
    java = implementation == "apache-bookkeeper"
    for purpose, name in tls.checked_secrets().items():
        def problem(reason: TlsReason, text: str, purpose: str = purpose, name: str = name) -> None:
            problems.append(TlsProblem(purpose, name, reason, f"spec.tls.{purpose}: Secret {name}: {text}"))

        data = secrets.get(name)
        if data is None:
            problem(TlsReason.SECRET_MISSING, "not found")
            continue
        needed = [CERT, KEY, CA] + ([COMBINED] if java and purpose == "zookeeper" else [])
        missing = [k for k in needed if not data.get(k)]
        if missing:
            hint = (" (Apache BookKeeper's ZooKeeper client reads key and certificate from one file: cert-manager's "
                    "additionalOutputFormats CombinedPEM)") if COMBINED in missing else ""
            problem(TlsReason.KEY_MISSING, f"has no {', '.join(missing)}{hint}")
            continue
        try:
            chain = x509.load_pem_x509_certificates(data[CERT])
            cas = x509.load_pem_x509_certificates(data[CA])
        except ValueError as exc:
            problem(TlsReason.INVALID, f"tls.crt or ca.crt is not PEM certificates ({exc})")
            continue
        leaf = chain[0]
        expires[purpose] = leaf.not_valid_after_utc
        if leaf.not_valid_after_utc <= now:
            problem(TlsReason.EXPIRED, f"tls.crt expired at {leaf.not_valid_after_utc.isoformat()}")
        elif leaf.not_valid_before_utc > now:
            problem(TlsReason.NOT_YET_VALID, f"tls.crt is valid only from {leaf.not_valid_before_utc.isoformat()}")
        if not _chains_to(leaf, chain[1:], cas):
            problem(TlsReason.UNTRUSTED, f"tls.crt ({leaf.subject.rfc4514_string()}) is not signed by ca.crt")
        key_problem = _key_problem(data[KEY], leaf, java and purpose not in ("admin", "adminClient"))
        if key_problem is not None:
            problem(*key_problem)
        if purpose in ("bookie", "admin"):
            names = dns_names(leaf)
            uncovered = [pod for pod, host in sorted(hosts.items()) if not covers(names, host)]
            if uncovered:
                shown = ", ".join(f"{pod} ({hosts[pod]})" for pod in uncovered)
                problem(TlsReason.NOT_COVERED, f"tls.crt names {', '.join(names) or 'no DNS name'}, not the bookie "
                        f"ids' hosts of {shown}: add *.{_parent(hosts[uncovered[0]])} to its dnsNames")
    return TlsVerdict(problems, expires)


def _key_problem(pem: bytes, leaf: x509.Certificate, pkcs8: bool) -> tuple[TlsReason, str] | None:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        return TlsReason.INVALID, f"tls.key is not an unencrypted PEM private key ({exc})"
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.PEM, public) != \
            leaf.public_key().public_bytes(serialization.Encoding.PEM, public):
        return TlsReason.KEY_MISMATCH, "tls.key is not the private key of tls.crt"
    if pkcs8 and not pem.lstrip().startswith(PKCS8_HEADER):
        return TlsReason.KEY_FORMAT, ("tls.key is not PKCS#8, which Apache BookKeeper's bookies need (cert-manager: "
                                      "privateKey.encoding: PKCS8)")
    return None


def _chains_to(leaf: x509.Certificate, intermediates: list[x509.Certificate], cas: list[x509.Certificate]) -> bool:
    current = leaf
    for _ in range(MAX_CHAIN):
        if any(_issued(current, ca) for ca in cas):
            return True
        parent = next((c for c in intermediates if _issued(current, c)), None)
        if parent is None:
            return False
        current = parent
    return False


def _issued(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def dns_names(cert: x509.Certificate) -> list[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [name.lower() for name in san.get_values_for_type(x509.DNSName)]


def covers(names: list[str], host: str) -> bool:
    """RFC 6125: an exact name, or a wildcard standing for the whole left-most label only."""
    host = host.lower().rstrip(".")
    for name in names:
        name = name.lower().rstrip(".")
        if name == host:
            return True
        if name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]:
            return True
    return False


def _parent(host: str) -> str:
    return host.split(".", 1)[1] if "." in host else host
