"""Bad input: the API server refuses invalid specs with a message naming the field (the generated schema and
its CEL rules); what only the operator can judge becomes an InvalidSpec condition and a Warning Event, and
nothing is applied (no half-applied change, no crash loop). A known image of the other implementation than
spec.implementation is refused by the API server's rule. Fields that would give the spec's writer more than
the bookies need (here a hostPath volume and another ServiceAccount) are refused that way too, naming the field,
and so is a Secret of the namespace that a cluster named as its prefix (`postgres` for `postgres-password`) would
mount: a Secret is the cluster's own by its label or ownerReference, never by its name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import JAVA, OperatorProcess, await_events, bookie_cluster, condition, get_cluster
from tests.support.kube import KubeTarget, wait_for

ZK = "127.0.0.1:2181"


@pytest.mark.parametrize(("spec", "message"), [
    ({"diskPolicy": {"readOnlyHighWaterMark": 0.6, "writableLowWaterMark": 0.7}},
     "spec.diskPolicy.writableLowWaterMark must be <= spec.diskPolicy.readOnlyHighWaterMark"),
    ({"diskPolicy": {"readOnlyHighWaterMark": 1.5}}, "spec.diskPolicy.readOnlyHighWaterMark"),
    ({"replicas": 2, "ensembleSize": 3}, "spec.replicas must be >= spec.ensembleSize"),
    ({"compaction": {"schedule": "61 * * * *"}}, "spec.compaction.schedule must be a 5-field cron expression"),
    ({"gc": {"minorCompactionThreshold": 0.9, "majorCompactionThreshold": 0.5}},
     "spec.gc.minorCompactionThreshold must be < spec.gc.majorCompactionThreshold"),
    ({"config": {"diskUsageThreshold": 2}}, "spec.config.diskUsageThreshold"),
    ({"config": {"noSuchKey": 1}}, 'unknown field "spec.config.noSuchKey"'),
    ({"config": {"journalDirectories": "/elsewhere"}}, 'unknown field "spec.config.journalDirectories"'),
    # A Java-only key is fine for Java bookies (next test); a typo of one is refused, named.
    ({**JAVA, "config": {"numAddWorkerThreads": 2, "dbStorage_writeCacheMaxSizeMbb": 64}},
     'unknown field "spec.config.dbStorage_writeCacheMaxSizeMbb"'),
    ({"config": {"dbStorage_rocksDB_blockCacheSize": 1, "numIOThreads": 2}},
     "spec.config: Apache BookKeeper-only keys need implementation apache-bookkeeper"),
    ({**JAVA, "config": {"gcDiskPressureRatio": 0.5}},
     "are bookie-fleet only"),
    ({"storage": {"journal": {"size": "lots"}}}, "spec.storage.journal.size"),
    ({"jvmOptions": ["-Xmx1g"]}, "spec.jvmOptions: only for implementation apache-bookkeeper"),
    ({**JAVA, "jvmOptions": ["Xmx1g"]}, "spec.jvmOptions[0]"),
    # Java bookies would still serve plaintext clients: only BookieAuthZFactory refuses them.
    ({**JAVA, "tls": {"bookie": {"secretName": "bk-tls"}, "clientAuthentication": True}},
     "spec.tls.clientAuthentication on implementation apache-bookkeeper needs spec.tls.authorizedRoles"),
    # spec.image of the other implementation (the default image is bookie-fleet's).
    ({"image": "registry.example.com/apache/bookkeeper:4.17.3@sha256:0123"},
     "spec.image is an image of the other implementation than spec.implementation"),
    ({"implementation": "apache-bookkeeper"}, "spec.image is an image of the other implementation"),
])
def test_the_api_server_refuses_invalid_specs_naming_the_field(
        kube: KubeTarget, kube_namespace: str, bookie_crd: str, spec: dict[str, Any], message: str) -> None:
    manifest = yaml.safe_dump(bookie_cluster("bad", ZK, "/bad/ledgers", **spec))
    result = kube.kubectl("apply", "-n", kube_namespace, "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_a_java_bookie_cluster_accepts_apache_bookkeeper_only_keys(kube: KubeTarget, kube_namespace: str,
                                                                  bookie_crd: str) -> None:
    manifest = bookie_cluster("java", ZK, "/java/ledgers", **JAVA,
                              config={"numAddWorkerThreads": 2, "dbStorage_rocksDB_blockCacheSize": 1 << 26})
    kube.apply(manifest, namespace=kube_namespace)
    stored = get_cluster(kube, kube_namespace, "java")["spec"]["config"]
    assert stored["numAddWorkerThreads"] == 2 and stored["dbStorage_rocksDB_blockCacheSize"] == 1 << 26


def test_what_only_the_operator_can_judge_is_a_condition_and_an_event(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns = kube_namespace
    operator_factory(ns)
    # Each key is in range, but the bookie configuration model refuses the combination.
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers",
                              config={"diskUsageLwmThreshold": 0.97, "diskUsageThreshold": 0.9,
                                      "diskUsageWarnThreshold": 0.85}), namespace=ns)

    def invalid() -> dict[str, Any] | None:
        obj = get_cluster(kube, ns, "bk")
        c = condition(obj, "Degraded")
        return obj if c and c["reason"] == "InvalidSpec" else None

    obj = wait_for(invalid, 30, what="an InvalidSpec condition")
    degraded = condition(obj, "Degraded")
    assert degraded is not None and "diskUsageLwmThreshold must be <= diskUsageThreshold" in degraded["message"]
    ready = condition(obj, "Ready")
    assert ready is not None and ready["status"] == "False" and ready["reason"] == "InvalidSpec"
    assert len(await_events(kube, ns, "bk", "InvalidSpec", at_least=1)) == 1       # once, not every tick
    assert kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk") is None
    assert kube.get(f"/api/v1/namespaces/{ns}/configmaps/bk-config") is None

    # Fixing the spec lets the reconcile go on.
    kube.kubectl("-n", ns, "patch", "bookieclusters.bookie-fleet.dev", "bk", "--type", "json", "-p",
                 '[{"op": "remove", "path": "/spec/config/diskUsageLwmThreshold"}]')
    wait_for(lambda: kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/bk"), 30, what="the StatefulSet")

    # More than the bookies need, which the operator's settings do not allow: refused, naming the fields.
    kube.apply(bookie_cluster("wide", zookeeper.connect_string, f"/{ns}/wide", serviceAccountName="default",
                              extraVolumes=[{"name": "node", "hostPath": {"path": "/var/run"}}]), namespace=ns)
    [event] = await_events(kube, ns, "wide", "InvalidSpec", at_least=1)
    degraded = condition(get_cluster(kube, ns, "wide"), "Degraded")
    assert degraded is not None and degraded["reason"] == "InvalidSpec"
    for field in ("spec.serviceAccountName", "spec.extraVolumes[0].hostPath: a node's file system"):
        assert field in degraded["message"] and field in event["message"], (degraded, event)
    assert kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/wide") is None

    # The spec's writer chooses the cluster's name: naming it after another team's Secret does not make that
    # Secret the cluster's own (its pods, running an image of the writer's choosing, would read it).
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "postgres-password",
                                                                   "labels": {"app": "postgres"}},
                "stringData": {"password": "the database's"}}, namespace=ns)
    kube.apply(bookie_cluster("postgres", zookeeper.connect_string, f"/{ns}/postgres", env=[
        {"name": "LOOT", "valueFrom": {"secretKeyRef": {"name": "postgres-password", "key": "password"}}}]),
        namespace=ns)
    [event] = await_events(kube, ns, "postgres", "InvalidSpec", at_least=1, timeout=60)
    refusal = ("spec.env[0].valueFrom.secretKeyRef.name: Secret postgres-password is not the cluster's own (neither "
               "owned by BookieCluster postgres nor labelled bookie-fleet.dev/cluster=postgres)")
    assert refusal in event["message"], event
    assert kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/postgres") is None
    # Whoever may write the Secret can make it the cluster's own: the next tick goes on.
    kube.kubectl("-n", ns, "label", "secret", "postgres-password", "bookie-fleet.dev/cluster=postgres")
    wait_for(lambda: kube.get(f"/apis/apps/v1/namespaces/{ns}/statefulsets/postgres"), 60,
             what="the StatefulSet once the Secret is labelled the cluster's own")
