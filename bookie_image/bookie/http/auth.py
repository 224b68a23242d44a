"""Who may call the admin REST API, and the audit log of every call that needs a credential.

Apache BookKeeper's admin server has no authentication at all; here nothing that changes state or discloses
ledger data is reachable without a credential (docs/security.md, "The admin API"):

- open: ``GET``/``HEAD`` of health, metrics, state, configuration and GC status (probes and monitoring), but
  not ``/api/v1/bookie/sanity``, which writes an entry;
- credential required: every other method (ledger delete, read-only, GC triggers, configuration changes,
  autorecovery, decommission, and any path added later), plus ``GET /api/v1/ledger/*`` (ledger contents,
  and raw metadata that holds the ledgers' passwords) and ``GET|HEAD /api/v1/bookie/entry_log_files*`` (the
  entry logs' bytes).

A credential is a bearer token listed in ``httpServerAuthTokenFile`` (compared in constant time; the file is
re-read when it changes, so a rotated Kubernetes Secret applies without a restart), or a client certificate
verified by the HTTPS server whose role (OU, as BookKeeper's ``BookieAuthZFactory`` reads it) is in
``httpServerAllowedRoles``. Without either, the bookie refuses such calls, unless ``httpServerAuthDisabled``.

Refusals are 401 (no or bad credential) or 403 (a credential that may not do this) with a JSON reason. Every
call that needs a credential, allowed or refused, writes one line to the ``bookie.audit`` logger.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import hmac
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from bookie.config import BookieConfig
from bookie.http.common import Handler

log = logging.getLogger(__name__)
audit_log = logging.getLogger("bookie.audit")

OPEN_METHODS = frozenset({"GET", "HEAD"})
# Read-only, but they disclose what applications wrote: entry payloads and serialized ledger metadata, and the
# entry logs themselves (read by the storage audit).
DATA_PATH_PREFIXES = ("/api/v1/ledger/", "/api/v1/bookie/entry_log_files")
# GETs that write: BookKeeper's sanity check adds an entry to the journal and the index (then deletes it), so
# an open one lets anyone make the bookie write, and sync its journal, as often as they like.
WRITING_GET_PATHS = frozenset({"/api/v1/bookie/sanity"})
MIN_TOKEN_LENGTH = 16  # shorter tokens are guessable; the operator generates 43 characters
REALM = 'Bearer realm="bookie-admin"'

# Short names of the subject attributes, as in an RFC 4514 distinguished name.
_SHORT_NAMES = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "countryName": "C",
                "localityName": "L", "stateOrProvinceName": "ST", "emailAddress": "E"}


def needs_credential(method: str, path: str) -> bool:
    """Whether a call changes state or discloses ledger data (all but the open reads). ``path`` is the decoded
    path the router matches, so an escaped or otherwise spelled path gets the same answer."""
    return method not in OPEN_METHODS or path.startswith(DATA_PATH_PREFIXES) or path.rstrip("/") in WRITING_GET_PATHS


class TokenFileError(Exception):
    """The token file cannot be used; the message names the file and the problem."""


def parse_tokens(text: str, source: str) -> tuple[str, ...]:
    """One token per line; blank lines and ``#`` comments are skipped (several lines: rotation overlap)."""
    tokens = []
    for number, line in enumerate(text.splitlines(), 1):
        token = line.strip()
        if not token or token.startswith("#"):
            continue
        if len(token) < MIN_TOKEN_LENGTH:
            raise TokenFileError(f"{source}:{number}: a token must have at least {MIN_TOKEN_LENGTH} characters "
                                 f"(this one has {len(token)})")
        tokens.append(token)
    return tuple(tokens)


def token_identity(token: str) -> str:
    """What the audit log says about a token: a fingerprint, never the token."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:12]


class TokenFile:
    """The accepted bearer tokens, from a file re-read whenever it changes (a Secret volume swaps it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._signature: tuple[int, int, int, int] | None = None
        self._tokens: tuple[bytes, ...] = ()
        self._identities: tuple[str, ...] = ()

    def _stat(self) -> tuple[int, int, int, int]:
        st = os.stat(self.path)  # follows the symlinks of a Secret volume to the current file
        return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size

    def load(self) -> None:
        """Read the file now (blocking); raises TokenFileError. Used at start-up: a bookie whose token file is
        missing or invalid does not start."""
        try:
            signature = self._stat()
            text = self.path.read_text()
        except OSError as exc:
            raise TokenFileError(f"httpServerAuthTokenFile {self.path}: cannot read: {exc.strerror}") from None
        tokens = parse_tokens(text, f"httpServerAuthTokenFile {self.path}")
        if not tokens:
            log.warning("httpServerAuthTokenFile %s holds no token: every bearer token is refused", self.path)
        self._tokens = tuple(t.encode() for t in tokens)
        self._identities = tuple(token_identity(t) for t in tokens)
        self._signature = signature

    def refresh(self) -> None:
        """Re-read the file if it changed (blocking: call it off the event loop). A file that cannot be read
        or parsed keeps the tokens in force, and says so."""
        try:
            if self._stat() == self._signature:
                return
            self.load()
        except (OSError, TokenFileError) as exc:
            log.error("admin token file not reloaded, the previous tokens stay in force: %s", exc)
            return
        log.info("httpServerAuthTokenFile %s reloaded (%d token(s))", self.path, len(self._tokens))

    def identify(self, presented: str) -> str | None:
        """The identity of the token presented, or None. Every token is compared, in constant time."""
        candidate = presented.encode()
        found = None
        for token, identity in zip(self._tokens, self._identities, strict=True):
            if hmac.compare_digest(token, candidate):
                found = identity
        return found


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
                 disabled: bool = False) -> None:
        self.tokens = TokenFile(token_file) if token_file is not None else None
        self.allowed_roles = frozenset(allowed_roles)
        self.disabled = disabled

    @classmethod
    def from_config(cls, conf: BookieConfig) -> AdminAuth:
        """httpServerAuthTokenFile, httpServerAllowedRoles, httpServerAuthDisabled."""
        return cls(conf.http_server_auth_token_file, conf.http_server_allowed_roles, conf.http_server_auth_disabled)

    async def start(self) -> None:
        """Load the token file; raises TokenFileError (the bookie must not start without its credential)."""
        if self.disabled:
            log.warning("httpServerAuthDisabled=true: the admin API accepts every call without a credential "
                        "(development only)")
        if self.tokens is not None:
            await asyncio.to_thread(self.tokens.load)

    async def decide(self, request: web.Request) -> Decision:
        peercert = _peer_certificate(request)
        subject = subject_text(peercert) if peercert else None
        if self.disabled:
            return Decision(Verdict.ALLOWED, subject or "anonymous", "httpServerAuthDisabled")
        bearer = _bearer(request)
        if bearer is not None and self.tokens is not None:
            await asyncio.to_thread(self.tokens.refresh)
            identity = self.tokens.identify(bearer)
            if identity is not None:
                return Decision(Verdict.ALLOWED, identity, "bearer token")
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
        if bearer is not None:
            reason = "bearer token not accepted" if self.tokens is not None else \
                "this bookie accepts no bearer token (httpServerAuthTokenFile is not set)"
            return Decision(Verdict.UNAUTHENTICATED, f"cert:{subject}" if subject else "anonymous", reason)
        if self.tokens is None and not self.allowed_roles:
            return Decision(Verdict.FORBIDDEN, "anonymous", "no admin credential is configured on this bookie: set "
                            "httpServerAuthTokenFile or httpServerAllowedRoles (httpServerAuthDisabled=true for "
                            "development)")
        return Decision(Verdict.UNAUTHENTICATED, "anonymous", "a credential is required: an Authorization: Bearer "
                        "header" + (" or a client certificate with an allowed role" if self.allowed_roles else ""))


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


def audit(request: web.Request, decision: Decision, status: int) -> None:
    """One line per call that needed a credential: who, from where, what, and how it ended."""
    record = {"outcome": "allowed" if decision.verdict is Verdict.ALLOWED else "refused", "status": status,
              "who": decision.who, "peer": _peer(request), "method": request.method, "path": request.path_qs,
              "reason": decision.reason}
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
        if not needs_credential(request.method, request.path):
            return await handler(request)
        decision = await auth.decide(request)
        if decision.verdict is not Verdict.ALLOWED:
            audit(request, decision, decision.verdict.value)
            return refusal(decision)
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
