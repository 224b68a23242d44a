"""``ZkSecurity``: how a ZooKeeper session proves who it is, and who may change the znodes it creates.

- TLS to ZooKeeper's ``secureClientPort`` (kazoo's ``use_ssl``), with a client certificate when ZooKeeper asks
  for one (its ``ssl.clientAuth`` is ``need`` by default); the certificate's subject is then the session's
  ``x509`` identity.
- A ``digest`` identity (``user:password``, ZooKeeper's digest scheme) added to the session.
- ``acl``: Apache BookKeeper's ``zkEnableSecurity``: every znode is created with ``CREATOR_ALL_ACL``, so only
  the identities of the creating session may read or change it. Every component of a fleet (bookies, clients,
  autorecovery, the operator) must then share one identity: the same digest, or certificates with one subject.

Every component builds its kazoo client from ``kazoo_options()``, so the same settings mean the same thing
everywhere (docs/security.md, "ZooKeeper").
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.security import CREATOR_ALL_ACL


class ZkSecurityError(Exception):
    """A credential file that cannot be used, or TLS settings ZooKeeper refuses; the message names the key
    (or the command-line option) and the file."""


# What each setting is called in bk_server.conf; the command-line tools name their flags instead.
CONFIG_KEYS: Mapping[str, str] = {
    "tls": "zkTlsEnable", "ca": "zkTlsTrustStorePath", "certfile": "zkTlsCertificatePath",
    "keyfile": "zkTlsKeyPath", "check_hostname": "zkTlsHostnameVerification", "digest": "zkDigestAuthFile",
    "acl": "zkEnableSecurity",
}


@dataclass(frozen=True)
class ZkSecurity:
    tls: bool = False
    certfile: Path | None = None        # PEM client certificate (x509 identity)
    keyfile: Path | None = None
    ca: Path | None = None              # PEM CA bundle the server certificate must chain to
    check_hostname: bool = True
    digest: str | None = field(default=None, repr=False)   # "user:password"
    acl: bool = False                   # zkEnableSecurity
    option_names: Mapping[str, str] = field(default_factory=lambda: CONFIG_KEYS, compare=False, repr=False)

    @classmethod
    def from_config(cls, conf: Any) -> ZkSecurity:
        """From a ``bookie.config.BookieConfig``; reads ``zkDigestAuthFile`` (once, at start-up)."""
        digest = read_digest(conf.zk_digest_auth_file) if conf.zk_digest_auth_file is not None else None
        return cls(tls=conf.zk_tls_enable, certfile=conf.zk_tls_certificate_path, keyfile=conf.zk_tls_key_path,
                   ca=conf.zk_tls_trust_store_path, check_hostname=conf.zk_tls_hostname_verification,
                   digest=digest, acl=conf.zk_enable_security)

    @property
    def enabled(self) -> bool:
        return self.tls or self.digest is not None or self.acl

    def name(self, setting: str) -> str:
        """The key or flag that sets ``setting`` (a field name), for error messages."""
        return self.option_names.get(setting, setting)

    def ssl_context(self) -> ssl.SSLContext:
        """The client TLS context kazoo builds from ``kazoo_options()`` (kazoo builds its own at every
        connection, from the same files); raises ``ZkSecurityError`` naming the setting whose file fails."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        context.check_hostname = self.check_hostname
        context.verify_mode = ssl.CERT_REQUIRED
        if self.ca is not None:
            try:
                context.load_verify_locations(str(self.ca))
            except (OSError, ssl.SSLError) as exc:
                raise ZkSecurityError(f"{self.name('ca')} {self.ca}: not a readable PEM CA bundle: "
                                      f"{_reason(exc)}") from None
        if self.certfile is not None and self.keyfile is not None:
            try:
                context.load_cert_chain(str(self.certfile), str(self.keyfile))
            except (OSError, ssl.SSLError) as exc:
                raise ZkSecurityError(f"{self.name('certfile')} {self.certfile} / {self.name('keyfile')} "
                                      f"{self.keyfile}: not a PEM certificate and its key: {_reason(exc)}") from None
        return context

    def kazoo_options(self) -> dict[str, Any]:
        """Keyword arguments of ``KazooClient`` for these settings."""
        options: dict[str, Any] = {}
        if self.tls:
            options.update(use_ssl=True, verify_certs=True, check_hostname=self.check_hostname)
            if self.ca is not None:
                options["ca"] = str(self.ca)
            if self.certfile is not None and self.keyfile is not None:
                options.update(certfile=str(self.certfile), keyfile=str(self.keyfile))
        if self.digest is not None:
            options["auth_data"] = [("digest", self.digest)]  # re-sent by kazoo on every new connection
        if self.acl:
            options["default_acl"] = CREATOR_ALL_ACL
        return options


def read_digest(path: Path | str, name: str = "zkDigestAuthFile") -> str:
    """The ``user:password`` of a digest credential file (first non-comment line); ``name``: the key or flag
    that named the file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ZkSecurityError(f"{name} {path}: cannot read: {exc.strerror}") from None
    return parse_digest(text, f"{name} {path}")


def parse_digest(text: str, source: str) -> str:
    """The ``user:password`` of a digest credential's text (first non-comment line); ``source`` names where the
    text came from in the error."""
    credential = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    user, sep, password = credential.partition(":")
    if not sep or not user or not password:
        raise ZkSecurityError(f"{source}: expected one line user:password")
    return credential


def _reason(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)


def _servers(zk_servers: str) -> list[tuple[str, int]]:
    hosts = zk_servers.split("/", 1)[0]  # a chroot suffix is not part of the address
    servers = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        servers.append((host.strip("[]"), int(port)) if host else (item.strip(), 2181))
    return servers


def check_tls_handshake(security: ZkSecurity, zk_servers: str, timeout_s: float = 5.0) -> None:
    """One TLS handshake with the first server of ``zk_servers`` that accepts a TCP connection (blocking).

    Raises ``ZkSecurityError`` for what only a setting can fix: a server certificate that does not chain to
    the CA bundle (or to the system's CAs when none is given), one that does not name the host, a port that
    does not speak TLS, a client certificate ZooKeeper requires and was not given or does not accept. A
    server that cannot be reached is left to the session's own connection attempts."""
    context = security.ssl_context()
    for host, port in _servers(zk_servers):
        where = f"ZooKeeper at {host}:{port}"
        try:
            raw = socket.create_connection((host, port), timeout=timeout_s)
        except OSError:
            continue
        with raw:
            try:
                tls = context.wrap_socket(raw, server_hostname=host)
            except ssl.SSLCertVerificationError as exc:
                raise ZkSecurityError(_verify_message(security, where, exc)) from None
            except (ssl.SSLEOFError, ConnectionResetError):
                # A plaintext ZooKeeper reads the ClientHello as a request of absurd length and hangs up.
                raise ZkSecurityError(f"{where} closed the connection during the TLS handshake: it does not speak "
                                      f"TLS on this port; name its secureClientPort, or drop "
                                      f"{security.name('tls')}") from None
            except ssl.SSLError as exc:
                raise ZkSecurityError(_handshake_message(security, where, exc)) from None
            except OSError:
                continue
            with tls:
                try:
                    if security.certfile is None:
                        _await_refusal(tls)
                except ssl.SSLError as exc:
                    raise ZkSecurityError(_handshake_message(security, where, exc)) from None
                except OSError:
                    continue
        return


def _await_refusal(tls: ssl.SSLSocket) -> None:
    """Without a client certificate, TLS 1.3 reports ZooKeeper's refusal of the handshake only at the next
    read: ZooKeeper says nothing until the client speaks, so a quiet moment means it was accepted."""
    tls.settimeout(1.0)
    try:
        tls.recv(1)
    except TimeoutError:
        pass


def _verify_message(security: ZkSecurity, where: str, exc: ssl.SSLCertVerificationError) -> str:
    if exc.verify_code == 62:  # X509_V_ERR_HOSTNAME_MISMATCH
        return (f"{where}: its certificate does not name this host ({exc.verify_message}); dial a name it has, or "
                f"set {security.name('check_hostname')}")
    trusted = (f"the CA bundle of {security.name('ca')} ({security.ca})" if security.ca is not None
               else f"the system's CAs (no {security.name('ca')} given)")
    return f"{where}: its certificate does not verify against {trusted}: {exc.verify_message}"


def _handshake_message(security: ZkSecurity, where: str, exc: ssl.SSLError) -> str:
    reason = exc.reason or str(exc)
    if reason in {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"}:
        return f"{where} does not speak TLS on this port ({reason}): name its secureClientPort, or drop " \
               f"{security.name('tls')}"
    if security.certfile is None:
        return (f"{where} refused the TLS handshake ({reason}): it requires a client certificate; give "
                f"{security.name('certfile')} and {security.name('keyfile')}")
    return (f"{where} refused the client certificate of {security.name('certfile')} ({security.certfile}): "
            f"{reason}; it must chain to a CA in ZooKeeper's ssl.trustStore")
