"""Async client of the bookie admin REST API (BookKeeper's paths and JSON; ours and Apache BookKeeper's).

Only what the operator calls. Every call has a timeout; errors are ``BookieApiError`` (with the HTTP status
when there was one) so a reconcile can record "unreachable" instead of crashing. Every call carries the
cluster's admin token (``Authorization: Bearer``): our bookies refuse a mutating call without it, Apache
BookKeeper's ignore it. Over HTTPS the operator also presents its client certificate (spec.tls.adminClient,
``admin_ssl_context``), which our bookies admit by its role (httpServerAllowedRoles) when the token is not
accepted, or not configured at all.

A bookie's answers are not trusted: one operator manages every cluster, so one broken or compromised bookie
must not exhaust its memory or fail a reconcile. Every answer is read up to ``MAX_ANSWER_BYTES`` (a larger one
is refused when its Content-Length or its first ``MAX_ANSWER_BYTES + 1`` bytes show it, and the connection is
closed), compressed answers are refused (a small body can inflate without bound), and every value the operator
uses is checked for its type and range. Each of these is a ``BookieApiError`` naming the problem, so the
reconcile records that bookie as unknown, with the reason, and goes on.
"""

from __future__ import annotations

import json
import os
import ssl
from typing import Any

import aiohttp

from bookie_operator.decisions import GcInfo
from bookie_operator.memory_files import memory_file, path_of

# The largest answer read from a bookie's admin API. The operator's calls return a few hundred bytes (state, info,
# GC status; gc_details has one row per ledger directory): 1 MiB leaves room for a bookie with many
# directories and bounds what a hostile one can make the operator hold, per call in flight.
MAX_ANSWER_BYTES = 1 << 20
# The largest readOnlyReason kept (it goes into the BookieCluster's status).
MAX_REASON_CHARS = 256
# Byte counts and counters beyond a signed 64-bit integer are not a bookie's (Java's long).
MAX_COUNT = (1 << 63) - 1
# Times in ms since the epoch up to the end of year 9999: what datetime.fromtimestamp can represent.
MAX_TIME_MS = 253_402_300_799_999


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
        self.headers = {"Accept-Encoding": "identity", **({"Authorization": f"Bearer {token}"} if token else {})}
        # HTTPS: the certificate must chain to the context's CA and name server_hostname (not the IP dialled).
        self.tls: dict[str, Any] = {"ssl": ssl_context, "server_hostname": server_hostname} if ssl_context else {}

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str]:
        where = f"{method} {self.base}{path}"
        try:
            async with self.session.request(method, self.base + path, json=body, timeout=self.timeout,
                                            headers=self.headers, **self.tls) as resp:
                try:
                    data = await read_bounded(resp, where)
                except BookieApiError:
                    resp.close()  # the rest is never read: the connection is not reused
                    raise
                return resp.status, data.decode("utf-8", errors="replace")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise BookieApiError(f"{where}: {exc or type(exc).__name__}") from exc

    async def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        status, text = await self._call(method, path, body)
        if status >= 300:
            raise BookieApiError(f"{method} {self.base}{path}: HTTP {status}: {text.strip()[:200]}", status)
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise BookieApiError(f"{method} {self.base}{path}: not JSON: {text[:200]!r}") from exc

    async def _object(self, path: str) -> dict[str, Any]:
        data = await self._json("GET", path)
        if not isinstance(data, dict):
            raise BookieApiError(f"GET {self.base}{path}: malformed answer: not a JSON object: {str(data)[:200]!r}")
        return data

    async def is_ready(self) -> bool:
        status, _ = await self._call("GET", "/api/v1/bookie/is_ready")
        return status == 200

    async def state(self) -> dict[str, Any]:
        """``readOnly`` (a bool) and ``readOnlyReason`` (a short string or None), checked."""
        path = "/api/v1/bookie/state"
        data = await self._object(path)
        read_only, reason = data.get("readOnly", False), data.get("readOnlyReason")
        if not isinstance(read_only, bool):
            raise BookieApiError(f"GET {self.base}{path}: malformed answer: readOnly is {read_only!r}, not a boolean")
        if reason is not None and not isinstance(reason, str):
            raise BookieApiError(f"GET {self.base}{path}: malformed answer: readOnlyReason is not a string")
        return {**data, "readOnly": read_only, "readOnlyReason": reason[:MAX_REASON_CHARS] if reason else None}

    async def info(self) -> tuple[int, int]:
        """(freeSpace, totalSpace) in bytes: integers, 0 <= free <= total."""
        path = "/api/v1/bookie/info"
        data = await self._object(path)
        free = checked_int(data, "freeSpace", f"GET {self.base}{path}", required=True)
        total = checked_int(data, "totalSpace", f"GET {self.base}{path}", required=True)
        if free > total:
            raise BookieApiError(f"GET {self.base}{path}: malformed answer: freeSpace {free} > totalSpace {total}")
        return free, total

    async def set_read_only(self, read_only: bool) -> bool:
        data = await self._json("PUT", "/api/v1/bookie/state/readonly", {"readOnly": read_only})
        return bool(data.get("readOnly")) if isinstance(data, dict) else read_only

    async def trigger_gc(self, force_major: bool = True, force_minor: bool = True) -> None:
        await self._json("PUT", "/api/v1/bookie/gc", {"forceMajor": force_major, "forceMinor": force_minor})

    async def gc_info(self) -> GcInfo:
        running = await self._json("GET", "/api/v1/bookie/gc")
        path = "/api/v1/bookie/gc_details"
        details = await self._json("GET", path)
        rows = details if isinstance(details, list) else [details]
        where = f"GET {self.base}{path}"

        def total(key: str) -> int:
            return min(sum(checked_int(r, key, where) for r in rows if isinstance(r, dict)), MAX_COUNT)

        def latest(key: str) -> int:
            return max((checked_int(r, key, where, MAX_TIME_MS) for r in rows if isinstance(r, dict)), default=0)

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

    async def move_replica(self, ledger_id: int, source: str, target: str, rate_bytes_per_s: int) -> None:
        """Ask this bookie's autorecovery to move ``ledger_id``'s replica from ``source`` to ``target``."""
        await self._json("PUT", "/api/v1/autorecovery/move_replica",
                         {"ledger_id": ledger_id, "bookie_src": source, "bookie_dest": target,
                          "rate_bytes_per_second": rate_bytes_per_s})

    async def replica_move_state(self, ledger_id: int) -> tuple[str, str | None] | None:
        """(state, error) of this bookie's move of ``ledger_id``: running, moved or failed; None if it knows
        none (restarted, or never asked)."""
        path = f"/api/v1/autorecovery/move_replica?ledger_id={ledger_id}"
        status, text = await self._call("GET", path)
        if status == 404:
            return None
        if status >= 300:
            raise BookieApiError(f"GET {self.base}{path}: HTTP {status}: {text.strip()[:200]}", status)
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise BookieApiError(f"GET {self.base}{path}: not JSON: {text[:200]!r}") from exc
        state = data.get("state") if isinstance(data, dict) else None
        if state not in ("running", "moved", "failed"):
            raise BookieApiError(f"GET {self.base}{path}: malformed answer: state {state!r}")
        error = data.get("error")
        return state, str(error)[:MAX_REASON_CHARS] if error else None


async def read_bounded(resp: aiohttp.ClientResponse, where: str, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The body of ``resp``, at most ``limit`` bytes read; ``BookieApiError`` for a larger or compressed one."""
    encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise BookieApiError(f"{where}: answer refused: compressed ({encoding}), and identity was asked for")
    if resp.content_length is not None and resp.content_length > limit:
        raise BookieApiError(f"{where}: answer refused: {resp.content_length} bytes announced, more than the "
                             f"{limit} read from a bookie")
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await resp.content.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise BookieApiError(f"{where}: answer refused: larger than the {limit} bytes read from a bookie")


def checked_int(row: dict[str, Any], key: str, where: str, maximum: int = MAX_COUNT, *,
                required: bool = False) -> int:
    """``row[key]`` as an integer in [0, maximum] (absent or null: 0 unless ``required``); ``BookieApiError``
    otherwise."""
    value = row.get(key)
    if value is None:
        if required:
            raise BookieApiError(f"{where}: malformed answer: {key} is missing")
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise BookieApiError(f"{where}: malformed answer: {key} is {str(value)[:40]!r}, not an integer in "
                             f"[0, {maximum}]")
    return value


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
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S),
                               headers={"Accept-Encoding": "identity"}) as resp:
            try:
                text = (await read_bounded(resp, f"GET {url}")).decode("utf-8", errors="replace")
            except BookieApiError:
                resp.close()
                raise
            if resp.status != 200:
                raise BookieApiError(f"GET {url}: HTTP {resp.status}: {text.strip()[:200]}", resp.status)
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise BookieApiError(f"GET {url}: {exc or type(exc).__name__}") from exc
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BookieApiError(f"GET {url}: not JSON: {text[:200]!r}") from exc
