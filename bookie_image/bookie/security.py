"""Who may use the bookie port: TLS by START_TLS and certificate-role authorization, as Apache BookKeeper does.

``BookieSecurity.from_config`` reads BookKeeper's keys (``tlsProviderFactoryClass``, ``tlsCertificatePath``,
``bookieAuthProviderFactoryClass`` = ``BookieAuthZFactory``, ``authorizedRoles``, ...). The listener asks it:

* ``open_at_connect``: is a new connection served before TLS? Yes unless authorization (BookKeeper's
  ``AuthHandler`` holds every request but AUTH and START_TLS until the auth plugin completes) or our
  ``onlySecureClientsAllowed`` is configured;
* ``on_protocol_upgrade(peercert)``: once TLS is up, is this client served? With ``BookieAuthZFactory``, only
  if the first role in its certificate's OU is in ``authorizedRoles`` (``BookieAuthZFactory.onProtocolUpgrade``).

Refusals are logged with the peer, at most once per connection and, across connections, at most once per
interval per kind and client host with the count of the others (a client retrying in a loop must not flood
the log, nor hide another client's first refusal).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from bookie import tls
from bookie.config import BookieConfig
from bookie.protocol.codes import AUTH_DISABLED_PLUGIN

log = logging.getLogger(__name__)

BOOKIE_AUTHZ_PLUGIN = "BookieAuthZFactory"  # BookieAuthZFactory.getPluginName()
# BookieConfig fields read once at start (the listener's context and rule): not changeable over REST.
SECURITY_FIELDS = frozenset(name for name in BookieConfig.model_fields
                            if name.startswith("tls_") or name in (
                                "bookie_auth_provider_factory_class", "authorized_roles",
                                "only_secure_clients_allowed"))
# The longest a TLS handshake may take after START_TLS (Netty's SslHandler default, as BookKeeper leaves it).
HANDSHAKE_TIMEOUT_S = 10.0


@dataclass
class Refusals:
    """Counts refusals by kind; logs the first of a kind from a host per interval with the peer, then how
    many more there were."""

    interval_s: float = 10.0
    max_hosts: int = 1024  # hosts remembered; beyond, the oldest are forgotten (bounded memory under a scan)
    counts: dict[str, int] = field(default_factory=dict)
    _logged_at: dict[tuple[str, str], float] = field(default_factory=dict)
    _unlogged: dict[tuple[str, str], int] = field(default_factory=dict)

    def refuse(self, kind: str, peer: str, host: str, detail: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        key, now = (kind, host), time.monotonic()
        if now - self._logged_at.get(key, -self.interval_s) < self.interval_s:
            self._unlogged[key] = self._unlogged.get(key, 0) + 1
            return
        more = self._unlogged.pop(key, 0)
        self._logged_at.pop(key, None)
        self._logged_at[key] = now
        while len(self._logged_at) > self.max_hosts:
            oldest = next(iter(self._logged_at))
            del self._logged_at[oldest]
            self._unlogged.pop(oldest, None)
        suffix = f" ({more} more from {host} since the last report)" if more else ""
        log.warning("refused %s from %s: %s%s", kind, peer, detail, suffix)


class BookieSecurity:
    """The bookie port's TLS context (reloaded when its files change) and authorization rule."""

    def __init__(self, conf: BookieConfig, context: tls.ReloadingContext | None) -> None:
        self.context = context
        self.authorized_roles: tuple[str, ...] | None = (
            tuple(conf.authorized_role_list) if conf.bookie_auth_provider_factory_class else None)
        self.only_secure = conf.only_secure_clients_allowed
        self.refresh_s = conf.tls_cert_files_refresh_duration_seconds
        self.refusals = Refusals()

    @classmethod
    def from_config(cls, conf: BookieConfig) -> BookieSecurity:
        """Reads the certificate files: call it in a thread from the event loop. Raises ``TLSConfigError``."""
        if conf.tls_enabled:
            if conf.tls_trust_store_password_path:
                log.info("tlsTrustStorePasswordPath is not used: a PEM trust store has no password")
            if (conf.tls_client_authentication and not conf.only_secure_clients_allowed
                    and not conf.bookie_auth_provider_factory_class):
                log.warning("tlsClientAuthentication=true verifies TLS clients only: plaintext clients are still "
                            "served, as in BookKeeper (set onlySecureClientsAllowed=true to refuse them)")
        elif conf.tls_certificate_path or conf.tls_key_store:
            log.warning("tlsCertificatePath/tlsKeyStore are set but tlsProviderFactoryClass is not: TLS is off "
                        "(set tlsProviderFactoryClass=%s to turn it on)", tls.TLS_CONTEXT_FACTORY)
        return cls(conf, tls.ReloadingContext(server_files(conf)) if conf.tls_enabled else None)

    @property
    def plugin_name(self) -> str:
        return BOOKIE_AUTHZ_PLUGIN if self.authorized_roles is not None else AUTH_DISABLED_PLUGIN

    @property
    def open_at_connect(self) -> bool:
        return self.authorized_roles is None and not self.only_secure

    def server_context(self) -> ssl.SSLContext | None:
        return self.context.context if self.context is not None else None

    def on_protocol_upgrade(self, peercert: dict[str, Any] | None) -> str | None:
        """After the TLS handshake: None when the connection is served from now on, else why it is not."""
        if self.authorized_roles is None:
            return None
        if not peercert:
            return "no client certificate"
        roles = tls.peer_roles(peercert)
        if not roles:
            return f"no role in the OU of its certificate ({tls.describe_subject(peercert)})"
        if roles[0] not in self.authorized_roles:
            return (f"certificate role {roles[0]!r} is not in authorizedRoles {list(self.authorized_roles)} "
                    f"({tls.describe_subject(peercert)})")
        return None

    async def refresh_forever(self) -> None:
        """tlsCertFilesRefreshDurationSeconds: reload the context when its files change (off when 0)."""
        if self.context is None or self.refresh_s <= 0:
            return
        context = self.context
        reported: tuple[float, ...] | None = None
        while True:
            await asyncio.sleep(self.refresh_s)
            try:
                if await asyncio.to_thread(context.refresh):
                    log.info("TLS certificate files changed: new connections use %s",
                             context.files.certificate)
            except tls.TLSConfigError as exc:
                if context.failed_mtimes != reported:  # once per version of the files, not every period
                    reported = context.failed_mtimes
                    log.error("TLS certificate files changed but do not load, keeping the previous ones: %s", exc)
            except Exception:  # the check must outlive a defect: the next period tries again
                log.exception("checking the TLS certificate files failed")


def server_files(conf: BookieConfig) -> tls.ServerFiles:
    if not (conf.tls_certificate_path and conf.tls_key_store):
        raise tls.TLSConfigError("TLS needs tlsCertificatePath and tlsKeyStore")
    return tls.ServerFiles(
        certificate=conf.tls_certificate_path, key=conf.tls_key_store,
        key_password_path=conf.tls_key_store_password_path, trust_store=conf.tls_trust_store,
        client_authentication=conf.tls_client_authentication,
        suites=tls.parse_suites(conf.tls_enabled_protocols, conf.tls_enabled_cipher_suites))


def client_tls(conf: BookieConfig) -> tls.ClientTLS | None:
    """The TLS settings of the bookie's own clients (autorecovery, disk info of other bookies), from its own
    file as BookKeeper's ``new ClientConfiguration(serverConf)`` takes them: the bookie's certificate is its
    client certificate, its trust store what it trusts."""
    if not conf.tls_enabled:
        return None
    if not conf.tls_trust_store:
        log.warning("TLS is on but tlsTrustStore is not set: this bookie's own clients speak plaintext")
        return None
    return tls.ClientTLS(
        trust_store=conf.tls_trust_store, client_authentication=conf.tls_client_authentication,
        certificate_path=conf.tls_certificate_path, key_store=conf.tls_key_store,
        key_store_password_path=conf.tls_key_store_password_path,
        hostname_verification=conf.tls_hostname_verification_enabled,
        enabled_protocols=conf.tls_enabled_protocols or None,
        enabled_cipher_suites=conf.tls_enabled_cipher_suites or None)
