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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.security import CREATOR_ALL_ACL


class ZkSecurityError(Exception):
    """A credential file that cannot be used; the message names the key and the file."""


@dataclass(frozen=True)
class ZkSecurity:
    tls: bool = False
    certfile: Path | None = None        # PEM client certificate (x509 identity)
    keyfile: Path | None = None
    ca: Path | None = None              # PEM CA bundle the server certificate must chain to
    check_hostname: bool = True
    digest: str | None = field(default=None, repr=False)   # "user:password"
    acl: bool = False                   # zkEnableSecurity

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


def read_digest(path: Path) -> str:
    """The ``user:password`` of a digest credential file (first non-comment line)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ZkSecurityError(f"zkDigestAuthFile {path}: cannot read: {exc.strerror}") from None
    credential = next((line.strip() for line in lines if line.strip() and not line.startswith("#")), "")
    user, sep, password = credential.partition(":")
    if not sep or not user or not password:
        raise ZkSecurityError(f"zkDigestAuthFile {path}: expected one line user:password")
    return credential
