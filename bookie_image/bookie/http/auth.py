"""Who may call the admin REST API, and the audit log of every call that needs a credential.

Apache BookKeeper's admin server has no authentication at all; here nothing that changes state or discloses
ledger data, topic names or the bookie's configuration is reachable without a credential
(docs/security.md, "The admin API"). ``ROUTE_SCOPES`` is the one rule: each path and method needs one scope,

- ``OPEN``: ``GET``/``HEAD`` of health, state, space and GC status (probes and monitoring);
- ``METRICS``: ``GET``/``HEAD`` of ``/metrics`` (its ``topic`` and ``ledger`` labels name topics and ledgers), on
  this port and on ``prometheusStatsHttpPort``; open when no ``httpServerMetricsTokenFile`` is set, as
  BookKeeper's is (the NetworkPolicy then decides who reaches it);
- ``READ``: what discloses ledger ids, topic names, entry data or the configuration without changing anything:
  the explain endpoint, the entry-log files (the storage audit), the ledger list and entries, the
  under-replicated ledgers, ``config/server_config``, the disk listings, and ``list_bookie_info`` (it opens a
  client to every other bookie per call);
- ``ADMIN``: every other method (ledger delete, read-only, GC triggers, configuration changes, autorecovery,
  decommission), the sanity check (it writes an entry), the raw ledger metadata (it holds the ledgers'
  passwords), and any path or method not in the table (added later, or spelled otherwise).

A credential is a bearer token listed in ``httpServerAuthTokenFile`` (``ADMIN``, which includes the others),
``httpServerReadTokenFile`` (``READ`` and ``METRICS``) or ``httpServerMetricsTokenFile`` (``METRICS`` only: what
Prometheus presents), either as the token itself or as ``sha256:<hex>`` of it, so a bookie
need not hold the tokens it accepts (compared in constant time; each file is re-read when it changes, so a
rotated Kubernetes Secret applies without a restart), or a client certificate verified by the HTTPS server whose
role (OU, as BookKeeper's ``BookieAuthZFactory`` reads it) is in ``httpServerAllowedRoles`` (``ADMIN``). Without
one, the bookie refuses such calls, unless ``httpServerAuthDisabled``.

Refusals are 401 (no or bad credential) or 403 (a credential that may not do this) with a JSON reason. Every
allowed call that needs a credential writes one line to the ``bookie.audit`` logger; refusals too, at most one
per client host and reason per ``REFUSAL_LOG_INTERVAL_S`` with the count of the others, so a client retrying in
a loop cannot flood the log.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from bookie.config import BookieConfig
from bookie.http.common import Handler
from bookie.tokens import TokenFile

log = logging.getLogger(__name__)
audit_log = logging.getLogger("bookie.audit")


class Scope(enum.IntEnum):
    """What a call needs; a credential of a higher scope may do everything of the lower ones."""

    OPEN = 0
    METRICS = 1
    READ = 2
    ADMIN = 3


_OPEN_GET = {"GET": Scope.OPEN}
_READ_GET = {"GET": Scope.READ}
_AUTORECOVERY = "/api/v1/autorecovery"
_ENTRY_LOG_FILES = "/api/v1/bookie/entry_log_files"
# The one table of the admin API's rule (the bookie's, the inspector's and ``bookie autorecovery``'s): path ->
# the scope of each method. HEAD is answered as GET (aiohttp), so it needs what GET needs. Methods and paths
# not listed need ADMIN: a route added later is closed until it is classified here.
ROUTE_SCOPES: Mapping[str, Mapping[str, Scope]] = {
    "/heartbeat": _OPEN_GET,
    "/metrics": {"GET": Scope.METRICS},                   # topic and ledger labels: open unless configured
    "/api/v1/bookie/state": _OPEN_GET,
    "/api/v1/bookie/state/readonly": _OPEN_GET,
    "/api/v1/bookie/is_ready": _OPEN_GET,
    "/api/v1/bookie/info": _OPEN_GET,                     # free and total space
    "/api/v1/bookie/last_log_mark": _OPEN_GET,
    "/api/v1/bookie/cluster_info": _OPEN_GET,             # counts of bookies and under-replicated ledgers
    "/api/v1/bookie/list_bookies": _OPEN_GET,             # the registered bookie ids, as ZooKeeper lists them
    "/api/v1/bookie/gc": _OPEN_GET,
    "/api/v1/bookie/gc_details": _OPEN_GET,
    "/api/v1/bookie/gc/suspend_compaction": _OPEN_GET,
    "/api/v1/bookie/entry_location_compact": _OPEN_GET,
    f"{_AUTORECOVERY}/status": _OPEN_GET,
    f"{_AUTORECOVERY}/who_is_auditor": _OPEN_GET,
    f"{_AUTORECOVERY}/lost_bookie_recovery_delay": _OPEN_GET,
    f"{_AUTORECOVERY}/decommission": _OPEN_GET,
    # Read scope: ledger ids, topic names, entry data, paths and the ZooKeeper URI; nothing changes.
    "/api/v1/bookie/entry_logs": _READ_GET,
    _ENTRY_LOG_FILES: _READ_GET,
    f"{_AUTORECOVERY}/list_under_replicated_ledger": _READ_GET,
    f"{_AUTORECOVERY}/move_replica": _READ_GET,           # a move's ledger, bookies and progress
    "/api/v1/config/server_config": _READ_GET,
    "/api/v1/bookie/list_disk_file": _READ_GET,
    "/api/v1/bookie/list_bookie_info": _READ_GET,         # a client to every other bookie per call
    "/api/v1/ledger/list": _READ_GET,
    "/api/v1/ledger/read": _READ_GET,
}
# /api/v1/bookie/entry_log_files/<dir>/<name>[/header|/ledgers_map]: the entry logs' bytes, for the audit.
_ENTRY_LOG_FILE_PATH = re.compile(re.escape(_ENTRY_LOG_FILES) + r"/[^/]+/[^/]+(/header|/ledgers_map)?")


def required_scope(method: str, path: str) -> Scope:
    """The scope a call needs. ``path`` is the decoded path the router matches, so an escaped spelling gets the
    same answer; a path the table does not name exactly (a trailing slash, a dot segment) needs ADMIN."""
    if method == "HEAD":
        method = "GET"
    if _ENTRY_LOG_FILE_PATH.fullmatch(path):
        return Scope.READ if method == "GET" else Scope.ADMIN
    return ROUTE_SCOPES.get(path, {}).get(method, Scope.ADMIN)


def needs_credential(method: str, path: str) -> bool:
    return required_scope(method, path) is not Scope.OPEN


REALM = 'Bearer realm="bookie-admin"'
REFUSAL_LOG_INTERVAL_S = 10.0

# Short names of the subject attributes, as in an RFC 4514 distinguished name.
_SHORT_NAMES = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "countryName": "C",
                "localityName": "L", "stateOrProvinceName": "ST", "emailAddress": "E"}


def subject_text(peercert: dict[str, Any]) -> str:
    """``CN=ops,OU=0:admin`` from ``ssl.SSLSocket.getpeercert()``'s subject."""
    parts = []
    for rdn in peercert.get("subject", ()):
        for name, value in rdn:
            parts.append(f"{_SHORT_NAMES.get(name, name)}={value}")
    return ",".join(parts)


def certificate_roles(peercert: dict[str, Any]) -> list[str]:
    """The roles of a client certificate, as BookKeeper's ``BookieAuthZFactory`` reads them: the OU is
    ``0:role1,role2;1:cluster`` and key 0 lists the roles. An OU without ``N:`` keys is taken as one role."""
    roles: list[str] = []
    for rdn in peercert.get("subject", ()):
        for name, value in rdn:
            if name != "organizationalUnitName":
                continue
            if ":" not in value:
                roles.append(value.strip())
                continue
            for part in value.split(";"):
                key, _, listed = part.partition(":")
                if key.strip() == "0":
                    roles += [r.strip() for r in listed.split(",") if r.strip()]
    return roles


class Verdict(enum.Enum):
    ALLOWED = 200
    UNAUTHENTICATED = 401
    FORBIDDEN = 403


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    who: str      # token fingerprint, certificate subject, or "anonymous"
    reason: str   # why (for refusals: sent to the caller and logged)


class AdminAuth:
    """The admin API's credential check (one per HTTP server)."""

    def __init__(self, token_file: Path | None = None, allowed_roles: Iterable[str] = (),
                 disabled: bool = False, read_token_file: Path | None = None,
                 metrics_token_file: Path | None = None) -> None:
        self.tokens = TokenFile(token_file) if token_file is not None else None
        self.read_tokens = TokenFile(read_token_file, "httpServerReadTokenFile") if read_token_file else None
        self.metrics_tokens = TokenFile(metrics_token_file, "httpServerMetricsTokenFile") \
            if metrics_token_file else None
        self.allowed_roles = frozenset(allowed_roles)
        self.disabled = disabled
        self.refusals = RefusalLog()

    @classmethod
    def from_config(cls, conf: BookieConfig) -> AdminAuth:
        """httpServerAuthTokenFile, httpServerReadTokenFile, httpServerMetricsTokenFile, httpServerAllowedRoles,
        httpServerAuthDisabled."""
        return cls(conf.http_server_auth_token_file, conf.http_server_allowed_roles, conf.http_server_auth_disabled,
                   conf.http_server_read_token_file, conf.http_server_metrics_token_file)

    def is_open(self, needed: Scope) -> bool:
        """A call of this scope needs no credential here: ``OPEN``, and ``METRICS`` on a bookie that lists no
        metrics tokens."""
        return needed is Scope.OPEN or (needed is Scope.METRICS and self.metrics_tokens is None)

    def _token_files(self) -> list[tuple[Scope, TokenFile]]:
        files = [(Scope.ADMIN, self.tokens), (Scope.READ, self.read_tokens), (Scope.METRICS, self.metrics_tokens)]
        return [(scope, f) for scope, f in files if f is not None]

    async def start(self) -> None:
        """Load the token files; raises TokenFileError (the bookie must not start without its credential)."""
        if self.disabled:
            log.warning("httpServerAuthDisabled=true: the admin API accepts every call without a credential "
                        "(development only)")
        for _, tokens in self._token_files():
            await asyncio.to_thread(tokens.load)

    async def _token_grant(self, bearer: str) -> tuple[Scope, str] | None:
        """The scope and identity of a bearer token, the highest if several files list it."""
        for scope, tokens in self._token_files():
            await asyncio.to_thread(tokens.refresh)
            identity = tokens.identify(bearer)
            if identity is not None:
                return scope, identity
        return None

    async def decide(self, request: web.Request, needed: Scope = Scope.ADMIN) -> Decision:
        peercert = _peer_certificate(request)
        subject = subject_text(peercert) if peercert else None
        if self.disabled:
            return Decision(Verdict.ALLOWED, subject or "anonymous", "httpServerAuthDisabled")
        bearer = _bearer(request)
        grant = await self._token_grant(bearer) if bearer else None
        if grant is not None and grant[0] >= needed:
            return Decision(Verdict.ALLOWED, grant[1], f"bearer token ({grant[0].name.lower()} scope)")
        if peercert:
            roles = certificate_roles(peercert)
            role = roles[0] if roles else None
            who = f"cert:{subject}"
            if role is not None and role in self.allowed_roles:
                return Decision(Verdict.ALLOWED, who, f"certificate role {role}")
            if bearer is None:
                if not self.allowed_roles:
                    return Decision(Verdict.FORBIDDEN, who, "client certificates authorize nothing on this bookie "
                                    "(httpServerAllowedRoles is empty)")
                return Decision(Verdict.FORBIDDEN, who, f"certificate role {role!r} is not one of "
                                f"httpServerAllowedRoles ({', '.join(sorted(self.allowed_roles))})")
        if grant is not None:
            return Decision(Verdict.FORBIDDEN, grant[1], f"this token has the {grant[0].name.lower()} scope; "
                            f"{request.method} {request.path} needs the {needed.name.lower()} scope")
        if bearer is not None:
            reason = "bearer token not accepted" if self._token_files() else \
                "this bookie accepts no bearer token (httpServerAuthTokenFile is not set)"
            return Decision(Verdict.UNAUTHENTICATED, f"cert:{subject}" if subject else "anonymous", reason)
        if not self._token_files() and not self.allowed_roles:
            return Decision(Verdict.FORBIDDEN, "anonymous", "no admin credential is configured on this bookie: set "
                            "httpServerAuthTokenFile or httpServerAllowedRoles (httpServerAuthDisabled=true for "
                            "development)")
        return Decision(Verdict.UNAUTHENTICATED, "anonymous", "a credential is required: an Authorization: Bearer "
                        "header" + (" or a client certificate with an allowed role" if self.allowed_roles else ""))


@dataclass
class RefusalLog:
    """Which refusals reach the audit log: the first per client host and reason per interval, then the count of
    the others with the next one (bounded memory: the oldest keys are forgotten past ``max_keys``)."""

    interval_s: float = REFUSAL_LOG_INTERVAL_S
    max_keys: int = 1024
    _logged_at: dict[tuple[str, str], float] = field(default_factory=dict)
    _unlogged: dict[tuple[str, str], int] = field(default_factory=dict)

    def admit(self, host: str, reason: str) -> int | None:
        """None: do not log this one; else how many were not logged before it."""
        key, now = (host, reason), time.monotonic()
        if now - self._logged_at.get(key, -self.interval_s) < self.interval_s:
            self._unlogged[key] = self._unlogged.get(key, 0) + 1
            return None
        self._logged_at.pop(key, None)
        self._logged_at[key] = now
        while len(self._logged_at) > self.max_keys:
            oldest = next(iter(self._logged_at))
            del self._logged_at[oldest]
            self._unlogged.pop(oldest, None)
        return self._unlogged.pop(key, 0)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _peer_certificate(request: web.Request) -> dict[str, Any] | None:
    """The client certificate, when the TLS layer verified one (CERT_OPTIONAL: absent for probes)."""
    if request.transport is None:
        return None
    ssl_object = request.transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    cert = ssl_object.getpeercert()
    return cert or None


def _peer(request: web.Request) -> str:
    peername = request.transport.get_extra_info("peername") if request.transport is not None else None
    if isinstance(peername, tuple) and len(peername) >= 2:
        return f"{peername[0]}:{peername[1]}"
    return str(request.remote or "unknown")


def audit(request: web.Request, decision: Decision, status: int, unlogged: int = 0) -> None:
    """One line per call that needed a credential: who, from where, what, and how it ended."""
    record = {"outcome": "allowed" if decision.verdict is Verdict.ALLOWED else "refused", "status": status,
              "who": decision.who, "peer": _peer(request), "method": request.method, "path": request.path_qs,
              "reason": decision.reason}
    if unlogged:
        record["unlogged_refusals"] = unlogged  # of the same reason from this host since the last line
    audit_log.info("admin-audit %s", json.dumps(record))


def refusal(decision: Decision) -> web.Response:
    body = {"error": "unauthorized" if decision.verdict is Verdict.UNAUTHENTICATED else "forbidden",
            "reason": decision.reason}
    headers = {"WWW-Authenticate": REALM} if decision.verdict is Verdict.UNAUTHENTICATED else None
    return web.json_response(body, status=decision.verdict.value, headers=headers)


def auth_middleware(auth: AdminAuth) -> Any:
    """The outermost middleware: checks the credential of calls that need one and audits them."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        needed = required_scope(request.method, request.path)
        if auth.is_open(needed):
            return await handler(request)
        decision = await auth.decide(request, needed)
        if decision.verdict is not Verdict.ALLOWED:
            unlogged = auth.refusals.admit(str(request.remote or _peer(request)), decision.reason)
            if unlogged is not None:
                audit(request, decision, decision.verdict.value, unlogged)
            return refusal(decision)
        if needed is Scope.METRICS:
            return await handler(request)  # a scrape every few seconds: refusals are logged, not each scrape
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            audit(request, decision, exc.status)
            raise
        except BaseException:
            audit(request, decision, 500)
            raise
        audit(request, decision, response.status)
        return response

    return check
