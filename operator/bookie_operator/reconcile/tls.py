"""The certificates of ``spec.tls``: read their Secrets, ask ``decisions.tls`` whether they serve these bookies,
and say so in the ``CertificatesValid`` condition (with a Warning Event when the verdict changes) and in
``Degraded``. Nothing is blocked: a bookie whose id the certificate does not name still runs; clients that
verify hostnames refuse it, which is what the condition warns about.

The Secrets are read again when the spec or the bookies change, or every ``RECHECK_S`` (cert-manager renews a
certificate rarely, and an idle cluster should not cost a Secret read per tick).
"""

from __future__ import annotations

import base64
import hashlib
import json

from bookie_operator import builders
from bookie_operator.decisions.tls import CA, CERT, KEY, TlsVerdict, check_tls
from bookie_operator.kube import KubeError
from bookie_operator.models import TlsSpec
from bookie_operator.reconcile.context import Tick

CONDITION = "CertificatesValid"
RECHECK_S = 300.0


async def check_certificates(t: Tick) -> None:
    """Before the bookies are observed: ``t.admin_ca`` is what the operator trusts on their HTTPS admin API,
    ``t.admin_client`` the certificate and key it presents there (spec.tls.adminClient)."""
    tls = t.spec.tls
    if tls is None or not tls.checked_secrets():
        if t.was(CONDITION) is not None:
            t.status.conditions = [c for c in t.status.conditions if c.type != CONDITION]
        return
    ordinals = range(max(t.desired_replicas, t.previous.replicas))
    hosts = {builders.pod_name(t.name, o): bookie_host(t, o) for o in ordinals}
    key = hashlib.sha256(json.dumps([tls.model_dump(), sorted(hosts), t.spec.implementation]).encode()).hexdigest()
    mono = t.op.monotonic()
    cached = t.op.tls_verdicts.get(t.uid)
    if cached is None or cached[0] != key or mono - cached[1] >= RECHECK_S:
        checked = await _check(t, hosts)
        if checked is None:
            return
        cached = t.op.tls_verdicts[t.uid] = (key, mono, *checked)
    _, _, verdict, admin_ca, admin_client = cached
    t.admin_ca, t.admin_client = admin_ca, admin_client
    _report(t, verdict)


def bookie_host(t: Tick, ordinal: int) -> str:
    """The host of an ordinal's bookie id: what its certificate must name."""
    return t.bookie_id(ordinal).rpartition(":")[0]


async def _check(t: Tick, hosts: dict[str, str]
                 ) -> tuple[TlsVerdict, bytes | None, tuple[bytes, bytes] | None] | None:
    assert t.spec.tls is not None
    secrets: dict[str, dict[str, bytes] | None] = {}
    for name in set(t.spec.tls.checked_secrets().values()):
        try:
            secret = await t.op.kube.get("Secret", t.namespace, name)
        except KubeError as exc:
            t.problems.append(f"reading Secret {name}: {exc}")
            return None
        secrets[name] = None if secret is None else {
            k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    admin = t.spec.tls.admin
    admin_ca = (secrets.get(admin.secret_name) or {}).get(CA) if admin is not None else None
    return check_tls(t.spec.tls, t.spec.implementation, secrets, hosts, t.now), admin_ca or None, \
        admin_client(t.spec.tls, secrets)


def admin_client(tls: TlsSpec, secrets: dict[str, dict[str, bytes] | None]) -> tuple[bytes, bytes] | None:
    """The certificate chain and key of spec.tls.adminClient, if its Secret has both (else the verdict says
    what is wrong, and the operator goes on with its token alone)."""
    if tls.admin_client is None:
        return None
    data = secrets.get(tls.admin_client.secret_name) or {}
    cert, key = data.get(CERT), data.get(KEY)
    return (cert, key) if cert and key else None


def _report(t: Tick, verdict: TlsVerdict) -> None:
    message = verdict.message()
    if verdict.valid:
        t.condition(CONDITION, True, "Valid", message)
        return
    reason = verdict.problems[0].reason.value
    if t.was(CONDITION) != "False" or t.previous_message(CONDITION) != message:
        t.event("Warning", reason, message)
    t.condition(CONDITION, False, reason, message)
    t.problems.append(message)
