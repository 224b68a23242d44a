"""The admin API's credentials: the Secret whose token the bookies accept and the operator presents, and the
storage audit's own token of the read scope.

Without ``spec.adminApi.tokenSecretName`` the operator creates ``<cluster>-admin-token`` once, with a random
token (created, never applied: a token must not change under running bookies), and uses a Secret of that name
only if it is the cluster's own (someone else's, made first, would hold a token its maker knows); with it, the
named Secret must exist. The token is read again every ``RECHECK_S``, so a rotated Secret reaches the operator
as the kubelet brings it to the bookies. ``<cluster>-audit-token`` is created once the same way: the bookies
accept it for reads only (``httpServerReadTokenFile``) and the audit's pods get it instead of the admin token, so
a leaked audit token deletes nothing.

With ``spec.adminApi.metricsTokenSecretName`` the bookies and inspectors also ask Prometheus for one of that
Secret's tokens on /metrics; a missing Secret stops the reconcile as a missing admin token Secret does, since the
bookies would not start without the hashes their configuration names.

The bookie pods mount no token: the operator derives ``<cluster>-token-hashes`` (``sha256:<hex>`` of each token
line, the form the bookies' token files accept) and applies it every time it reads the tokens, so a compromised
bookie holds no token it could present to another bookie, and a rotated token still reaches every bookie.
"""

from __future__ import annotations

import base64
import binascii
import secrets

from bookie.tokens import HASHED, TokenFileError, hashed_line, parse_tokens

from bookie_operator import builders, models
from bookie_operator.decisions import escalations
from bookie_operator.kube import KubeError
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.ports import Obj

RECHECK_S = 60.0


class AdminTokenProblem(Exception):
    """The Secret cannot serve; the message says which and what to do."""


class NotTheClusters(AdminTokenProblem):
    """A Secret under one of the names the operator makes for the cluster that someone else made."""

    def __init__(self, secret: str, message: str) -> None:
        super().__init__(message)
        self.secret = secret


async def ensure_admin_token(t: Tick) -> bool:
    """``t.admin_token`` set from the cluster's Secret (created if it is the operator's), and the bookies' Secret of
    token hashes applied; False (a Degraded condition, nothing applied) when a named Secret is missing or holds no
    usable token."""
    name = builders.admin_token_secret_name(t.name, t.spec)
    key = (t.namespace, name)
    cached = t.op.admin_tokens.get(key)
    if cached is not None and t.op.monotonic() - cached[1] < RECHECK_S:
        t.admin_token = cached[0]
        return True
    try:
        text = secret_text(await _read_or_create(t, name))
        token = first_token_of(text)
        admin_hashes = token_hashes(text)
    except (AdminTokenProblem, KubeError) as exc:
        return _unavailable(t, "AdminTokenUnavailable", f"admin API token Secret {name}: {exc}")
    t.admin_token = token
    try:
        metrics_hashes = await _metrics_hashes(t)
    except (AdminTokenProblem, KubeError) as exc:
        # The bookies would not start without the file their configuration names: nothing is applied.
        return _unavailable(t, "MetricsTokenUnavailable",
                            f"metrics token Secret {t.spec.admin_api.metrics_token_secret_name}: {exc}")
    hashes = builders.token_hashes_secret_name(t.name)
    try:
        read_hashes = token_hashes(secret_text(await _ensure_audit_token(t)))
        await _ensure_token_hashes(t, builders.token_hashes_secret(t.owner, admin_hashes, read_hashes,
                                                                   metrics_hashes))
    except NotTheClusters as exc:
        if exc.secret != hashes:
            t.problems.append(str(exc))
            return True
        # The bookies would mount hashes someone else chose, and accept whatever tokens are behind them.
        return _unavailable(t, "SecretNotOwned", str(exc))
    except (AdminTokenProblem, KubeError) as exc:
        # Not cached: the next tick tries again. Bookies already running keep the hashes they have.
        t.problems.append(f"token hashes Secret {hashes}: {exc}")
        return True
    t.op.admin_tokens[key] = (token, t.op.monotonic())
    return True


def _unavailable(t: Tick, reason: str, message: str) -> bool:
    """A token Secret the cluster needs cannot serve: Degraded and not Ready with ``reason``, a Warning Event when
    the message is new, and the reconcile waits (returns False: nothing is applied)."""
    if t.was("Degraded") != "True" or t.previous_message("Degraded") != message:
        t.event("Warning", reason, message)
    t.condition("Degraded", True, reason, message)
    t.condition("Ready", False, reason, message)
    t.wait(message)
    return False


async def _metrics_hashes(t: Tick) -> str | None:
    """The hashes of spec.adminApi.metricsTokenSecretName's tokens (None when the spec names no Secret)."""
    name = t.spec.admin_api.metrics_token_secret_name
    if name is None:
        return None
    secret = await t.op.kube.get("Secret", t.namespace, name)
    if secret is None:
        raise AdminTokenProblem(f"not found: create it with Prometheus's bearer token under the key "
                                f"{builders.ADMIN_TOKEN_KEY}")
    return token_hashes(secret_text(secret))


async def _ensure_token_hashes(t: Tick, desired: Obj) -> None:
    """Create the Secret of hashes when it is missing; write it when it differs (a rotated token), and only if it
    is the cluster's own and still the one read: its resourceVersion is the apply's precondition, so a Secret
    deleted and made again by someone else between the read and the write is not written over (409, and the next
    tick judges it). Never on every re-read."""
    name = desired["metadata"]["name"]
    live = await t.op.kube.get("Secret", t.namespace, name)
    if live is None:
        await t.op.kube.create(desired)  # None: made meanwhile by someone; the next tick judges it
        return
    _made_for_the_cluster(t, live, f"token hashes Secret {name}: ")
    if live.get("data") != desired["data"]:
        version = (live.get("metadata") or {}).get("resourceVersion")
        await t.op.kube.apply({**desired, "metadata": {**desired["metadata"], "resourceVersion": version}}
                              if version else desired)


async def _ensure_audit_token(t: Tick) -> Obj:
    """``<cluster>-audit-token``, created once with a random token of its own."""
    name = builders.audit_token_secret_name(t.name)
    secret = await t.op.kube.get("Secret", t.namespace, name)
    if secret is not None:
        return _made_for_the_cluster(t, secret, f"audit token Secret {name}: ")
    if await t.op.kube.create(builders.audit_token_secret(t.owner, secrets.token_urlsafe(32))) is not None:
        t.event("Normal", "AuditTokenCreated", f"Secret/{name} created with a random read-scope token for the "
                "storage audit")
    secret = await t.op.kube.get("Secret", t.namespace, name)  # ours, or one created meanwhile
    if secret is None:
        raise AdminTokenProblem(f"{name} not found right after its creation")
    return _made_for_the_cluster(t, secret, f"audit token Secret {name}: ")


async def _read_or_create(t: Tick, name: str) -> Obj:
    secret = await t.op.kube.get("Secret", t.namespace, name)
    if secret is None and not t.spec.admin_api.token_secret_name:
        created = await t.op.kube.create(builders.admin_token_secret(t.owner, secrets.token_urlsafe(32)))
        if created is not None:
            t.event("Normal", "AdminTokenCreated", f"Secret/{name} created with a random admin API token")
        secret = await t.op.kube.get("Secret", t.namespace, name)  # ours, or one created meanwhile
    if secret is None:
        raise AdminTokenProblem(f"not found: create it with the bearer token under the key "
                                f"{builders.ADMIN_TOKEN_KEY}")
    # A Secret the spec names was judged before (observe.parse_spec); the operator's own must be the one it made.
    return secret if t.spec.admin_api.token_secret_name else _made_for_the_cluster(t, secret)


def _made_for_the_cluster(t: Tick, secret: Obj, which: str = "") -> Obj:
    """A token Secret the operator makes, as long as it is the cluster's own: one someone else created under its
    name first (before the cluster, or between the operator's read and its create) would give the bookies a
    token its maker knows, and is never used."""
    if not escalations.owns(t.name, t.uid, secret.get("metadata") or {}):
        raise NotTheClusters(secret["metadata"]["name"],
                             f"{which}exists and is not the cluster's own (neither owned by {models.KIND} {t.name} "
                             f"nor labelled {builders.CLUSTER_LABEL}={t.name}): someone else made it; delete it and "
                             "the operator creates its own")
    return secret


def secret_text(secret: Obj) -> str:
    """The text of a token Secret's ``token`` key."""
    raw = (secret.get("data") or {}).get(builders.ADMIN_TOKEN_KEY)
    if raw is None:
        raise AdminTokenProblem(f"has no key {builders.ADMIN_TOKEN_KEY}")
    try:
        return base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise AdminTokenProblem(f"key {builders.ADMIN_TOKEN_KEY} is not base64 of UTF-8 text") from None


def _tokens(text: str) -> tuple[str, ...]:
    """The tokens of a token Secret's text, checked by the bookies' own reader of token files (bookie.tokens): a
    token they would refuse is refused here, named by its line."""
    try:
        return parse_tokens(text, f"key {builders.ADMIN_TOKEN_KEY}")
    except TokenFileError as exc:
        raise AdminTokenProblem(str(exc)) from None


def token_hashes(text: str) -> str:
    """A token file's lines as the bookies may hold them: ``sha256:<hex>`` of each token, a line already hashed
    kept as it is (a consumer known to the bookies by its hash only). A token shorter than the bookies accept is
    refused here: hashed, it would pass their length check."""
    return "".join(hashed_line(token) + "\n" for token in _tokens(text))


def first_token_of(text: str) -> str:
    """The first token of a token file's text, which the operator presents (the bookies accept every line)."""
    tokens = _tokens(text)
    if not tokens:
        raise AdminTokenProblem(f"key {builders.ADMIN_TOKEN_KEY} holds no token")
    if HASHED.fullmatch(tokens[0]):
        raise AdminTokenProblem(f"the first line of key {builders.ADMIN_TOKEN_KEY} is a hash: the operator "
                                "presents the first token, so it must be the token itself")
    return tokens[0]


def first_token(secret: Obj) -> str:
    """The first token of the Secret's ``token`` key (the bookies accept every line of it)."""
    return first_token_of(secret_text(secret))
