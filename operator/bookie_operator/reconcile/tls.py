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
from bookie_operator.decisions.tls import TlsVerdict, check_tls
from bookie_operator.kube import KubeError
from bookie_operator.reconcile.context import Tick

CONDITION = "CertificatesValid"
RECHECK_S = 300.0


async def check_certificates(t: Tick) -> None:
    tls = t.spec.tls
    if tls is None or not tls.secrets():
        if t.was(CONDITION) is not None:
            t.status.conditions = [c for c in t.status.conditions if c.type != CONDITION]
        return
    hosts = {builders.pod_name(t.name, o): builders.bookie_id(t.name, t.namespace, o, t.spec.cluster_domain)
             .rpartition(":")[0] for o in range(max(t.desired_replicas, t.replicas))}
    key = hashlib.sha256(json.dumps([tls.model_dump(), sorted(hosts), t.spec.implementation]).encode()).hexdigest()
    mono = t.op.monotonic()
    cached = t.op.tls_verdicts.get(t.uid)
    if cached is not None and cached[0] == key and mono - cached[1] < RECHECK_S:
        _report(t, cached[2])
        return
    verdict = await _check(t, hosts)
    if verdict is not None:
        t.op.tls_verdicts[t.uid] = (key, mono, verdict)
        _report(t, verdict)


async def _check(t: Tick, hosts: dict[str, str]) -> TlsVerdict | None:
    assert t.spec.tls is not None
    secrets: dict[str, dict[str, bytes] | None] = {}
    for name in set(t.spec.tls.secrets().values()):
        try:
            secret = await t.op.kube.get("Secret", t.namespace, name)
        except KubeError as exc:
            t.problems.append(f"reading Secret {name}: {exc}")
            return None
        secrets[name] = None if secret is None else {
            k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    return check_tls(t.spec.tls, t.spec.implementation, secrets, hosts, t.now)


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
