"""The storage audit's objects, pure ``spec -> manifests``: the report store (claim, Deployment, Service), the
identity Spark runs as (ServiceAccount, and a RoleBinding to the audit ClusterRole the chart installs), and one
run's submitter Job (``spark-submit --master k8s://... --deploy-mode cluster``).

A run: the Job's pod runs spark-submit, which creates the driver pod (with a headless Service; its executors
reach it at its pod IP, Spark 4.3's default) and waits for it; the driver takes a metadata snapshot from
ZooKeeper, creates the executor pods, reads the bookies' entry logs through their admin API and publishes tables,
summary and report to the report store. Driver and executors carry the audit's own token (``<cluster>-audit-token``,
mounted by Spark), which the bookies accept for reads only: never the admin token, so a leaked audit token deletes
nothing. The report store accepts uploads with that token too. spark-submit ends well whatever the driver did, so
the operator follows the driver pod's phase.
"""

from __future__ import annotations

import json
from typing import Any

from bookie_operator import models
from bookie_operator.builders import (
    ADMIN_TOKEN_KEY,
    CLUSTER_LABEL,
    READ_HASHES_KEY,
    Owner,
    audit_token_secret_name,
    bookie_id,
    headless_service_name,
    pod_name,
    token_hashes_secret_name,
)
from bookie_operator.models import HTTP_PORT, INSPECTOR_PORT, AuditSpec, BookieClusterSpec

Obj = dict[str, Any]

REPORTS_PORT = 8000
REPORTS_DIR = "/reports"
SPARK_UID = 185  # the audit image's user (Apache Spark's image's)
TOKEN_DIR = "/opt/audit/audit-token"
TOKEN_HASH_DIR = "/opt/audit/audit-token-hash"  # the report store's: the audit token's hash, never the token
ADMIN_TLS_DIR = "/opt/audit/admin-tls"
ZK_TLS_DIR = "/opt/audit/zk-tls"          # spec.tls.zookeeper's Secret, in the driver (the snapshot's session)
ZK_DIGEST_DIR = "/opt/audit/zk-digest"    # spec.metadataService.digestSecret's Secret, in the driver
SA_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
AUDIT_RUN_LABEL = f"{models.GROUP}/audit-run"
CLI = "local:///opt/bookie-fleet/lib/bookie_audit/cli.py"
OUT_DIR = "/tmp/audit-out"
TEMPLATES_DIR = "/opt/audit/pod-templates"

# What Spark on Kubernetes needs in the BookieCluster's namespace, and nothing more: spark-submit creates the
# driver pod, applies its ConfigMap, its headless Service and the application's NetworkPolicy (only its own pods
# reach the driver and executors; server-side apply: patch) and watches the driver; the driver creates, watches
# and deletes its executor pods and their ConfigMap. No Secrets (Spark only mounts them), no other kinds. The
# chart's ClusterRole `<release>-audit` holds exactly these rules (a test compares them).
CLUSTER_ROLE_RULES: list[Obj] = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "patch", "delete"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["create", "get", "patch"]},
]


def service_account_name(cluster: str) -> str:
    return f"{cluster}-audit"


def pod_templates_name(cluster: str) -> str:
    return f"{cluster}-audit-pod-templates"


def reports_name(cluster: str) -> str:
    return f"{cluster}-audit-reports"


REPORTS_HOSTNAME = "reports"


def reports_url(cluster: str, namespace: str, domain: str = "cluster.local") -> str:
    """Where the report store answers inside the cluster: its pod's own name under its headless Service (a name the
    cluster's DNS gives every pod with a hostname and subdomain)."""
    return f"http://{REPORTS_HOSTNAME}.{reports_name(cluster)}.{namespace}.svc.{domain}:{REPORTS_PORT}"


def labels(cluster: str, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "bookie-audit", "app.kubernetes.io/instance": cluster,
            "app.kubernetes.io/component": component, "app.kubernetes.io/managed-by": "bookie-operator",
            CLUSTER_LABEL: cluster}


def _meta(name: str, owner: Owner, component: str) -> Obj:
    return {"name": name, "namespace": owner.namespace, "labels": labels(owner.name, component),
            "ownerReferences": [owner.reference()]}


def cluster_role(name: str) -> Obj:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": CLUSTER_ROLE_RULES}


def service_account(owner: Owner) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": _meta(service_account_name(owner.name), owner, "spark")}


def role_binding(owner: Owner, cluster_role_name: str) -> Obj:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": _meta(service_account_name(owner.name), owner, "spark"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role_name},
            "subjects": [{"kind": "ServiceAccount", "name": service_account_name(owner.name),
                          "namespace": owner.namespace}]}


def _restricted() -> Obj:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]}}


def reports_claim(owner: Owner, audit: AuditSpec) -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": audit.report_storage.size}}}
    if audit.report_storage.storage_class_name:
        spec["storageClassName"] = audit.report_storage.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": _meta(reports_name(owner.name), owner, "reports"), "spec": spec}


def reports_deployment(owner: Owner, spec: BookieClusterSpec) -> Obj:
    """The report store: the only user of its volume (so a ReadWriteOnce claim does), uploads need the audit
    token, which it checks against the token's hash (``<cluster>-token-hashes``): a compromised report store holds
    no token that reads from the bookies."""
    audit = spec.audit
    name = reports_name(owner.name)
    selector = {"app.kubernetes.io/name": "bookie-audit", "app.kubernetes.io/instance": owner.name,
                "app.kubernetes.io/component": "reports"}
    container = {
        "name": "reports", "image": audit.image, "imagePullPolicy": spec.image_pull_policy,
        "args": ["bookie-audit", "serve-reports", "--dir", REPORTS_DIR, "--port", str(REPORTS_PORT),
                 "--keep", str(audit.reports_kept), "--token-file", f"{TOKEN_HASH_DIR}/{READ_HASHES_KEY}"],
        "ports": [{"name": "http", "containerPort": REPORTS_PORT, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/runs.json", "port": REPORTS_PORT}, "periodSeconds": 5},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
        "securityContext": _restricted(),
        "volumeMounts": [{"name": "reports", "mountPath": REPORTS_DIR},
                         {"name": "audit-token-hash", "mountPath": TOKEN_HASH_DIR, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, owner, "reports"), "spec": {
        "replicas": 1, "strategy": {"type": "Recreate"},  # one writer of a ReadWriteOnce volume
        "selector": {"matchLabels": selector},
        "template": {"metadata": {"labels": labels(owner.name, "reports")}, "spec": {
            "hostname": REPORTS_HOSTNAME, "subdomain": name,
            "securityContext": {"runAsNonRoot": True, "runAsUser": SPARK_UID, "fsGroup": SPARK_UID,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "automountServiceAccountToken": False,
            "containers": [container],
            "volumes": [{"name": "reports", "persistentVolumeClaim": {"claimName": name}},
                        {"name": "audit-token-hash", "secret": {
                            "secretName": token_hashes_secret_name(owner.name),
                            "items": [{"key": READ_HASHES_KEY, "path": READ_HASHES_KEY}], "defaultMode": 0o444}},
                        {"name": "tmp", "emptyDir": {}}]}}}}


def reports_service(owner: Owner) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(reports_name(owner.name), owner, "reports"),
            "spec": {"clusterIP": "None",  # headless: the pod's DNS name, reports.<this>.<ns>.svc
                     "selector": {"app.kubernetes.io/name": "bookie-audit", "app.kubernetes.io/instance": owner.name,
                                  "app.kubernetes.io/component": "reports"},
                     "ports": [{"name": "http", "port": REPORTS_PORT, "targetPort": REPORTS_PORT,
                                "protocol": "TCP"}]}}


def spark_pod_template() -> Obj:
    """What Spark's driver and executor pods add to what Spark builds: the restricted Pod Security Standard
    (non-root, the runtime's seccomp profile, no privilege escalation, no capabilities)."""
    return {"apiVersion": "v1", "kind": "Pod", "spec": {
        "securityContext": {"runAsNonRoot": True, "runAsUser": SPARK_UID, "runAsGroup": SPARK_UID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "spark", "securityContext": {"allowPrivilegeEscalation": False,
                                                             "capabilities": {"drop": ["ALL"]}}}]}}


def pod_templates(owner: Owner) -> Obj:
    text = json.dumps(spark_pod_template(), indent=2, sort_keys=True) + "\n"  # JSON is YAML to Spark's reader
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(pod_templates_name(owner.name), owner, "spark"),
            "data": {"driver.yaml": text, "executor.yaml": text}}


def desired_objects(owner: Owner, spec: BookieClusterSpec, cluster_role_name: str) -> list[Obj]:
    """What must exist while the audit is scheduled (runs add their Job)."""
    if spec.audit.schedule is None:
        return []
    return [service_account(owner), role_binding(owner, cluster_role_name), pod_templates(owner),
            reports_claim(owner, spec.audit),
            reports_deployment(owner, spec), reports_service(owner)]


def bookie_inputs(owner: Owner, spec: BookieClusterSpec, ordinals: list[int]) -> list[str]:
    """The audit's inputs, one per bookie, by its stable DNS name (the headless Service): our bookies' entry logs
    through their admin API; Apache BookKeeper's through the inspector beside each (spec.inspector), else, with
    the inspector off, their REST API only (no entry logs: no garbage per log, pinning or replication check)."""
    out = []
    domain = spec.cluster_domain
    scheme = "https" if spec.tls is not None and spec.tls.admin is not None else "http"
    for ordinal in ordinals:
        host = f"{pod_name(owner.name, ordinal)}.{headless_service_name(owner.name)}.{owner.namespace}.svc.{domain}"
        bid = bookie_id(owner.name, owner.namespace, ordinal, domain)
        if spec.runs_inspector:
            out += ["--logs", f"{bid}=bookie+{scheme}://{host}:{INSPECTOR_PORT}"]
        elif spec.implementation == "apache-bookkeeper":
            out += ["--rest-bookie", f"{bid}=http://{host}:{HTTP_PORT}"]
        else:
            out += ["--logs", f"{bid}=bookie+{scheme}://{host}:{HTTP_PORT}"]
    return out


def spark_conf(owner: Owner, spec: BookieClusterSpec, run_id: str) -> dict[str, str]:
    audit = spec.audit
    secret = audit_token_secret_name(owner.name)
    run_labels = {**labels(owner.name, "spark"), AUDIT_RUN_LABEL: run_id}
    conf = {
        "spark.kubernetes.namespace": owner.namespace,
        "spark.kubernetes.container.image": audit.image,
        "spark.kubernetes.container.image.pullPolicy": spec.image_pull_policy,
        # The API server by its address from the pod's environment (no reliance on cluster DNS for it).
        "spark.kubernetes.driver.master": "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
        "spark.kubernetes.authenticate.submission.caCertFile": f"{SA_TOKEN_DIR}/ca.crt",
        "spark.kubernetes.authenticate.submission.oauthTokenFile": f"{SA_TOKEN_DIR}/token",
        "spark.kubernetes.authenticate.driver.serviceAccountName": service_account_name(owner.name),
        "spark.kubernetes.driver.pod.name": f"{run_id}-driver",
        "spark.kubernetes.executor.podNamePrefix": run_id,
        "spark.kubernetes.submission.waitAppCompletion": "true",
        "spark.kubernetes.executor.deleteOnTermination": "true",
        f"spark.kubernetes.driver.secrets.{secret}": TOKEN_DIR,
        f"spark.kubernetes.executor.secrets.{secret}": TOKEN_DIR,
        "spark.executor.instances": str(audit.executors),
        "spark.executor.cores": str(audit.executor_cores),
        "spark.executor.memory": audit.executor_memory,
        "spark.driver.memory": audit.driver_memory,
        "spark.ui.enabled": "false",
        "spark.kubernetes.driver.podTemplateFile": f"{TEMPLATES_DIR}/driver.yaml",
        "spark.kubernetes.executor.podTemplateFile": f"{TEMPLATES_DIR}/executor.yaml",
        "spark.kubernetes.driver.podTemplateContainerName": "spark",
        "spark.kubernetes.executor.podTemplateContainerName": "spark",
    }
    if audit.jvm_options:
        conf["spark.driver.extraJavaOptions"] = conf["spark.executor.extraJavaOptions"] = " ".join(audit.jvm_options)
    if spec.tls is not None and spec.tls.admin is not None:  # HTTPS admin API: its CA in driver and executors
        conf[f"spark.kubernetes.driver.secrets.{spec.tls.admin.secret_name}"] = ADMIN_TLS_DIR
        conf[f"spark.kubernetes.executor.secrets.{spec.tls.admin.secret_name}"] = ADMIN_TLS_DIR
    for secret_name, directory in _zookeeper_secrets(spec).items():  # only the driver talks to ZooKeeper
        conf[f"spark.kubernetes.driver.secrets.{secret_name}"] = directory
    for key, value in run_labels.items():
        conf[f"spark.kubernetes.driver.label.{key}"] = value
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    return conf


def _zookeeper_secrets(spec: BookieClusterSpec) -> dict[str, str]:
    """Secret name -> where the driver mounts it: what the bookies use to reach ZooKeeper (TLS, digest). One
    Secret holding both is mounted once (Spark keys its mounts by Secret name)."""
    mounts: dict[str, str] = {}
    if spec.tls is not None and spec.tls.zookeeper is not None:
        mounts[spec.tls.zookeeper.secret_name] = ZK_TLS_DIR
    digest = spec.metadata_service.digest_secret
    if digest is not None:
        mounts.setdefault(digest.secret_name, ZK_DIGEST_DIR)
    return mounts


def zookeeper_args(spec: BookieClusterSpec) -> list[str]:
    """The snapshot's ZooKeeper identity as ``bookie-audit``'s ``--zk-*`` options: the bookies' own (their TLS
    client certificate and CA, their digest), so it reads znodes that zkEnableSecurity keeps to the fleet."""
    args: list[str] = []
    mounts = _zookeeper_secrets(spec)
    if spec.tls is not None and spec.tls.zookeeper is not None:
        d = mounts[spec.tls.zookeeper.secret_name]
        args += ["--zk-tls", "--zk-tls-ca", f"{d}/ca.crt", "--zk-tls-cert", f"{d}/tls.crt",
                 "--zk-tls-key", f"{d}/tls.key"]
    digest = spec.metadata_service.digest_secret
    if digest is not None:
        args += ["--zk-digest-file", f"{mounts[digest.secret_name]}/{digest.key}"]
    return args


def audit_job(owner: Owner, spec: BookieClusterSpec, run_id: str, ordinals: list[int]) -> Obj:
    """One run's submitter: spark-submit in cluster mode, waiting for the driver (its exit status is the Job's)."""
    audit = spec.audit
    ms = spec.metadata_service
    conf = spark_conf(owner, spec, run_id)
    args = ["spark-submit", "--master", "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
            "--deploy-mode", "cluster", "--name", run_id]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    args += [CLI, "run", "--zk", ms.zk_servers, "--root", ms.ledgers_root, *zookeeper_args(spec), "--mode", audit.mode,
             "--min-age-days", f"{audit.min_age_days:g}", *bookie_inputs(owner, spec, ordinals),
             "--bookie-token-file", f"{TOKEN_DIR}/{ADMIN_TOKEN_KEY}", "--out", OUT_DIR,
             *(["--bookie-ca-file", f"{ADMIN_TLS_DIR}/ca.crt"] if spec.tls is not None and spec.tls.admin else []),
             "--publish", reports_url(owner.name, owner.namespace, spec.cluster_domain), "--run-id", run_id]
    container = {"name": "spark-submit", "image": audit.image, "imagePullPolicy": spec.image_pull_policy,
                 "args": args, "securityContext": _restricted(),
                 "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                 # spark-submit's own JVM (the submission client, waiting for the driver) takes them from here.
                 "env": [{"name": "SPARK_SUBMIT_OPTS", "value": " ".join(audit.jvm_options)}] if audit.jvm_options
                 else [],
                 "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"},
                                  {"name": "pod-templates", "mountPath": TEMPLATES_DIR, "readOnly": True}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {**_meta(run_id, owner, "spark"),
                         "labels": {**labels(owner.name, "spark"), AUDIT_RUN_LABEL: run_id}},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": audit.timeout_seconds,
                     "ttlSecondsAfterFinished": 7 * 86400,
                     "template": {"metadata": {"labels": {**labels(owner.name, "spark"), AUDIT_RUN_LABEL: run_id}},
                                  "spec": {"restartPolicy": "Never",
                                           "serviceAccountName": service_account_name(owner.name),
                                           "securityContext": {"runAsNonRoot": True, "runAsUser": SPARK_UID,
                                                               "seccompProfile": {"type": "RuntimeDefault"}},
                                           "containers": [container],
                                           "volumes": [{"name": "tmp", "emptyDir": {}},
                                                       {"name": "pod-templates", "configMap": {
                                                           "name": pod_templates_name(owner.name)}}]}}}}


def run_id(cluster: str, scheduled_for: str, on_request: bool = False) -> str:
    """``<cluster>-audit-20261124t0300`` from the schedule time, ``...t030512`` (to the second) for a run on
    request, so that it never takes a fire time's name: sorts by time, a DNS label (at most 63)."""
    digits = 15 if on_request else 13
    stamp = scheduled_for.replace("-", "").replace(":", "")[:digits].lower()  # 20261124t0300
    return f"{cluster[:63 - len('-audit-') - len(stamp)]}-audit-{stamp}"
