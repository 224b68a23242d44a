"""TLS on the bookie protocol port, as Apache BookKeeper does it: pure helpers on Python's ``ssl``.

BookKeeper upgrades a plaintext connection with a v3 START_TLS request; each side then wraps the same socket
in TLS (the listener and the client call ``loop.start_tls``). This module builds the ``ssl.SSLContext`` of
each side from BookKeeper's keys (PEM files only), reloads the bookie's certificate files when they change
(``tlsCertFilesRefreshDurationSeconds``), and reads the roles a client certificate carries in its subject's
OU field the way BookKeeper's ``CertUtils.getRolesFromOU`` does (``0:role1,role2;1:cluster``).

No I/O on import and nothing of the bookie: the client, the server and the configuration model share it.
Loading a context reads files: callers on the event loop run ``load`` in a thread.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TLS_CONTEXT_FACTORY = "org.apache.bookkeeper.tls.TLSContextFactory"
PROVIDERS = ("OpenSSL", "JDK")  # BookKeeper's tlsProvider values; both mean OpenSSL (Python's ssl) here
STORE_TYPES_BOOKKEEPER = ("PEM", "JKS", "PKCS12")

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_INSECURE_PROTOCOLS = ("SSLv3", "TLSv1", "TLSv1.1")

# TLS 1.3 suites by their IANA names (what Java lists). Python's ssl cannot narrow them: OpenSSL offers all
# of these whenever TLS 1.3 is on.
TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
# The TLS 1.2 suites Java names (IANA) that a BookKeeper configuration lists in practice, with OpenSSL's name
# for each (``openssl ciphers -stdname``). OpenSSL names are accepted as they are.
_IANA_TO_OPENSSL = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
}


class TLSConfigError(ValueError):
    """TLS settings that cannot work; the message names the key and what is accepted."""


def split_list(value: str | None) -> list[str]:
    """A BookKeeper comma list (``a, b,c``) -> ``["a", "b", "c"]``; None or blank -> ``[]``."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


# ------------------------------------------------------------------------------------- protocols and ciphers

@dataclass(frozen=True)
class Suites:
    """What ``tlsEnabledProtocols`` and ``tlsEnabledCipherSuites`` allow, as ``ssl`` takes it."""

    minimum: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    maximum: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3
    openssl_ciphers: str | None = None  # TLS 1.2 cipher string for ``set_ciphers``; None: OpenSSL's defaults

    def apply(self, ctx: ssl.SSLContext) -> None:
        ctx.minimum_version = self.minimum
        ctx.maximum_version = self.maximum
        if self.openssl_ciphers is not None:
            ctx.set_ciphers(self.openssl_ciphers)


def parse_suites(protocols: str | None, ciphers: str | None) -> Suites:
    """``tlsEnabledProtocols`` / ``tlsEnabledCipherSuites`` (comma lists, Java's names or OpenSSL's) -> Suites.

    Raises ``TLSConfigError`` naming the key for a protocol or cipher this bookie cannot offer."""
    minimum, maximum = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    names = split_list(protocols)
    if names:
        unknown = [n for n in names if n not in _PROTOCOLS]
        if unknown:
            insecure = [n for n in unknown if n in _INSECURE_PROTOCOLS]
            why = " (insecure and deprecated by RFC 8996)" if insecure else ""
            raise TLSConfigError(f"tlsEnabledProtocols: {', '.join(unknown)} not supported{why}; "
                                 f"allowed: {', '.join(_PROTOCOLS)}")
        versions = sorted(_PROTOCOLS[n] for n in names)
        minimum, maximum = versions[0], versions[-1]
    suites = split_list(ciphers)
    if not suites:
        return Suites(minimum, maximum)
    tls13 = [s for s in suites if s in TLS13_SUITES]
    tls12 = [_openssl_cipher(s) for s in suites if s not in TLS13_SUITES]
    if tls13 and set(tls13) != set(TLS13_SUITES):
        raise TLSConfigError(
            f"tlsEnabledCipherSuites: {', '.join(tls13)} is a subset of the TLS 1.3 suites, which OpenSSL (Python's "
            f"ssl) offers all or none of: list all of {', '.join(TLS13_SUITES)}, or none to turn TLS 1.3 off")
    if not tls13:
        maximum = min(maximum, ssl.TLSVersion.TLSv1_2)  # no TLS 1.3 suite listed: TLS 1.3 is not allowed
    if not tls12:
        minimum = max(minimum, ssl.TLSVersion.TLSv1_3)
    if minimum > maximum:
        raise TLSConfigError("tlsEnabledProtocols and tlsEnabledCipherSuites leave no protocol: the cipher suites "
                             "listed belong to none of the protocols enabled")
    return Suites(minimum, maximum, ":".join(tls12) if tls12 else None)


def _openssl_cipher(name: str) -> str:
    if name.startswith("TLS_"):
        converted = _IANA_TO_OPENSSL.get(name)
        if converted is None:
            raise TLSConfigError(f"tlsEnabledCipherSuites: {name} is not a cipher suite this bookie knows; use "
                                 f"OpenSSL's name, or one of {', '.join(sorted(_IANA_TO_OPENSSL))}, "
                                 f"{', '.join(TLS13_SUITES)}")
        name = converted
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        probe.set_ciphers(name)
    except ssl.SSLError:
        raise TLSConfigError(f"tlsEnabledCipherSuites: OpenSSL knows no cipher suite {name}") from None
    return name


def check_store_type(key: str, value: str) -> str:
    """PEM is the only key/trust store format this bookie reads; BookKeeper's others get a clear refusal."""
    kind = value.strip().upper()
    if kind == "PEM":
        return "PEM"
    if kind in ("JKS", "PKCS12"):
        raise TLSConfigError(f"{key}: only PEM is supported by this bookie, not {kind}: convert the store to PEM "
                             "files (`keytool -importkeystore -deststoretype PKCS12` for JKS, then "
                             "`openssl pkcs12 -nodes` gives the key and the certificates)")
    raise TLSConfigError(f"{key}: only PEM is supported by this bookie")


def check_provider(value: str) -> str:
    for provider in PROVIDERS:
        if value.strip().lower() == provider.lower():
            return provider
    raise TLSConfigError("tlsProvider: expected OpenSSL or JDK (both use OpenSSL through Python's ssl here)")


# ------------------------------------------------------------------------------------- contexts

def _read_password(path: str | None, key: str) -> str | None:
    if not path:
        return None
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as exc:
        raise TLSConfigError(f"{key}: cannot read {path}: {exc.strerror}") from None


def _load_chain(ctx: ssl.SSLContext, cert: str, key: str, password_path: str | None,
                keys: tuple[str, str]) -> None:
    for name, path in zip(keys, (cert, key), strict=True):
        if not os.path.isfile(path):
            raise TLSConfigError(f"{name}: no such file {path}")
    try:
        ctx.load_cert_chain(cert, key, _read_password(password_path, "tlsKeyStorePasswordPath"))
    except ssl.SSLError as exc:
        what = ("the key is not the certificate's" if exc.reason == "KEY_VALUES_MISMATCH"
                else "not a PEM certificate chain and its private key")
        raise TLSConfigError(f"{keys[0]} {cert} with {keys[1]} {key}: {what} ({exc.reason or exc})") from None


def _load_trust(ctx: ssl.SSLContext, path: str, key: str) -> None:
    if not os.path.isfile(path):
        raise TLSConfigError(f"{key}: no such file {path}")
    try:
        ctx.load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        raise TLSConfigError(f"{key} {path}: not PEM CA certificates ({exc.reason or exc})") from None


@dataclass(frozen=True)
class ServerFiles:
    """The bookie's side: its certificate chain and key, and the CAs it trusts for client certificates."""

    certificate: str  # tlsCertificatePath
    key: str  # tlsKeyStore
    key_password_path: str | None = None  # tlsKeyStorePasswordPath
    trust_store: str | None = None  # tlsTrustStore
    client_authentication: bool = False  # tlsClientAuthentication
    suites: Suites = Suites()

    def paths(self) -> tuple[str, ...]:
        return tuple(p for p in (self.certificate, self.key, self.key_password_path, self.trust_store) if p)

    def load(self) -> ssl.SSLContext:
        """A server context (reads the files: call it in a thread from the event loop)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.suites.apply(ctx)
        _load_chain(ctx, self.certificate, self.key, self.key_password_path, ("tlsCertificatePath", "tlsKeyStore"))
        if self.client_authentication:
            # As BookKeeper's ClientAuth.REQUIRE: a client without a certificate chaining to tlsTrustStore fails
            # the handshake.
            if not self.trust_store:
                raise TLSConfigError("tlsClientAuthentication needs tlsTrustStore (the CAs of client certificates)")
            _load_trust(ctx, self.trust_store, "tlsTrustStore")
            ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


@dataclass(frozen=True)
class ClientTLS:
    """The client's side, named after BookKeeper's ClientConfiguration keys.

    ``trust_store`` (``clientTrustStore``, falling back to ``tlsTrustStore``): PEM CAs the bookie's
    certificate must chain to; mandatory, as in BookKeeper. ``client_authentication``
    (``tlsClientAuthentication``): present ``certificate_path`` (``tlsCertificatePath``) with ``key_store``
    (``clientKeyStore``), as BookKeeper's client does only then. ``hostname_verification``
    (``tlsHostnameVerificationEnabled``, off by default as in BookKeeper): the bookie's certificate must name
    the host dialled."""

    trust_store: str
    client_authentication: bool = False
    certificate_path: str | None = None
    key_store: str | None = None
    key_store_password_path: str | None = None
    hostname_verification: bool = False
    enabled_protocols: str | None = None
    enabled_cipher_suites: str | None = None

    def load(self) -> ssl.SSLContext:
        """A client context (reads the files: call it in a thread from the event loop)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        parse_suites(self.enabled_protocols, self.enabled_cipher_suites).apply(ctx)
        ctx.check_hostname = self.hostname_verification
        _load_trust(ctx, self.trust_store, "clientTrustStore")
        if self.client_authentication:
            if not (self.certificate_path and self.key_store):
                raise TLSConfigError("tlsClientAuthentication needs tlsCertificatePath and clientKeyStore")
            _load_chain(ctx, self.certificate_path, self.key_store, self.key_store_password_path,
                        ("tlsCertificatePath", "clientKeyStore"))
        return ctx


# ------------------------------------------------------------------------------------- reload

def modification_times(paths: Iterable[str]) -> tuple[float, ...]:
    """The files' mtimes (``-1`` for a missing one): a change in any means the context must be rebuilt."""
    out = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime)
        except OSError:
            out.append(-1.0)
    return tuple(out)


class ReloadingContext:
    """The bookie's current server context; ``refresh`` (in a thread) rebuilds it when a file changed.

    As BookKeeper's ``tlsCertFilesRefreshDurationSeconds``: files are compared by modification time, new
    connections get the new context, established ones keep theirs. A rotation caught half-written (a key that
    does not match the certificate) keeps the previous context until the files load together."""

    def __init__(self, files: ServerFiles) -> None:
        self.files = files
        self._mtimes = modification_times(files.paths())
        self.context = files.load()
        self.failed_mtimes: tuple[float, ...] | None = None  # the file versions that last failed to load

    def refresh(self) -> bool:
        """Reload if a file changed since the last load; True when the context was replaced. Raises
        ``TLSConfigError`` when the changed files do not load (the previous context stays)."""
        mtimes = modification_times(self.files.paths())
        if mtimes == self._mtimes:
            return False
        try:
            context = self.files.load()
        except TLSConfigError:
            self.failed_mtimes = mtimes
            raise
        self.context, self._mtimes, self.failed_mtimes = context, mtimes, None
        return True


# ------------------------------------------------------------------------------------- certificate roles

_OU_PART = re.compile(r"^([0-9]+):(.*)$")
OU_ROLES = "0"  # BookKeeper's CertUtils.OU_ROLE_NAME_CODE


def organizational_unit(peercert: dict[str, Any] | None) -> str | None:
    """The first OU of a certificate's subject (``ssl.getpeercert()`` form), as BookKeeper's ``getOUString``
    finds it, or None."""
    for rdn in (peercert or {}).get("subject", ()):
        for attribute, value in rdn:
            if attribute == "organizationalUnitName":
                return str(value)
    return None


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split`` of Java: trailing empty strings are dropped (``"a,".split(",")`` is ``["a"]``)."""
    parts = text.split(separator)
    if text == "":
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def roles_from_ou(ou: str | None) -> list[str]:
    """``0:role1,role2;1:cluster`` -> ``["role1", "role2"]`` (BookKeeper's ``CertUtils.getRolesFromOU``)."""
    codes: dict[str, str] = {}
    for part in _java_split(ou or "", ";"):
        match = _OU_PART.match(part)
        if match:
            codes[match.group(1).strip()] = match.group(2).strip()
    names = codes.get(OU_ROLES)
    if names is None:
        return []
    return [role.strip() for role in _java_split(names, ",")]


def peer_roles(peercert: dict[str, Any] | None) -> list[str]:
    return roles_from_ou(organizational_unit(peercert))


def describe_subject(peercert: dict[str, Any] | None) -> str:
    """``O=org,OU="0:a,b",CN=client`` for logs (no certificate: ``no certificate``)."""
    short = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "countryName": "C"}
    parts = [f"{short.get(k, k)}={_quoted(str(v))}" for rdn in (peercert or {}).get("subject", ()) for k, v in rdn]
    return ",".join(parts) or "no certificate"


def _quoted(value: str) -> str:
    return f'"{value}"' if any(ch in value for ch in ',=+;"') else value
