"""The admin API's credentials: the Secret whose token the bookies accept and the operator presents, and the
storage audit's own token of the read scope.

Without ``spec.adminApi.tokenSecretName`` the operator creates ``<cluster>-admin-token`` once, with a random
token (created, never applied: a token must not change under running bookies); with it, the named Secret must
exist. The token is read again every ``RECHECK_S``, so a rotated Secret reaches the operator as the kubelet
brings it to the bookies. ``<cluster>-audit-token`` is created once the same way: the bookies accept it for
reads only (``httpServerReadTokenFile``) and the audit's pods get it instead of the admin token, so a leaked
audit token deletes nothing.
"""

from __future__ import annotations

import base64
import binascii
import secrets

from bookie_operator import builders
from bookie_operator.kube import KubeError
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.ports import Obj

RECHECK_S = 60.0
MIN_TOKEN_LENGTH = 16  # as the bookie requires


class AdminTokenProblem(Exception):
    """The Secret cannot serve; the message says which and what to do."""


async def ensure_admin_token(t: Tick) -> bool:
    """``t.admin_token`` set from the cluster's Secret (created if it is the operator's); False (a Degraded
    condition, nothing applied) when a named Secret is missing or holds no usable token."""
    name = builders.admin_token_secret_name(t.name, t.spec)
    key = (t.namespace, name)
    cached = t.op.admin_tokens.get(key)
    if cached is not None and t.op.monotonic() - cached[1] < RECHECK_S:
        t.admin_token = cached[0]
        return True
    try:
        token = await _read_or_create(t, name)
    except (AdminTokenProblem, KubeError) as exc:
        message = f"admin API token Secret {name}: {exc}"
        if t.was("Degraded") != "True" or t.previous_message("Degraded") != message:
            t.event("Warning", "AdminTokenUnavailable", message)
        t.condition("Degraded", True, "AdminTokenUnavailable", message)
        t.condition("Ready", False, "AdminTokenUnavailable", message)
        t.wait(message)
        return False
    try:
        await _ensure_audit_token(t)
    except KubeError as exc:
        t.problems.append(f"audit token Secret {builders.audit_token_secret_name(t.name)}: {exc}")
    t.op.admin_tokens[key] = (token, t.op.monotonic())
    t.admin_token = token
    return True


async def _ensure_audit_token(t: Tick) -> None:
    """Create ``<cluster>-audit-token`` once, with a random token of its own."""
    name = builders.audit_token_secret_name(t.name)
    if await t.op.kube.get("Secret", t.namespace, name) is not None:
        return
    if await t.op.kube.create(builders.audit_token_secret(t.owner, secrets.token_urlsafe(32))) is not None:
        t.event("Normal", "AuditTokenCreated", f"Secret/{name} created with a random read-scope token for the "
                "storage audit")


async def _read_or_create(t: Tick, name: str) -> str:
    secret = await t.op.kube.get("Secret", t.namespace, name)
    if secret is None and not t.spec.admin_api.token_secret_name:
        created = await t.op.kube.create(builders.admin_token_secret(t.owner, secrets.token_urlsafe(32)))
        if created is not None:
            t.event("Normal", "AdminTokenCreated", f"Secret/{name} created with a random admin API token")
        secret = await t.op.kube.get("Secret", t.namespace, name)  # ours, or one created meanwhile
    if secret is None:
        raise AdminTokenProblem(f"not found: create it with the bearer token under the key "
                                f"{builders.ADMIN_TOKEN_KEY}")
    return first_token(secret)


def first_token(secret: Obj) -> str:
    """The first token of the Secret's ``token`` key (the bookies accept every line of it)."""
    raw = (secret.get("data") or {}).get(builders.ADMIN_TOKEN_KEY)
    if raw is None:
        raise AdminTokenProblem(f"has no key {builders.ADMIN_TOKEN_KEY}")
    try:
        text = base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise AdminTokenProblem(f"key {builders.ADMIN_TOKEN_KEY} is not base64 of UTF-8 text") from None
    token = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    if len(token) < MIN_TOKEN_LENGTH:
        raise AdminTokenProblem(f"key {builders.ADMIN_TOKEN_KEY} must hold a token of at least {MIN_TOKEN_LENGTH} "
                                "characters (the bookies refuse shorter ones)")
    return token
