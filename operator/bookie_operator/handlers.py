"""Kopf handlers: thin. Every event and every timer tick calls the same idempotent ``reconcile``.

The reconcile interval comes from ``$BOOKIE_OPERATOR_INTERVAL`` (seconds, default 30), read at import.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from typing import Any

import aiohttp
import kopf

from bookie_operator import builders, crd, models, storage_version
from bookie_operator.bookie_client import BookieAdmin, admin_ssl_context, fetch_json
from bookie_operator.decisions import escalations
from bookie_operator.kube import Kube, KubeError, in_cluster, kubeconfig_credentials, memory_file
from bookie_operator.reconcile import Operator, reconcile
from bookie_operator.reconcile.ports import AdminTls
from bookie_operator.zk import MetadataService, security_from_env

INTERVAL = float(os.environ.get("BOOKIE_OPERATOR_INTERVAL", "30"))
RETRY_DELAY = max(1.0, min(INTERVAL, 15.0))
MANAGE_CRD = os.environ.get("BOOKIE_OPERATOR_MANAGE_CRD", "true") != "false"
# Set by __main__ when the operator watches listed namespaces only.
EXACT_NAMESPACES = bool(os.environ.get("BOOKIE_OPERATOR_NAMESPACES"))
RESOURCE = (models.GROUP, models.VERSION, models.PLURAL)
log = logging.getLogger("bookie_operator")


@kopf.on.login()
async def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """Kopf's connection, from the credentials the operator's own client uses. Kopf's default login goes through
    the official client library, which writes a kubeconfig's embedded certificate and private key to /tmp and
    removes them only at a clean exit: every killed operator left its key behind."""
    kubeconfig = os.environ.get("BOOKIE_OPERATOR_KUBECONFIG")
    if kubeconfig is None and in_cluster():  # the choice Kube.connect makes: a kubeconfig given wins
        return kopf.login_with_service_account(**kwargs)
    return await kubeconfig_connection(kubeconfig)


async def kubeconfig_connection(kubeconfig: str | None) -> kopf.ConnectionInfo:
    """The kubeconfig's credentials, held in memory by Kopf (on a 401 it logs in again, which reads the
    kubeconfig again: a plugin's token is renewed). A client certificate and key go to Kopf as in-memory files
    (``memory_file``), never as data, which Kopf would write to $TMPDIR for each session it opens."""
    found = await kubeconfig_credentials(kubeconfig)
    scheme, _, token = (found.authorization or "").partition(" ")
    return kopf.ConnectionInfo(
        server=found.server, ca_data=found.ca,
        certificate_path=memory_file("client-certificate", found.certificate) if found.certificate else None,
        private_key_path=memory_file("client-key", found.private_key) if found.private_key else None,
        insecure=not found.verify_tls, scheme=scheme or None, token=token or None)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=models.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=models.GROUP, key="last-handled-configuration")
    settings.persistence.finalizer = f"{models.GROUP}/operator"
    # Watch streams can stall silently without these (nolar/kopf#585).
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 310
    # Our own Events say what happened; Kopf's per-handler log Events would repeat every tick.
    settings.posting.level = logging.ERROR
    # A BookieCluster being deleted keeps Kopf's finalizer until its timer has stopped; a timer caught in the
    # middle of a reconcile is looked at again after this many seconds (Kopf's default, 60, made every deletion
    # that met a running tick take a minute more).
    settings.background.cancellation_polling = RETRY_DELAY
    # Watching listed namespaces, the operator is granted Roles in them only: no cluster-wide list/watch of
    # namespaces or CRDs, which Kopf's scanning would otherwise try (and warn about) at start-up.
    settings.scanning.disabled = EXACT_NAMESPACES
    memo.operator = await connect()
    if MANAGE_CRD:
        await keep_crd_current(memo.operator.kube)
    log.info("bookie operator started (interval %.1fs)", INTERVAL)


async def keep_crd_current(kube: Kube) -> None:
    """Apply the CRD of this operator's own version, so that upgrading the operator (``helm upgrade`` to a new
    image) upgrades its CRD too: Helm installs a chart's crds/ once and never updates them. Without the RBAC
    for it (a cluster whose CRDs are managed elsewhere) the operator says so and goes on. Then objects stored
    in an older version are rewritten in the current one (``storage_version``)."""
    try:
        await kube.apply_crd(crd.crd())
        log.info("CRD %s.%s is the operator's own (version %s)", models.PLURAL, models.GROUP, models.VERSION)
    except KubeError as exc:
        log.warning("cannot apply the BookieCluster CRD (%s); it is left as it is", exc)
        return
    try:
        await storage_version.migrate(kube)
    except KubeError as exc:
        log.warning("cannot move stored BookieClusters to %s (%s): storedVersions left as it is; see "
                    "docs/operator.md, \"CRD versions\", to migrate them by hand", models.VERSION, exc)


async def connect() -> Operator:
    """The operator's real clients: the Kubernetes API, the bookies' admin APIs, their ZooKeeper metadata."""
    kube = await Kube.connect(os.environ.get("BOOKIE_OPERATOR_KUBECONFIG"))
    zk_security = await asyncio.to_thread(security_from_env, dict(os.environ))
    http = aiohttp.ClientSession()
    contexts: dict[tuple[bytes, bytes | None, bytes | None], ssl.SSLContext] = {}

    def admin_for(host: str, port: int, token: str | None, tls: AdminTls | None = None) -> BookieAdmin:
        if tls is None:
            return BookieAdmin(http, host, port, token=token)
        key = (tls.ca_pem, tls.client_certificate, tls.client_key)
        context = contexts.get(key)
        if context is None:     # one per CA and client certificate (a renewal makes a new one), not per request
            try:
                context = admin_ssl_context(tls.ca_pem, tls.client_certificate, tls.client_key)
            except ssl.SSLError as exc:  # CertificatesValid names the Secret; the token still works
                log.warning("spec.tls.adminClient does not load (%s): the admin token alone is presented", exc)
                context = admin_ssl_context(tls.ca_pem)
            contexts[key] = context
        return BookieAdmin(http, host, port, token=token, ssl_context=context, server_hostname=tls.server_hostname)

    return Operator(kube=kube, admin_for=admin_for, metadata=MetadataService(zk_security),
                    closers=[http.close, kube.close], operator_peers=operator_peers(),
                    audit_cluster_role=os.environ.get("BOOKIE_OPERATOR_AUDIT_CLUSTER_ROLE", "bookie-operator-audit"),
                    allowed_escalations=escalations.parse_allowed(os.environ.get(escalations.ENV, "")),
                    fetch_json=lambda url: fetch_json(http, url))


def operator_peers() -> list[dict[str, Any]]:
    """The operator's own pods, as its chart describes them (namespace and labels), for the NetworkPolicy."""
    namespace = os.environ.get("BOOKIE_OPERATOR_NAMESPACE")
    text = os.environ.get("BOOKIE_OPERATOR_POD_LABELS", "")
    if not namespace or not text:
        return []
    pod_labels = dict(item.split("=", 1) for item in text.split(","))
    return [builders.operator_peer(namespace, pod_labels)]


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    op: Operator | None = getattr(memo, "operator", None)
    if op is not None:
        await op.close()


async def _run(memo: kopf.Memo, body: kopf.Body, *, raise_on_wait: bool) -> None:
    op: Operator = memo.operator
    outcome = await reconcile(op, dict(body))
    if outcome.waiting:
        if raise_on_wait:
            raise kopf.TemporaryError(outcome.message, delay=RETRY_DELAY)
        log.info("waiting cluster=%s/%s: %s", body["metadata"]["namespace"], body["metadata"]["name"],
                 outcome.message)


@kopf.on.resume(*RESOURCE)
@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE)
async def on_change(memo: kopf.Memo, body: kopf.Body, **_: Any) -> None:
    await _run(memo, body, raise_on_wait=True)


@kopf.timer(*RESOURCE, interval=INTERVAL, initial_delay=min(INTERVAL, 5.0))
async def on_tick(memo: kopf.Memo, body: kopf.Body, **_: Any) -> None:
    await _run(memo, body, raise_on_wait=False)
