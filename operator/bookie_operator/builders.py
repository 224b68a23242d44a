"""Pure builders: a BookieCluster (name, namespace, uid, parsed spec) -> the desired Kubernetes objects.

No I/O here. The reconcile applies what these return with server-side apply, so every object is complete
(what the operator does not set, it does not own). PersistentVolumeClaims are created by the StatefulSet's
volumeClaimTemplates and never carry an owner reference to the BookieCluster: data is deleted only by the
scale-down PVC policy, or with the cluster when ``spec.storage`` says so (``deleteClaimsWithCluster``).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import javaproperties
from bookie.config import PROMETHEUS_PROVIDER, BookieConfig
from bookie.termination import IMPLEMENTATION_ENV, WRONG_IMAGE

from bookie_operator import java_config, models
from bookie_operator.models import BOOKIE_PORT, HTTP_PORT, INSPECTOR_METRICS_PORT, INSPECTOR_PORT, BookieClusterSpec

Obj = dict[str, Any]

CHECKSUM_ANNOTATION = f"{models.GROUP}/config-checksum"
CLUSTER_LABEL = f"{models.GROUP}/cluster"
# On the pods: which bookie they run (monitoring finds /metrics on a different port for each).
IMPLEMENTATION_LABEL = f"{models.GROUP}/implementation"
CONF_DIR = "/opt/bookie/conf"
RUN_DIR = "/opt/bookie/run"
# While a switch of implementation runs: the keys only our bookies may read (OURS_ONLY_KEYS), appended at start.
OURS_ONLY_FILE = "bookie-fleet.conf"
# The SHA-256 hashes of the admin and audit tokens (``<cluster>-token-hashes``), never the tokens: a bookie checks a
# presented token against them, so a compromised bookie holds nothing it could present. Mounted as a directory (not
# a subPath) so that the kubelet's updates reach the bookie, which re-reads the files when they change.
TOKEN_HASHES_DIR = "/opt/bookie/secrets/token-hashes"
ADMIN_HASHES_KEY = "admin"
METRICS_HASHES_KEY = "metrics"  # Prometheus's tokens, with spec.adminApi.metricsTokenSecretName
READ_HASHES_KEY = "read"   # the audit's token: the bookies accept it for reads only (httpServerReadTokenFile)
ADMIN_TOKEN_FILE = f"{TOKEN_HASHES_DIR}/{ADMIN_HASHES_KEY}"
READ_TOKEN_FILE = f"{TOKEN_HASHES_DIR}/{READ_HASHES_KEY}"
METRICS_TOKEN_FILE = f"{TOKEN_HASHES_DIR}/{METRICS_HASHES_KEY}"
ZK_DIGEST_DIR = "/opt/bookie/secrets/zk-digest"
ZK_DIGEST_FILE = "digest"
ADMIN_TOKEN_KEY = "token"
DATA_ROOT = "/bookie"
# spec.tls's Secrets, one directory per purpose (bookie, admin, zookeeper), mounted whole (not by subPath) so that
# the kubelet's updates of a renewed certificate reach the bookie, which re-reads the files.
TLS_ROOT = "/opt/bookie/tls"
# BookKeeper's classes behind its TLS and certificate-role keys (both bookies take these values).
TLS_CONTEXT_FACTORY = "org.apache.bookkeeper.tls.TLSContextFactory"
BOOKIE_AUTHZ_FACTORY = "org.apache.bookkeeper.tls.BookieAuthZFactory"
JAVA_CONF = "/opt/bookkeeper/conf/bk_server.conf"
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
CACHE_KEYS = ("dbStorage_writeCacheMaxSizeMb", "dbStorage_readAheadCacheMaxSizeMb")
# Memory besides the caches: the Python process (index, journal buffers), or the JVM heap of Apache
# BookKeeper's bookie, whose caches are direct memory and default to a quarter of it each (counted here as
# the 512 MB they are with the image's 2 GB of direct memory).
PROCESS_MEMORY_MB = {"bookie-fleet": 256, "apache-bookkeeper": 1024}
JAVA_DEFAULT_CACHE_MB = 512
DEFAULT_CPU_REQUEST = "500m"
# The numeric USER of both bookie images, spec.podSecurity's default; the restricted Pod Security Standard needs
# runAsNonRoot, which the kubelet can check only against a number.
BOOKIE_UID = models.IMAGE_UID
TMP_DIR = "/tmp"
# Our bookie's dedicated /metrics port (BookKeeper's PrometheusMetricsProvider keys), so that the monitoring
# namespace is admitted to /metrics without reaching the admin API.
METRICS_PORT = 8000
DNS_PORT = 53

# Our image: the ConfigMap's file plus the per-pod identity, then `bookie serve`. An image without the `bookie`
# command (Apache BookKeeper's, for one) is not ours: it stops there, saying so in its termination message.
WRONG_IMAGE_MESSAGE = (f"{WRONG_IMAGE}: the image has no bookie command, so it does not run bookie-fleet's bookie, "
                       "which the pod is built for (spec.implementation bookie-fleet): set spec.image to "
                       "bookie-fleet's bookie image, or spec.implementation to the image's")
PYTHON_START = (
    "set -e\n"
    "if ! command -v bookie >/dev/null 2>&1; then\n"
    f"  msg=\"{WRONG_IMAGE_MESSAGE}\"\n"
    "  echo \"$msg\" >&2\n"
    "  log=${BOOKIE_TERMINATION_LOG-/dev/termination-log}\n"
    "  if [ -n \"$log\" ]; then printf '%s' \"$msg\" > \"$log\" || true; fi\n"
    "  exit 1\n"
    "fi\n"
    f"conf={RUN_DIR}/bk_server.conf\n"
    f"cp {CONF_DIR}/bk_server.conf \"$conf\"\n"
    f"if [ -f {CONF_DIR}/{OURS_ONLY_FILE} ]; then cat {CONF_DIR}/{OURS_ONLY_FILE} >> \"$conf\"; fi\n"
    "printf 'bookieId=%s\\nadvertisedAddress=%s\\nlisteningAddress=%s\\nhttpServerHost=%s\\n' "
    "\"$BOOKIE_ID\" \"$POD_IP\" \"$POD_IP\" \"$POD_IP\" >> \"$conf\"\n"
    "exec bookie serve --conf \"$conf\"\n"
)


# The inspector beside an Apache BookKeeper bookie: its configuration plus the bookie's identity, then
# `bookie inspect serve` (it reads the bookie's ledger volumes, mounted read-only at the bookie's own paths).
INSPECTOR_START = (
    "set -e\n"
    f"conf={RUN_DIR}/inspector.conf\n"
    f"cp {CONF_DIR}/inspector.conf \"$conf\"\n"
    "printf 'bookieId=%s\\nhttpServerHost=%s\\n' \"$BOOKIE_ID\" \"$POD_IP\" >> \"$conf\"\n"
    "exec bookie inspect serve --conf \"$conf\"\n"
)
INSPECTOR_DEFAULT_REQUESTS = {"cpu": "50m", "memory": "128Mi"}


@dataclass(frozen=True)
class Owner:
    """The BookieCluster the objects belong to."""

    name: str
    namespace: str
    uid: str

    def reference(self) -> Obj:
        return {"apiVersion": f"{models.GROUP}/{models.VERSION}", "kind": models.KIND, "name": self.name,
                "uid": self.uid, "controller": True, "blockOwnerDeletion": True}


@dataclass(frozen=True)
class Volume:
    """One bookie volume: its claim template's name (the PVCs are ``<claim>-<pod>``) and the directory the bookie
    has it at (its cookie records the directory, so an adopted bookie keeps it)."""

    claim: str
    path: str
    size: str
    storage_class_name: str | None = None


@dataclass(frozen=True)
class Layout:
    """The names and paths the StatefulSet is built with: the operator's own, or those of an adopted StatefulSet
    (status.adoption.found), which its PVC names, bookie ids and cookies depend on."""

    service: str                                    # the headless Service, part of every bookie id
    client_service: str
    journals: tuple[Volume, ...]
    ledgers: tuple[Volume, ...]
    pod_labels: tuple[tuple[str, str], ...] = ()    # kept from an adopted template, beside the operator's

    @property
    def volumes(self) -> tuple[Volume, ...]:
        return self.journals + self.ledgers


def layout(cluster: str, spec: BookieClusterSpec, adopted: models.AdoptionFound | None = None) -> Layout:
    """The operator's names and paths, or the adopted StatefulSet's."""
    if adopted is None:
        def own(kind: str, vol: models.VolumeSpec) -> tuple[Volume, ...]:
            return tuple(Volume(f"{kind}-{i}", f"{DATA_ROOT}/{kind}-{i}", vol.size, vol.storage_class_name)
                         for i in range(vol.count))
        return Layout(headless_service_name(cluster), client_service_name(cluster),
                      own("journal", spec.storage.journal), own("ledgers", spec.storage.ledgers))

    def kept(vols: list[models.AdoptedVolume]) -> tuple[Volume, ...]:
        return tuple(Volume(v.claim, v.path, v.size, v.storage_class_name) for v in vols)
    client = client_service_name(cluster)
    # The adopted headless Service often has the cluster's name (the chart's does): the client one steps aside.
    return Layout(adopted.service_name, f"{client}-client" if client == adopted.service_name else client,
                  kept(adopted.journals), kept(adopted.ledgers), tuple(sorted(adopted.pod_labels.items())))


# ------------------------------------------------------------------------------------------- naming
def statefulset_name(cluster: str) -> str:
    return cluster


def headless_service_name(cluster: str) -> str:
    return f"{cluster}-headless"


def client_service_name(cluster: str) -> str:
    return cluster


def configmap_name(cluster: str) -> str:
    return f"{cluster}-config"


def network_policy_name(cluster: str) -> str:
    return cluster


def admin_token_secret_name(cluster: str, spec: BookieClusterSpec | None = None) -> str:
    """The Secret holding the admin API's token: the spec's, else the one the operator creates."""
    if spec is not None and spec.admin_api.token_secret_name:
        return spec.admin_api.token_secret_name
    return f"{cluster}-admin-token"


def audit_token_secret_name(cluster: str) -> str:
    """The Secret holding the storage audit's token: the read scope of the admin API only (the explain endpoint,
    the entry-log files), so a leaked one deletes nothing. Always the operator's."""
    return f"{cluster}-audit-token"


def token_hashes_secret_name(cluster: str) -> str:
    """The Secret the bookie pods mount: the hashes of the admin and audit tokens, derived by the operator."""
    return f"{cluster}-token-hashes"


def pod_name(cluster: str, ordinal: int) -> str:
    return f"{statefulset_name(cluster)}-{ordinal}"


def bookie_id(cluster: str, namespace: str, ordinal: int, domain: str = "cluster.local",
              service: str | None = None) -> str:
    """The stable, hostname-based bookie id of an ordinal (never the pod IP: cookies would break); ``service``:
    the headless Service of an adopted StatefulSet (``Layout.service``)."""
    svc = service or headless_service_name(cluster)
    return f"{pod_name(cluster, ordinal)}.{svc}.{namespace}.svc.{domain}:{BOOKIE_PORT}"


def ordinal_of(pod: str) -> int | None:
    """``bookies-12`` -> 12 (an integer, so ``-10`` sorts after ``-9``: datastax/kaap#251)."""
    head, sep, tail = pod.rpartition("-")
    return int(tail) if sep and head and tail.isdigit() else None


def volume_claim_names(cluster: str, spec: BookieClusterSpec, ordinal: int, lay: Layout | None = None) -> list[str]:
    """The PVCs the StatefulSet creates for an ordinal: ``<template>-<pod>``."""
    lay = lay or layout(cluster, spec)
    return [f"{v.claim}-{pod_name(cluster, ordinal)}" for v in lay.volumes]


def selector_labels(cluster: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "bookie", "app.kubernetes.io/instance": cluster}


def labels(cluster: str) -> dict[str, str]:
    return {**selector_labels(cluster), "app.kubernetes.io/managed-by": "bookie-operator",
            "app.kubernetes.io/component": "bookie", CLUSTER_LABEL: cluster}


def label_selector(cluster: str) -> str:
    return ",".join(f"{k}={v}" for k, v in selector_labels(cluster).items())


# ------------------------------------------------------------------------------------ configuration
def bookie_config(spec: BookieClusterSpec, lay: Layout | None = None) -> dict[str, Any]:
    """The cluster-wide bookie configuration (per-pod identity keys are added at start-up)."""
    lay = lay or layout("", spec)       # the directories do not depend on the cluster's name
    values: dict[str, Any] = {
        "bookiePort": BOOKIE_PORT,
        "metadataServiceUri": spec.metadata_service.uri,
        "journalDirectories": ",".join(v.path for v in lay.journals),
        "ledgerDirectories": ",".join(v.path for v in lay.ledgers),
        "allowLoopback": True,
        "httpServerEnabled": True,
        "httpServerPort": HTTP_PORT,
        "readOnlyModeEnabled": True,
        "forceAllowCompaction": True,
        "isForceGCAllowWhenNoSpace": True,
        # Re-replication (of lost bookies, and of a bookie being decommissioned) runs inside the bookies.
        "autoRecoveryDaemonEnabled": spec.autorecovery.enabled,
        "lostBookieRecoveryDelay": spec.autorecovery.lost_bookie_recovery_delay_seconds,
        **spec.gc.bookie_config(),
    }
    if spec.implementation == "bookie-fleet":
        values.update({"prometheusStatsHttpEnable": True, "prometheusStatsHttpPort": METRICS_PORT})
    values.update(spec.config)
    values.update(tls_config(spec))
    if spec.implementation == "bookie-fleet":
        values["httpServerAuthTokenFile"] = ADMIN_TOKEN_FILE
        values["httpServerReadTokenFile"] = READ_TOKEN_FILE
        values.update(_metrics_token_config(spec))
        if spec.metadata_service.digest_secret is not None:
            values["zkDigestAuthFile"] = f"{ZK_DIGEST_DIR}/{ZK_DIGEST_FILE}"
    if spec.implementation == "apache-bookkeeper":
        values.update({
            "useHostNameAsBookieID": False,  # the id is given explicitly (bookieId), hostname-based
            "persistBookieStatusEnabled": False,
            "httpServerClass": "org.apache.bookkeeper.http.vertx.VertxHttpServer",
            # Without it (the code's default is NullStatsProvider) the bookie exports no metrics: its admin
            # server's /metrics, which the chart's PodMonitor scrapes, would be empty.
            "statsProviderClass": PROMETHEUS_PROVIDER,
            # The storage every deployment uses (the code's default is SortedLedgerStorage).
            "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
        })
    else:
        BookieConfig.model_validate(values)  # the one model: a value our bookie would refuse never ships
    return values


def inspector_config(spec: BookieClusterSpec, lay: Layout | None = None) -> dict[str, Any]:
    """The inspector's configuration (``bookie inspect serve``; its identity is added at start-up): the bookie's
    ledger directories and metadata service, its compaction thresholds (for the verdicts), the hashes of the
    cluster's tokens, ZooKeeper's TLS identity when the bookies have one, its own ports and read rate, and HTTPS
    with spec.tls.admin."""
    bookie = bookie_config(spec, lay)
    values: dict[str, Any] = {
        "metadataServiceUri": spec.metadata_service.uri,
        "ledgerDirectories": bookie["ledgerDirectories"],
        "httpServerPort": INSPECTOR_PORT,
        "httpServerAuthTokenFile": ADMIN_TOKEN_FILE,
        "httpServerReadTokenFile": READ_TOKEN_FILE,
        **_metrics_token_config(spec),
        "prometheusStatsHttpEnable": True,
        "prometheusStatsHttpPort": INSPECTOR_METRICS_PORT,
        "compactionReadRateByBytes": spec.inspector.read_rate_bytes,
        "httpEntryLogReadRateByBytes": spec.inspector.read_rate_bytes,
        **spec.gc.bookie_config(),
    }
    for key in ("logSizeLimit", "minorCompactionThreshold", "majorCompactionThreshold", "minorCompactionInterval",
                "majorCompactionInterval", "zkTimeout"):
        if key in spec.config:
            values[key] = spec.config[key]
    if spec.tls is not None and spec.tls.zookeeper is not None:
        d = tls_dir("zookeeper")
        values.update({"zkTlsEnable": True, "zkTlsCertificatePath": f"{d}/tls.crt", "zkTlsKeyPath": f"{d}/tls.key",
                       "zkTlsTrustStorePath": f"{d}/ca.crt"})
    values.update(admin_https_config(spec))
    BookieConfig.model_validate(values)  # the one model: a value the inspector would refuse never ships
    return values


def admin_https_config(spec: BookieClusterSpec) -> dict[str, Any]:
    """The keys of spec.tls.admin for the admin API bookie-fleet serves (our bookie's, or the inspector's beside an
    Apache BookKeeper bookie): HTTPS from the mounted Secret, and with spec.tls.adminClient the operator's
    certificate admitted by its role."""
    tls = spec.tls
    if tls is None or tls.admin is None:
        return {}
    d = tls_dir("admin")
    values: dict[str, Any] = {"httpServerTlsEnable": True, "httpServerTlsCertificatePath": f"{d}/tls.crt",
                              "httpServerTlsKeyPath": f"{d}/tls.key",
                              "tlsCertFilesRefreshDurationSeconds": tls.refresh_seconds}  # the admin API's period
    if tls.admin_client is not None:  # the operator's certificate: signed by the admin Secret's CA
        values.update({"httpServerTlsTrustStorePath": f"{d}/ca.crt",
                       "httpServerAllowedRoles": ",".join(tls.admin_allowed_roles)})
    return values


def tls_config(spec: BookieClusterSpec) -> dict[str, Any]:
    """The configuration keys of spec.tls, pointing at the mounted Secrets: BookKeeper's tls* keys on both
    implementations (PEM files; the bookies re-read them every refreshSeconds); our admin API's and ZooKeeper's
    keys on ours (Java bookies get ZooKeeper's TLS from system properties, ``zookeeper_jvm_options``)."""
    tls = spec.tls
    values: dict[str, Any] = {}
    if tls is None:
        return values
    if tls.bookie is not None:
        d = tls_dir("bookie")
        values.update({"tlsProviderFactoryClass": TLS_CONTEXT_FACTORY, "tlsProvider": "OpenSSL",
                       "tlsKeyStoreType": "PEM", "tlsKeyStore": f"{d}/tls.key", "tlsCertificatePath": f"{d}/tls.crt",
                       "tlsTrustStoreType": "PEM", "tlsTrustStore": f"{d}/ca.crt",
                       "tlsClientAuthentication": tls.client_authentication,
                       "tlsCertFilesRefreshDurationSeconds": tls.refresh_seconds})
        if tls.authorized_roles:
            values.update({"bookieAuthProviderFactoryClass": BOOKIE_AUTHZ_FACTORY,
                           "authorizedRoles": ",".join(tls.authorized_roles)})
        elif tls.client_authentication and spec.implementation == "bookie-fleet":
            # BookKeeper's tlsClientAuthentication verifies the certificates of TLS sessions but leaves plaintext
            # open; clientAuthentication promises no access without a certificate. (Java bookies have no such
            # key: the model makes them use authorizedRoles, which refuses plaintext too.)
            values["onlySecureClientsAllowed"] = True
    if spec.implementation == "bookie-fleet":  # Apache BookKeeper's admin server reads Java key stores only
        values.update(admin_https_config(spec))
    if tls.zookeeper is not None and spec.implementation == "bookie-fleet":
        d = tls_dir("zookeeper")
        values.update({"zkTlsEnable": True, "zkTlsCertificatePath": f"{d}/tls.crt", "zkTlsKeyPath": f"{d}/tls.key",
                       "zkTlsTrustStorePath": f"{d}/ca.crt"})
    return values


def zookeeper_jvm_options(spec: BookieClusterSpec) -> list[str]:
    """ZooKeeper's client TLS for Apache BookKeeper's bookie, which has no keys of its own for it: the client's
    system properties, with the Secret's key and chain in one PEM file (tls-combined.pem) as ZooKeeper reads it."""
    if spec.tls is None or spec.tls.zookeeper is None or spec.implementation != "apache-bookkeeper":
        return []
    d = tls_dir("zookeeper")
    return ["-Dzookeeper.client.secure=true", "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
            f"-Dzookeeper.ssl.keyStore.location={d}/tls-combined.pem", "-Dzookeeper.ssl.keyStore.type=PEM",
            f"-Dzookeeper.ssl.trustStore.location={d}/ca.crt", "-Dzookeeper.ssl.trustStore.type=PEM"]


# What a value needs escaped in a properties file. Keys take javaproperties.escape (java.util.Properties.store's
# rules); values do not take its join_key_value, which also escapes '=', ':', '#', '!' (literal in a value) and
# leading blanks: the first would change the rendered file, and so the checksum that rolls the bookies, of every
# cluster with a ZooKeeper URI; the second is read back as a backslash and a blank by Apache BookKeeper's reader
# (Commons Configuration), while both it and ours trim values anyway.
_VALUE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


def _escape_value(text: str) -> str:
    """``text`` as one properties value: line breaks, tabs and backslashes escaped, anything outside printable
    ASCII as ``\\uXXXX`` (UTF-16 units, as Java reads the file as ISO-8859-1)."""
    out = []
    for ch in text:
        if ch in _VALUE_ESCAPES:
            out.append(_VALUE_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            units = ch.encode("utf-16-be")
            out.extend(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))
    return "".join(out)


def render_properties(values: dict[str, Any]) -> str:
    """A bk_server.conf of ``values``, each key and value escaped so that both our bookie's reader and Apache
    BookKeeper's read back exactly these keys: a value cannot add a line (and with it a key) to the file."""
    lines = []
    for key in sorted(values):
        value = values[key]
        text = str(value).lower() if isinstance(value, bool) else str(value)
        lines.append(f"{javaproperties.escape(key)}={_escape_value(text)}")
    return "# Written by the bookie operator from the BookieCluster spec.\n" + "\n".join(lines) + "\n"


def config_checksum(spec: BookieClusterSpec, lay: Layout | None = None) -> str:
    text = spec.implementation + "\n" + render_properties(bookie_config(spec, lay))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------ objects
def _meta(name: str, owner: Owner) -> Obj:
    return {"name": name, "namespace": owner.namespace, "labels": labels(owner.name),
            "ownerReferences": [owner.reference()]}


def configmap(owner: Owner, spec: BookieClusterSpec, lay: Layout | None = None) -> Obj:
    data = {"bk_server.conf": render_properties(bookie_config(spec, lay))}
    if spec.runs_inspector:
        data["inspector.conf"] = render_properties(inspector_config(spec, lay))
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(configmap_name(owner.name), owner),
            "data": data}


def admin_token_secret(owner: Owner, token: str) -> Obj:
    """The admin token Secret the operator creates once (never applied again: the token must not change under
    the bookies). Owned by the BookieCluster, so it goes with it."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(admin_token_secret_name(owner.name), owner),
            "stringData": {ADMIN_TOKEN_KEY: token + "\n"}}


def audit_token_secret(owner: Owner, token: str) -> Obj:
    """The audit's read-scope token Secret, created once like the admin token's."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(audit_token_secret_name(owner.name), owner),
            "stringData": {ADMIN_TOKEN_KEY: token + "\n"}}


def token_hashes_secret(owner: Owner, admin_hashes: str, read_hashes: str, metrics_hashes: str | None = None) -> Obj:
    """What the bookie pods mount instead of the tokens: ``sha256:<hex>`` lines (``reconcile.admin_token``
    derives them), applied whenever the tokens are read so that a rotated token reaches the bookies. In a
    Secret all the same: the hash of a weak token chosen by hand could be guessed."""
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    data = {ADMIN_HASHES_KEY: b64(admin_hashes), READ_HASHES_KEY: b64(read_hashes)}
    if metrics_hashes is not None:
        data[METRICS_HASHES_KEY] = b64(metrics_hashes)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(token_hashes_secret_name(owner.name), owner), "data": data}


def _metrics_token_config(spec: BookieClusterSpec) -> dict[str, str]:
    """/metrics behind Prometheus's tokens (their hashes), when the spec names them."""
    return {"httpServerMetricsTokenFile": METRICS_TOKEN_FILE} if spec.admin_api.metrics_token_secret_name else {}


def _ports() -> list[Obj]:
    return [{"name": "bookie", "port": BOOKIE_PORT, "targetPort": BOOKIE_PORT, "protocol": "TCP"},
            {"name": "http", "port": HTTP_PORT, "targetPort": HTTP_PORT, "protocol": "TCP"}]


def headless_service(owner: Owner, spec: BookieClusterSpec, lay: Layout | None = None) -> Obj:
    """Each bookie's stable DNS name; with the inspector, its port too (the audit reads each pod's)."""
    ports = _ports()
    if spec.runs_inspector:
        ports.append({"name": "inspector", "port": INSPECTOR_PORT, "targetPort": INSPECTOR_PORT, "protocol": "TCP"})
    name = lay.service if lay else headless_service_name(owner.name)
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, owner),
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": selector_labels(owner.name), "ports": ports}}


def client_service(owner: Owner, lay: Layout | None = None) -> Obj:
    name = lay.client_service if lay else client_service_name(owner.name)
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, owner),
            "spec": {"type": "ClusterIP", "selector": selector_labels(owner.name), "ports": _ports()}}


def pod_disruption_budget(owner: Owner, spec: BookieClusterSpec) -> Obj | None:
    if not spec.pdb.enabled:
        return None
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(owner.name, owner),
            "spec": {"maxUnavailable": spec.pdb.max_unavailable,
                     "selector": {"matchLabels": selector_labels(owner.name)}}}


def pod_security_context(spec: BookieClusterSpec) -> Obj:
    """The pod's part of the ``restricted`` Pod Security Standard, plus the volumes' group; the uid and gid are
    spec.podSecurity's (the images' own by default; never 0, the model refuses it).

    ``fsGroupChangePolicy: OnRootMismatch``: the kubelet walks a volume to change its group only when the
    volume's root does not have it yet, instead of at every start (a ledger volume holds millions of files)."""
    who = spec.pod_security
    return {"runAsNonRoot": True, "runAsUser": who.run_as_user, "runAsGroup": who.run_as_group,
            "fsGroup": who.run_as_group, "fsGroupChangePolicy": "OnRootMismatch",
            "seccompProfile": {"type": "RuntimeDefault"}}


def container_security_context() -> Obj:
    """The bookie container's part: no privilege escalation, no capabilities, a read-only root filesystem (the
    bookie writes only to its volumes, its run directory and /tmp, all emptyDirs or claims)."""
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]}}


def tls_dir(purpose: str) -> str:
    return f"{TLS_ROOT}/{purpose}"


def tls_volumes(spec: BookieClusterSpec) -> tuple[list[Obj], list[Obj]]:
    """(volumes, mounts) of spec.tls's Secrets. Readable by every user of the pod (0444): the bookie's uid is the
    image's, and a Secret volume's files are root's on a node that does not give them the pod's fsGroup."""
    if spec.tls is None:
        return [], []
    volumes, mounts = [], []
    for purpose, secret in spec.tls.secrets().items():
        volumes.append({"name": f"tls-{purpose}", "secret": {"secretName": secret, "defaultMode": 0o444}})
        mounts.append({"name": f"tls-{purpose}", "mountPath": tls_dir(purpose), "readOnly": True})
    return volumes, mounts


def metrics_port(spec: BookieClusterSpec) -> int:
    """Where the bookie serves /metrics: our bookie's dedicated port, unless spec.config turned it off; the
    admin port otherwise (Apache BookKeeper serves /metrics only there while its admin HTTP server is on)."""
    return dedicated_metrics_port(spec) or HTTP_PORT


def dedicated_metrics_port(spec: BookieClusterSpec) -> int | None:
    """The bookie's port that serves /metrics and nothing else, if it has one. Apache BookKeeper's bookie has
    none while its admin HTTP server runs (its PrometheusMetricsProvider then serves /metrics on that server)."""
    if spec.implementation == "apache-bookkeeper":
        return None
    conf = bookie_config(spec)
    return int(conf["prometheusStatsHttpPort"]) if conf["prometheusStatsHttpEnable"] else None


def zookeeper_ports(spec: BookieClusterSpec) -> list[int]:
    return sorted({int(server.rpartition(":")[2]) for server in spec.metadata_service.zk_servers.split(",")})


def audit_spark_selector(cluster: str) -> dict[str, str]:
    """The labels of the storage audit's Spark pods of a cluster (``audit_builders``)."""
    return {"app.kubernetes.io/name": "bookie-audit", "app.kubernetes.io/instance": cluster,
            "app.kubernetes.io/component": "spark"}


def operator_peer(namespace: str, pod_labels: dict[str, str]) -> Obj:
    """The operator's own pods as a NetworkPolicy peer: these labels, in that namespace only (a pod elsewhere
    with the same labels is not the operator)."""
    return {"namespaceSelector": {"matchLabels": {models.NAMESPACE_NAME_LABEL: namespace}},
            "podSelector": {"matchLabels": dict(pod_labels)}}


def _tcp(*ports: int) -> list[Obj]:
    return [{"protocol": "TCP", "port": p} for p in ports]


def network_policy(owner: Owner, spec: BookieClusterSpec, operator_peers: list[Obj]) -> Obj | None:
    """Ingress: the bookie port from the clients the spec names and the cluster's own bookies, the admin port from
    the operator, the metrics-only ports from monitoring; nothing else. Egress: ZooKeeper, DNS, the cluster's own
    bookies.

    ``operator_peers`` are the operator's own pods (namespace and labels), used unless the spec names others."""
    np = spec.network_policy
    if not np.enabled:
        return None
    own_bookies = {"podSelector": {"matchLabels": selector_labels(owner.name)}}
    admins = [p.manifest() for p in np.operator] if np.operator is not None else operator_peers
    ingress: list[Obj] = [
        {"ports": _tcp(BOOKIE_PORT), "from": [own_bookies, *(p.manifest() for p in np.clients)]},
    ]
    if spec.audit.schedule is not None:  # the storage audit's Spark pods read entry logs on the admin port
        admins = [*admins, {"podSelector": {"matchLabels": audit_spark_selector(owner.name)}}]
    if admins:
        # The inspector's API is an admin API too (the audit reads entry logs there).
        ingress.append({"ports": _tcp(HTTP_PORT, *([INSPECTOR_PORT] if spec.runs_inspector else [])),
                        "from": admins})
    # Monitoring reaches ports that serve metrics only: where /metrics shares the admin port (Apache
    # BookKeeper's bookie, whose admin API takes no credential), scraping it would open that API too.
    scraped = [p for p in (dedicated_metrics_port(spec), INSPECTOR_METRICS_PORT if spec.runs_inspector else None)
               if p is not None]
    if np.monitoring and scraped:
        ingress.append({"ports": _tcp(*scraped), "from": [p.manifest() for p in np.monitoring]})
    zookeeper: Obj = {"ports": _tcp(*zookeeper_ports(spec))}
    if np.zookeeper:
        zookeeper["to"] = [p.manifest() for p in np.zookeeper]
    egress: list[Obj] = [
        zookeeper,
        {"ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]},
        {"ports": _tcp(BOOKIE_PORT), "to": [own_bookies]},
    ]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _meta(network_policy_name(owner.name), owner),
            "spec": {"podSelector": {"matchLabels": selector_labels(owner.name)},
                     "policyTypes": ["Ingress", "Egress"],
                     "ingress": ingress + np.extra_ingress, "egress": egress + np.extra_egress}}


def _env(owner: Owner, spec: BookieClusterSpec, lay: Layout | None = None) -> list[Obj]:
    def field(path: str) -> Obj:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    env = [
        {"name": "POD_NAME", **field("metadata.name")},
        {"name": "POD_NAMESPACE", **field("metadata.namespace")},
        {"name": "POD_IP", **field("status.podIP")},
        {"name": "BOOKIE_ID", "value": f"$(POD_NAME).{(lay.service if lay else headless_service_name(owner.name))}"
                                       ".$(POD_NAMESPACE)"
                                       f".svc.{spec.cluster_domain}:{BOOKIE_PORT}"},
        # The bookie the pod is built for: bookie-fleet's refuses to start in a pod built for the other one.
        {"name": IMPLEMENTATION_ENV, "value": spec.implementation},
    ]
    if spec.implementation == "apache-bookkeeper":
        env += [{"name": models.BOOKKEEPER_VERSIONS_ENV, "value": ",".join(java_config.SUPPORTED_LINES)},
                {"name": "BK_bookieId", "value": "$(BOOKIE_ID)"},
                {"name": "BK_advertisedAddress", "value": "$(POD_IP)"},
                # With a listening interface set, the Java bookie binds its advertised address (the pod IP),
                # not 0.0.0.0 (BookieNettyServer); "lo" exists everywhere and is not otherwise used.
                {"name": "BK_listeningInterface", "value": "lo"},
                {"name": "BK_httpServerHost", "value": "$(POD_IP)"}]
        options = zookeeper_jvm_options(spec) + spec.jvm_options     # the spec's last: they win
        if options:
            env.append({"name": "BOOKIE_EXTRA_OPTS", "value": " ".join(options)})
    return env + [v.model_dump(by_alias=True, exclude_none=True) for v in spec.env]


def cache_memory_mb(spec: BookieClusterSpec) -> int:
    """Write cache plus read-ahead cache (plus RocksDB's block cache when set), as the bookie will size them."""
    defaults = BookieConfig.model_validate({}).model_dump(by_alias=True)
    total = 0
    for key in CACHE_KEYS:
        if key in spec.config:
            total += int(spec.config[key])
        elif spec.implementation == "apache-bookkeeper":
            total += JAVA_DEFAULT_CACHE_MB
        else:
            total += int(defaults[key])
    block_cache = spec.config.get("dbStorage_rocksDB_blockCacheSize")
    if block_cache is not None:
        total += int(block_cache) // (1 << 20)
    return total


def resources(spec: BookieClusterSpec) -> Obj:
    """Requests sized for the caches (a bookie without them is BestEffort, evicted first); the spec's own
    requests replace the defaults one by one, and everything else it sets (limits) is kept."""
    memory = cache_memory_mb(spec) + PROCESS_MEMORY_MB[spec.implementation]
    requests = {"cpu": DEFAULT_CPU_REQUEST, "memory": mebibytes(memory), **spec.resources.get("requests", {})}
    return {**spec.resources, "requests": requests}


def mebibytes(n: int) -> str:
    """A memory quantity in the API server's canonical form (``2048Mi`` is stored as ``2Gi``): the StatefulSet
    compared with what was applied must not differ by spelling, or it would be applied again every tick."""
    return f"{n // 1024}Gi" if n % 1024 == 0 else f"{n}Mi"


def default_affinity(cluster: str) -> Obj:
    """Prefer one bookie per node: a node lost takes one copy of a ledger, not several."""
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "podAffinityTerm": {"labelSelector": {"matchLabels": selector_labels(cluster)}, "topologyKey": HOSTNAME_KEY},
    }]}}


def default_topology_spread(cluster: str) -> list[Obj]:
    """Spread bookies over zones, but still schedule where a zone is missing or full (ScheduleAnyway)."""
    return [{"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": selector_labels(cluster)}}]


def inspector_scheme(spec: BookieClusterSpec) -> str:
    """HTTPS when spec.tls.admin gives the admin API bookie-fleet serves a certificate (the kubelet's probes do not
    verify it)."""
    return "HTTPS" if spec.tls is not None and spec.tls.admin is not None else "HTTP"


def admin_scheme(spec: BookieClusterSpec) -> str:
    """The bookie container's admin API: HTTPS with spec.tls.admin on our bookies; Apache BookKeeper's stays HTTP."""
    return inspector_scheme(spec) if spec.implementation == "bookie-fleet" else "HTTP"


def _probe(path: str, scheme: str, port: str = "http", **timing: int) -> Obj:
    get: Obj = {"path": path, "port": port}
    if scheme == "HTTPS":
        get["scheme"] = scheme
    return {"httpGet": get, **timing}


def statefulset(owner: Owner, spec: BookieClusterSpec, replicas: int, lay: Layout | None = None) -> Obj:
    """The bookies' StatefulSet with ``replicas`` pods (the reconcile decides it: scale-down is staged)."""
    name = owner.name
    lay = lay or layout(name, spec)
    mounts: list[Obj] = [{"name": v.claim, "mountPath": v.path} for v in lay.volumes]
    mounts.append({"name": "tmp", "mountPath": TMP_DIR})
    volumes: list[Obj] = [{"name": "config", "configMap": {"name": configmap_name(name)}},
                          {"name": "tmp", "emptyDir": {}}]
    ports = [{"name": "bookie", "containerPort": BOOKIE_PORT}, {"name": "http", "containerPort": HTTP_PORT}]
    if metrics_port(spec) != HTTP_PORT:
        ports.append({"name": "metrics", "containerPort": metrics_port(spec)})
    container: Obj = {
        "name": "bookie",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "env": _env(owner, spec, lay),
        "ports": ports,
        "securityContext": container_security_context(),
        "readinessProbe": _probe("/api/v1/bookie/is_ready", admin_scheme(spec), periodSeconds=5, timeoutSeconds=5,
                                 failureThreshold=3),
        "livenessProbe": _probe("/heartbeat", admin_scheme(spec), initialDelaySeconds=30, periodSeconds=10,
                                timeoutSeconds=5, failureThreshold=6),
        "resources": resources(spec),
        # Our bookie writes why it cannot start to /dev/termination-log; Apache BookKeeper's does not, and the
        # end of its log takes the message's place. The operator reads either (start_failures).
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if spec.implementation == "apache-bookkeeper":
        mounts.append({"name": "config", "mountPath": JAVA_CONF, "subPath": "bk_server.conf", "readOnly": True})
    else:
        container["command"] = ["sh", "-c", PYTHON_START]
        mounts += [{"name": "config", "mountPath": CONF_DIR, "readOnly": True},
                   {"name": "run", "mountPath": RUN_DIR},
                   {"name": "token-hashes", "mountPath": TOKEN_HASHES_DIR, "readOnly": True}]
        volumes += [{"name": "run", "emptyDir": {}}, _token_hashes_volume(name, spec)]
        digest = spec.metadata_service.digest_secret
        if digest is not None:  # read once at the bookie's start (zkDigestAuthFile)
            mounts.append({"name": "zk-digest", "mountPath": ZK_DIGEST_DIR, "readOnly": True})
            volumes.append({"name": "zk-digest", "secret": {
                "secretName": digest.secret_name, "items": [{"key": digest.key, "path": ZK_DIGEST_FILE}],
                "defaultMode": 0o444}})
    tls_vols, tls_mounts = tls_volumes(spec)
    volumes += tls_vols
    # Apache BookKeeper's bookie has no use for the admin API's keys: the inspector beside it serves that HTTPS.
    mounts += [m for m in tls_mounts if spec.implementation == "bookie-fleet" or m["name"] != "tls-admin"]
    mounts += [m.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) | {"mountPath": m.mount_path}
               for m in spec.extra_volume_mounts]
    container["volumeMounts"] = mounts
    containers = [container]
    if spec.runs_inspector:
        inspector, inspector_volumes = inspector_container(owner, spec, lay)
        containers.append(inspector)
        volumes += [v for v in inspector_volumes if v["name"] not in {x["name"] for x in volumes}]
    pod_spec: Obj = {
        "containers": [*containers, *(c.model_dump(by_alias=True) for c in spec.sidecars)],
        "volumes": volumes + [v.model_dump(by_alias=True) for v in spec.extra_volumes],
        "terminationGracePeriodSeconds": 60,
        "securityContext": pod_security_context(spec),
        "enableServiceLinks": False,
        # Neither bookie talks to the Kubernetes API: a token in the pod would only serve whoever takes it over.
        "automountServiceAccountToken": False,
    }
    affinity = default_affinity(name) if spec.affinity is None else spec.affinity
    spread = default_topology_spread(name) if spec.topology_spread_constraints is None \
        else spec.topology_spread_constraints
    pulls = [r.model_dump() for r in spec.image_pull_secrets]
    for key, value in (("affinity", affinity), ("tolerations", spec.tolerations),
                       ("topologySpreadConstraints", spread), ("nodeSelector", spec.node_selector),
                       ("imagePullSecrets", pulls), ("serviceAccountName", spec.service_account_name),
                       ("priorityClassName", spec.priority_class_name)):
        if value:
            pod_spec[key] = value
    claims = []
    for v in lay.volumes:
        claim_spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": v.size}}}
        if v.storage_class_name:
            claim_spec["storageClassName"] = v.storage_class_name
        claims.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": v.claim, "labels": labels(name)}, "spec": claim_spec})
    when_deleted = "Delete" if spec.storage.delete_claims_with_cluster else "Retain"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(statefulset_name(name), owner),
        "spec": {
            "replicas": replicas,
            "serviceName": lay.service,
            "podManagementPolicy": "Parallel",
            # The operator restarts one bookie at a time, waiting for readiness and full replication.
            "updateStrategy": {"type": "OnDelete"},
            # PVCs outlive scale-down: the operator applies spec.scaleDown.pvcPolicy after decommissioning.
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted, "whenScaled": "Retain"},
            "selector": {"matchLabels": selector_labels(name)},
            "template": {
                "metadata": {"labels": {**dict(lay.pod_labels), **labels(name),
                                        IMPLEMENTATION_LABEL: spec.implementation},
                             "annotations": {**spec.pod_annotations, CHECKSUM_ANNOTATION: config_checksum(spec, lay)}},
                "spec": pod_spec,
            },
            "volumeClaimTemplates": claims,
        },
    }


def inspector_container(owner: Owner, spec: BookieClusterSpec, lay: Layout | None = None) -> tuple[Obj, list[Obj]]:
    """The inspector beside an Apache BookKeeper bookie, and the volumes it needs: the bookie's ledger volumes
    read-only (at the bookie's own paths, so the answers name the files the bookie names), no journal, its
    configuration, the hashes of the cluster's tokens, ZooKeeper's TLS identity and the admin API's keys
    (spec.tls.admin); the restricted security context with a read-only root file system."""
    lay = lay or layout(owner.name, spec)
    mounts: list[Obj] = [{"name": v.claim, "mountPath": v.path, "readOnly": True} for v in lay.ledgers]
    mounts += [{"name": "config", "mountPath": CONF_DIR, "readOnly": True},
               {"name": "inspector-run", "mountPath": RUN_DIR},
               {"name": "tmp", "mountPath": TMP_DIR},
               {"name": "token-hashes", "mountPath": TOKEN_HASHES_DIR, "readOnly": True}]
    volumes: list[Obj] = [{"name": "inspector-run", "emptyDir": {}}, _token_hashes_volume(owner.name, spec)]
    _, tls_mounts = tls_volumes(spec)
    mounts += [m for m in tls_mounts if m["name"] in ("tls-zookeeper", "tls-admin")]
    env = [e for e in _env(owner, spec, lay) if e["name"] in ("POD_NAME", "POD_NAMESPACE", "POD_IP", "BOOKIE_ID")]
    requests = {**INSPECTOR_DEFAULT_REQUESTS, **spec.inspector.resources.get("requests", {})}
    container: Obj = {
        "name": "inspector",
        "image": spec.inspector.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["sh", "-c", INSPECTOR_START],
        "env": env,
        "ports": [{"name": "inspector", "containerPort": INSPECTOR_PORT},
                  {"name": "metrics", "containerPort": INSPECTOR_METRICS_PORT}],
        "securityContext": container_security_context(),
        # At the bookie's pace: a not-ready inspector looks again when probed (its ledger directory may have been
        # made since), so the pod is Ready one probe after its bookie, not a retry or a longer period later.
        "readinessProbe": _probe("/api/v1/bookie/is_ready", inspector_scheme(spec), "inspector", periodSeconds=5,
                                 timeoutSeconds=5, failureThreshold=3),
        "livenessProbe": _probe("/heartbeat", inspector_scheme(spec), "inspector", initialDelaySeconds=30,
                                periodSeconds=10, timeoutSeconds=5, failureThreshold=6),
        "resources": {**spec.inspector.resources, "requests": requests},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }
    return container, volumes


def _token_hashes_volume(cluster: str, spec: BookieClusterSpec) -> Obj:
    """The tokens' hashes as a volume, read-only for everyone in the pod (the processes run as the image's user,
    not root)."""
    keys = [ADMIN_HASHES_KEY, READ_HASHES_KEY] + ([METRICS_HASHES_KEY] if _metrics_token_config(spec) else [])
    return {"name": "token-hashes", "secret": {
        "secretName": token_hashes_secret_name(cluster),
        "items": [{"key": key, "path": key} for key in keys],
        "defaultMode": 0o444}}


def desired_objects(owner: Owner, spec: BookieClusterSpec, replicas: int,
                    operator_peers: list[Obj] | None = None, lay: Layout | None = None) -> list[Obj]:
    """Everything the cluster needs, in apply order (the NetworkPolicy before the pods it admits traffic to)."""
    objs = [configmap(owner, spec, lay), headless_service(owner, spec, lay), client_service(owner, lay)]
    for optional in (pod_disruption_budget(owner, spec), network_policy(owner, spec, operator_peers or [])):
        if optional is not None:
            objs.append(optional)
    objs.append(statefulset(owner, spec, replicas, lay))
    return objs


def unwanted_objects(owner: Owner, spec: BookieClusterSpec) -> list[tuple[str, str]]:
    """(kind, name) of the operator's objects that the spec turned off: the reconcile deletes them."""
    return [] if spec.network_policy.enabled else [("NetworkPolicy", network_policy_name(owner.name))]


# ------------------------------------------------------------------ switching the implementation in place
# Apache BookKeeper keys the operator writes for its bookies that ours refuses, at Java's own defaults: left out
# of the configuration that bookies of both implementations read while a switch runs. (httpServerClass, which
# Java's bookie cannot start without, is one our bookie accepts and ignores.)
JAVA_DEFAULT_KEYS = ("useHostNameAsBookieID",)
# Keys of our bookie that Apache BookKeeper's reads with another meaning (httpServerTlsEnable makes its admin server
# look for Java key stores): kept out of the shared configuration, in OURS_ONLY_FILE, which only ours append.
OURS_ONLY_KEYS = ("httpServerTlsEnable",)


def as_implementation(spec: BookieClusterSpec, implementation: str) -> BookieClusterSpec:
    return spec.model_copy(update={"implementation": implementation})


def switch_bookie_config(spec: BookieClusterSpec, other: str, lay: Layout | None = None) -> dict[str, Any]:
    """The one bk_server.conf that bookies of spec.implementation and of ``other`` both start from while a switch
    runs (a bookie not yet switched may restart on its own at any time): each implementation's keys, Apache
    BookKeeper ignoring ours. Raises ValueError naming what either implementation refuses in spec.config."""
    models.validate_java_config_overrides(spec.config)
    models.validate_config_overrides(spec.config, spec._implied_zk_keys())
    values: dict[str, Any] = {}
    for implementation in (other, spec.implementation):
        values.update(bookie_config(as_implementation(spec, implementation), lay))
    for key in JAVA_DEFAULT_KEYS:
        values.pop(key, None)
    BookieConfig.model_validate(values)   # our bookie reads this very file, with OURS_ONLY_FILE appended
    for key in OURS_ONLY_KEYS:
        values.pop(key, None)
    return values


def ours_only_config(spec: BookieClusterSpec, lay: Layout | None = None) -> dict[str, Any]:
    """The OURS_ONLY_KEYS of our bookies' configuration, which switch_bookie_config leaves out."""
    ours = bookie_config(as_implementation(spec, "bookie-fleet"), lay)
    return {key: ours[key] for key in OURS_ONLY_KEYS if key in ours}


def switch_configmap(owner: Owner, spec: BookieClusterSpec, other: str, lay: Layout | None = None) -> Obj:
    """The ConfigMap while bookies of spec.implementation and of ``other`` both run: the shared bk_server.conf,
    and the inspector's configuration while Apache BookKeeper's bookies (with their inspector) remain."""
    data = {"bk_server.conf": render_properties(switch_bookie_config(spec, other, lay))}
    if ours_only := ours_only_config(spec, lay):
        data[OURS_ONLY_FILE] = render_properties(ours_only)
    java = spec if spec.implementation == "apache-bookkeeper" else as_implementation(spec, other)
    if java.runs_inspector:
        data["inspector.conf"] = render_properties(inspector_config(java, lay))
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(configmap_name(owner.name), owner),
            "data": data}


def switch_headless_service(owner: Owner, spec: BookieClusterSpec, other: str, lay: Layout | None = None) -> Obj:
    """The headless Service while bookies of both implementations run: the ports of both (the inspector's of the
    Apache BookKeeper bookies)."""
    service = headless_service(owner, spec, lay)
    ports = service["spec"]["ports"]
    names = {p["name"] for p in ports}
    ports += [p for p in headless_service(owner, as_implementation(spec, other), lay)["spec"]["ports"]
              if p["name"] not in names]
    return service


def switch_network_policy(owner: Owner, spec: BookieClusterSpec, other: str, operator_peers: list[Obj]) -> Obj | None:
    """The NetworkPolicy while bookies of both implementations run: the ingress of both (each one's /metrics
    port, the inspector of the Apache BookKeeper bookies)."""
    policy = network_policy(owner, spec, operator_peers)
    if policy is None:
        return None
    theirs = network_policy(owner, as_implementation(spec, other), operator_peers)
    ingress = policy["spec"]["ingress"]
    ingress += [rule for rule in (theirs or {}).get("spec", {}).get("ingress", []) if rule not in ingress]
    return policy
