"""The admin API's HTTPS: PEM files (``httpServerTlsCertificatePath``, ``httpServerTlsKeyPath``, and
``httpServerTlsTrustStorePath`` for client certificates), reloaded when they change.

Apache BookKeeper's admin server reads JKS stores and always requires a client certificate; here client
certificates are optional (``CERT_OPTIONAL``): the kubelet's probes cannot present one, and a bearer token is
the other credential. A certificate that is presented must chain to the trust store, or the handshake fails.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from pathlib import Path

from bookie.config import BookieConfig

log = logging.getLogger(__name__)

# How often the files are checked when the bookie port's reloading is off (tlsCertFilesRefreshDurationSeconds 0,
# BookKeeper's default): the admin API's certificates are rotated with the bookie port's (the same Secrets).
CERT_REFRESH_S = 30.0


class HttpsConfigError(Exception):
    """A certificate, key or CA bundle that cannot be loaded; the message names the key and the file."""


def _signature(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


class ServerCertificates:
    """The admin server's TLS: ``context`` is the one the listener is given; ``refresh()`` builds a new context
    from rotated files, and each new handshake is switched to the newest (open connections keep theirs).

    A context in use is never loaded into: OpenSSL's ``SSL_CTX`` is not safe to change while handshakes read it
    (a connection started between the certificate and the key being set gets a certificate without its key, or
    worse), so the listener's context only hands each handshake over, from its ``sni_callback`` (which OpenSSL
    calls for every ClientHello, with or without a server name)."""

    def __init__(self, cert: Path, key: Path, trust: Path | None = None) -> None:
        self.cert, self.key, self.trust = cert, key, trust
        self._signatures = self._current()
        self.context = self._build()
        self._newest = self.context
        self.context.sni_callback = self._hand_over

    @classmethod
    def from_config(cls, conf: BookieConfig) -> ServerCertificates | None:
        """None when ``httpServerTlsEnable`` is false (the model guarantees the files are named otherwise)."""
        cert, key = conf.http_server_tls_certificate_path, conf.http_server_tls_key_path
        if not conf.http_server_tls_enable or cert is None or key is None:
            return None
        return cls(cert, key, conf.http_server_tls_trust_store_path)

    def _current(self) -> tuple[tuple[int, int] | None, ...]:
        return _signature(self.cert), _signature(self.key), _signature(self.trust)

    def _build(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as exc:
            raise HttpsConfigError(f"httpServerTlsCertificatePath {self.cert} / httpServerTlsKeyPath {self.key}: "
                                   f"cannot load the certificate and its key: {exc}") from None
        if self.trust is not None:
            try:
                context.load_verify_locations(cafile=str(self.trust))
            except (OSError, ssl.SSLError) as exc:
                raise HttpsConfigError(f"httpServerTlsTrustStorePath {self.trust}: cannot load the CA bundle: "
                                       f"{exc}") from None
            context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def _hand_over(self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None,
                   listener: ssl.SSLContext) -> None:
        newest = self._newest     # one read: refresh() may replace it meanwhile
        if newest is not listener:
            connection.context = newest

    def refresh(self) -> bool:
        """Build a new context if any file changed (blocking: call it off the event loop); True when new
        handshakes get it. Files caught half-written keep the previous context, and the next check retries."""
        current = self._current()
        if current == self._signatures:
            return False
        try:
            newest = self._build()
        except HttpsConfigError as exc:
            log.error("admin API certificate not reloaded, the previous one stays in use: %s", exc)
            return False
        self._newest, self._signatures = newest, current
        log.info("admin API certificate reloaded from %s", self.cert)
        return True


async def keep_certificates_fresh(certificates: ServerCertificates, conf: BookieConfig) -> None:
    """Reload ``certificates`` whenever their files change, every tlsCertFilesRefreshDurationSeconds (or
    CERT_REFRESH_S when that is 0); runs until cancelled."""
    period_s = conf.tls_cert_files_refresh_duration_seconds or CERT_REFRESH_S
    while True:
        await asyncio.sleep(period_s)
        await asyncio.to_thread(certificates.refresh)
