"""The storage audit's objects built from a spec: nothing without a schedule; the report store, Spark's identity
bound to the audit ClusterRole, and a run's spark-submit Job with every bookie as an input (ours through their
entry-log endpoint, Apache BookKeeper's by REST); the chart's audit ClusterRole holds exactly the rules Spark
needs."""

from __future__ import annotations

import subprocess

import yaml
from bookie_operator import audit_builders as ab
from bookie_operator import builders
from bookie_operator.builders import Owner
from bookie_operator.models import parse_spec

from tests.operator.test_operator_helm_chart import CHART

OWNER = Owner("bk", "ns1", "uid-1")
METADATA = {"zkServers": "zk-0.zk:2181", "ledgersRoot": "/bk/ledgers"}
BASE = {"metadataService": METADATA, "replicas": 3, "ensembleSize": 2}


def test_no_schedule_no_objects() -> None:
    assert ab.desired_objects(OWNER, parse_spec(BASE), "role") == []


def test_standing_objects_of_a_scheduled_audit() -> None:
    spec = parse_spec({**BASE, "audit": {"schedule": "0 3 * * *", "reportsKept": 4,
                                         "reportStorage": {"size": "2Gi", "storageClassName": "fast"}}})
    objs = {o["kind"]: o for o in ab.desired_objects(OWNER, spec, "bkop-bookie-operator-audit")}
    assert set(objs) == {"ServiceAccount", "RoleBinding", "ConfigMap", "PersistentVolumeClaim", "Deployment",
                         "Service"}
    template = yaml.safe_load(objs["ConfigMap"]["data"]["executor.yaml"])["spec"]
    assert template["securityContext"]["runAsNonRoot"] and template["securityContext"]["seccompProfile"]
    assert template["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    binding = objs["RoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "bkop-bookie-operator-audit"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bk-audit", "namespace": "ns1"}]
    claim = objs["PersistentVolumeClaim"]["spec"]
    assert claim["resources"]["requests"]["storage"] == "2Gi" and claim["storageClassName"] == "fast"
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[:2] == ["bookie-audit", "serve-reports"] and args[args.index("--keep") + 1] == "4"
    # The audit token's hash only: the report store holds no token, neither the audit's nor the admin's.
    assert pod["volumes"][1]["secret"] == {"secretName": "bk-token-hashes", "defaultMode": 0o444,
                                           "items": [{"key": "read", "path": "read"}]}
    assert args[args.index("--token-file") + 1] == f"{ab.TOKEN_HASH_DIR}/read"
    assert pod["securityContext"]["runAsNonRoot"] and pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"]
    for obj in objs.values():
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == "bookie-audit", "never the bookies' selector"


def _conf(args: list[str]) -> dict[str, str]:
    return dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")


def test_a_run_is_spark_submit_in_cluster_mode_over_every_bookie() -> None:
    spec = parse_spec({**BASE, "audit": {"schedule": "0 3 * * *", "mode": "full", "executors": 3,
                                         "executorMemory": "2g", "minAgeDays": 1.5}})
    run = ab.run_id("bk", "2026-11-24T03:00:00Z")
    assert run == "bk-audit-20261124t0300"
    job = ab.audit_job(OWNER, spec, run, [0, 1, 2])
    assert job["metadata"]["name"] == run and job["spec"]["backoffLimit"] == 0
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "bk-audit" and pod["restartPolicy"] == "Never"
    args = pod["containers"][0]["args"]
    master = "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"
    assert args[:5] == ["spark-submit", "--master", master, "--deploy-mode", "cluster"]
    conf = _conf(args)
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == "bk-audit"
    assert conf["spark.kubernetes.driver.secrets.bk-audit-token"] == ab.TOKEN_DIR
    assert conf["spark.kubernetes.executor.secrets.bk-audit-token"] == ab.TOKEN_DIR
    assert not any("admin-token" in key or "admin-token" in value for key, value in conf.items())
    assert (conf["spark.executor.instances"], conf["spark.executor.memory"]) == ("3", "2g")
    assert conf[f"spark.kubernetes.driver.label.{ab.AUDIT_RUN_LABEL}"] == run
    for key, value in builders.audit_spark_selector("bk").items():  # what the bookies' NetworkPolicy admits
        assert conf[f"spark.kubernetes.driver.label.{key}"] == conf[f"spark.kubernetes.executor.label.{key}"] == value
    app = args[args.index(ab.CLI):]
    assert app[:6] == [ab.CLI, "run", "--zk", "zk-0.zk:2181", "--root", "/bk/ledgers"]
    logs = [app[i + 1] for i, a in enumerate(app) if a == "--logs"]
    assert logs == [f"bk-{i}.bk-headless.ns1.svc.cluster.local:3181="
                    f"bookie+http://bk-{i}.bk-headless.ns1.svc.cluster.local:8080" for i in range(3)]
    assert app[app.index("--mode") + 1] == "full" and app[app.index("--min-age-days") + 1] == "1.5"
    assert app[app.index("--publish") + 1] == "http://reports.bk-audit-reports.ns1.svc.cluster.local:8000"
    assert app[app.index("--run-id") + 1] == run


def test_jvm_options_reach_spark_submit_the_driver_and_the_executors() -> None:
    options = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    spec = parse_spec({**BASE, "audit": {"schedule": "0 3 * * *", "jvmOptions": options}})
    container = ab.audit_job(OWNER, spec, "r", [0])["spec"]["template"]["spec"]["containers"][0]
    conf = _conf(container["args"])
    assert conf["spark.driver.extraJavaOptions"] == conf["spark.executor.extraJavaOptions"] == " ".join(options)
    assert container["env"] == [{"name": "SPARK_SUBMIT_OPTS", "value": " ".join(options)}]
    plain = ab.audit_job(OWNER, parse_spec({**BASE, "audit": {"schedule": "0 3 * * *"}}), "r", [0])
    container = plain["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [] and "spark.driver.extraJavaOptions" not in _conf(container["args"])


def test_apache_bookkeeper_bookies_are_audited_through_their_inspectors() -> None:
    spec = parse_spec({**BASE, "implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0",
                       "audit": {"schedule": "0 3 * * *"}})
    args = ab.audit_job(OWNER, spec, "r", [0, 1])["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--rest-bookie" not in args
    assert [args[i + 1] for i, a in enumerate(args) if a == "--logs"] == [
        f"bk-{i}.bk-headless.ns1.svc.cluster.local:3181=bookie+http://bk-{i}.bk-headless.ns1.svc.cluster.local:8081"
        for i in range(2)]


def test_apache_bookkeeper_bookies_without_inspectors_are_audited_by_rest() -> None:
    spec = parse_spec({**BASE, "implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0",
                       "audit": {"schedule": "0 3 * * *"}, "inspector": {"enabled": False}})
    args = ab.audit_job(OWNER, spec, "r", [0, 1])["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--logs" not in args
    assert [args[i + 1] for i, a in enumerate(args) if a == "--rest-bookie"] == [
        f"bk-{i}.bk-headless.ns1.svc.cluster.local:3181=http://bk-{i}.bk-headless.ns1.svc.cluster.local:8080"
        for i in range(2)]


def test_run_ids_are_dns_labels_even_for_long_cluster_names() -> None:
    run = ab.run_id("c" * 60, "2026-11-24T03:00:00Z")
    assert len(run) <= 63 and run.endswith("-audit-20261124t0300")


def test_the_charts_audit_cluster_role_is_the_builders() -> None:
    rendered = subprocess.run(["helm", "template", "bkop", str(CHART)], capture_output=True, text=True, check=True)
    roles = [d for d in yaml.safe_load_all(rendered.stdout)
             if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == "bkop-bookie-operator-audit"]
    assert len(roles) == 1 and roles[0]["rules"] == ab.CLUSTER_ROLE_RULES
    deployment = next(d for d in yaml.safe_load_all(rendered.stdout) if d and d["kind"] == "Deployment")
    assert "--audit-cluster-role=bkop-bookie-operator-audit" in deployment["spec"]["template"]["spec"][
        "containers"][0]["args"]


def test_an_https_admin_api_is_read_over_https_with_its_ca() -> None:
    spec = parse_spec({**BASE, "tls": {"admin": {"secretName": "admin-tls"}}, "audit": {"schedule": "0 3 * * *"}})
    args = ab.audit_job(OWNER, spec, "r", [0])["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--logs") + 1].split("=", 1)[1].startswith("bookie+https://bk-0.bk-headless")
    assert args[args.index("--bookie-ca-file") + 1] == f"{ab.ADMIN_TLS_DIR}/ca.crt"
    conf = _conf(args)
    assert conf["spark.kubernetes.driver.secrets.admin-tls"] == conf["spark.kubernetes.executor.secrets.admin-tls"]


def test_the_snapshot_reaches_zookeeper_with_the_bookies_tls_identity_and_digest() -> None:
    spec = parse_spec({**BASE, "tls": {"zookeeper": {"secretName": "zk-tls"}},
                       "metadataService": {**METADATA,
                                           "digestSecret": {"secretName": "zk-digest", "key": "auth"}},
                       "config": {"zkEnableSecurity": "true"}, "audit": {"schedule": "0 3 * * *"}})
    args = ab.audit_job(OWNER, spec, "r", [0])["spec"]["template"]["spec"]["containers"][0]["args"]
    run = args[args.index("run"):]
    assert "--zk-tls" in run
    assert run[run.index("--zk-tls-ca") + 1] == f"{ab.ZK_TLS_DIR}/ca.crt"
    assert run[run.index("--zk-tls-cert") + 1] == f"{ab.ZK_TLS_DIR}/tls.crt"
    assert run[run.index("--zk-tls-key") + 1] == f"{ab.ZK_TLS_DIR}/tls.key"
    assert run[run.index("--zk-digest-file") + 1] == f"{ab.ZK_DIGEST_DIR}/auth"
    conf = _conf(args)
    assert conf["spark.kubernetes.driver.secrets.zk-tls"] == ab.ZK_TLS_DIR
    assert conf["spark.kubernetes.driver.secrets.zk-digest"] == ab.ZK_DIGEST_DIR
    assert not any(key.startswith("spark.kubernetes.executor.secrets.zk-") for key in conf)  # the driver's only


def test_one_secret_holding_tls_and_digest_is_mounted_once() -> None:
    spec = parse_spec({**BASE, "tls": {"zookeeper": {"secretName": "zk-identity"}},
                       "metadataService": {**METADATA, "digestSecret": {"secretName": "zk-identity"}},
                       "audit": {"schedule": "0 3 * * *"}})
    args = ab.audit_job(OWNER, spec, "r", [0])["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--zk-digest-file") + 1] == f"{ab.ZK_TLS_DIR}/digest"
    assert _conf(args)["spark.kubernetes.driver.secrets.zk-identity"] == ab.ZK_TLS_DIR


def test_without_zookeeper_credentials_the_snapshot_takes_none() -> None:
    spec = parse_spec({**BASE, "audit": {"schedule": "0 3 * * *"}})
    args = ab.audit_job(OWNER, spec, "r", [0])["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith("--zk-")]
