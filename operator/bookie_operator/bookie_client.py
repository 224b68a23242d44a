"""Async client of the bookie admin REST API (BookKeeper's paths and JSON; ours and Apache BookKeeper's).

Only what the operator calls. Every call has a timeout; errors are ``BookieApiError`` (with the HTTP status
when there was one) so a reconcile can record "unreachable" instead of crashing. Every call carries the
cluster's admin token (``Authorization: Bearer``): our bookies refuse a mutating call without it, Apache
BookKeeper's ignore it. Over HTTPS the operator also presents its client certificate (spec.tls.adminClient,
``admin_ssl_context``), which our bookies admit by its role (httpServerAllowedRoles) when the token is not
accepted, or not configured at all.
"""

from __future__ import annotations

import json
import os
import ssl
from typing import Any

import aiohttp

from bookie_operator.decisions import GcInfo
from bookie_operator.memory_files import memory_file, path_of


class BookieApiError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BookieAdmin:
    """One bookie's admin API at ``http://host:port``, or ``https://`` with an SSL context."""

    def __init__(self, session: aiohttp.ClientSession, host: str, port: int = 8080, timeout: float = 5.0, *,
                 token: str | None = None, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None) -> None:
        self.session = session
        self.base = f"{'https' if ssl_context else 'http'}://{host}:{port}"
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        # HTTPS: the certificate must chain to the context's CA and name server_hostname (not the IP dialled).
        self.tls: dict[str, Any] = {"ssl": ssl_context, "server_hostname": server_hostname} if ssl_context else {}

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str]:
        try:
            async with self.session.request(method, self.base + path, json=body, timeout=self.timeout,
                                            headers=self.headers, **self.tls) as resp:
                text = await resp.text()
                return resp.status, text
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise BookieApiError(f"{method} {self.base}{path}: {exc or type(exc).__name__}") from exc

    async def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        status, text = await self._call(method, path, body)
        if status >= 300:
            raise BookieApiError(f"{method} {self.base}{path}: HTTP {status}: {text.strip()[:200]}", status)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise BookieApiError(f"{method} {self.base}{path}: not JSON: {text[:200]!r}") from exc

    async def is_ready(self) -> bool:
        status, _ = await self._call("GET", "/api/v1/bookie/is_ready")
        return status == 200

    async def state(self) -> dict[str, Any]:
        data = await self._json("GET", "/api/v1/bookie/state")
        return dict(data)

    async def info(self) -> tuple[int, int]:
        """(freeSpace, totalSpace) in bytes."""
        data = await self._json("GET", "/api/v1/bookie/info")
        return int(data["freeSpace"]), int(data["totalSpace"])

    async def set_read_only(self, read_only: bool) -> bool:
        data = await self._json("PUT", "/api/v1/bookie/state/readonly", {"readOnly": read_only})
        return bool(data.get("readOnly")) if isinstance(data, dict) else read_only

    async def trigger_gc(self, force_major: bool = True, force_minor: bool = True) -> None:
        await self._json("PUT", "/api/v1/bookie/gc", {"forceMajor": force_major, "forceMinor": force_minor})

    async def gc_info(self) -> GcInfo:
        running = await self._json("GET", "/api/v1/bookie/gc")
        details = await self._json("GET", "/api/v1/bookie/gc_details")
        rows = details if isinstance(details, list) else [details]

        def total(key: str) -> int:
            return sum(int(r.get(key, 0) or 0) for r in rows if isinstance(r, dict))

        def latest(key: str) -> int:
            return max((int(r.get(key, 0) or 0) for r in rows if isinstance(r, dict)), default=0)

        compacting = any(bool(r.get(k)) for r in rows if isinstance(r, dict)
                         for k in ("forceCompacting", "majorCompacting", "minorCompacting"))
        in_force = str(running.get("is_in_force_gc", "false")).lower() == "true" if isinstance(running, dict) \
            else False
        return GcInfo(in_force_gc=in_force, compacting=compacting,
                      major_count=total("majorCompactionCounter"), minor_count=total("minorCompactionCounter"),
                      last_major_ms=latest("lastMajorCompactionTime"), last_minor_ms=latest("lastMinorCompactionTime"))

    async def suspend_compaction(self, suspend: bool) -> None:
        if suspend:
            path, body = "/api/v1/bookie/gc/suspend_compaction", {"suspendMajor": True, "suspendMinor": True}
        else:
            path, body = "/api/v1/bookie/gc/resume_compaction", {"resumeMajor": True, "resumeMinor": True}
        status, text = await self._call("PUT", path, body)
        if status >= 300:  # a refusal (401: no credential) must not pass for done
            raise BookieApiError(f"PUT {self.base}{path}: HTTP {status}: {text.strip()[:200]}", status)

    async def recover_bookie(self, bookie_ids: list[str]) -> None:
        """Ask this bookie's autorecovery to re-replicate the ledgers of ``bookie_ids``."""
        status, text = await self._call("PUT", "/api/v1/autorecovery/bookie",
                                        {"bookie_src": bookie_ids, "delete_cookie": False})
        if status >= 300:
            raise BookieApiError(f"recovery request refused: HTTP {status}: {text.strip()[:200]}", status)


def admin_ssl_context(ca_pem: bytes, client_certificate: bytes | None = None,
                      client_key: bytes | None = None) -> ssl.SSLContext:
    """A client context trusting ``ca_pem`` and, with both, presenting ``client_certificate`` (PEM chain) and
    ``client_key`` (PEM). Python's ssl loads certificates from files only: they go through anonymous memory
    files (memfd), so the operator's key is never written to a disk. Raises ``ssl.SSLError`` for PEM that does
    not load (the CertificatesValid verdict names the Secret)."""
    context = ssl.create_default_context(cadata=ca_pem.decode("ascii"))
    if client_certificate and client_key:
        cert_fd = memory_file("admin-client.crt", client_certificate)
        try:
            key_fd = memory_file("admin-client.key", client_key)
            try:
                context.load_cert_chain(path_of(cert_fd), path_of(key_fd))
            finally:
                os.close(key_fd)
        finally:
            os.close(cert_fd)
    return context


FETCH_TIMEOUT_S = 10.0


async def fetch_json(session: aiohttp.ClientSession, url: str) -> Any:
    """GET a JSON document (the audit report store's run summaries); ``BookieApiError`` when it cannot."""
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)) as resp:
            text = await resp.text()
            if resp.status != 200:
                raise BookieApiError(f"GET {url}: HTTP {resp.status}: {text.strip()[:200]}", resp.status)
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise BookieApiError(f"GET {url}: {exc or type(exc).__name__}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BookieApiError(f"GET {url}: not JSON: {text[:200]!r}") from exc
