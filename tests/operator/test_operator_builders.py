"""Desired manifests are pure functions of the spec: what a BookieCluster turns into."""

from __future__ import annotations

from typing import Any

from bookie.config import BookieConfig
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")


def container(sts: dict[str, Any]) -> dict[str, Any]:
    return sts["spec"]["template"]["spec"]["containers"][0]


def test_statefulset_has_one_claim_template_per_volume_and_mounts_them() -> None:
    s = spec(storage={"journal": {"size": "5Gi", "count": 1}, "ledgers": {"size": "20Gi", "count": 2,
                                                                           "storageClassName": "fast"}})
    sts = builders.statefulset(OWNER, s, 3)
    claims = {c["metadata"]["name"]: c["spec"] for c in sts["spec"]["volumeClaimTemplates"]}
    assert sorted(claims) == ["journal-0", "ledgers-0", "ledgers-1"]
    assert claims["ledgers-1"]["resources"]["requests"]["storage"] == "20Gi"
    assert claims["ledgers-1"]["storageClassName"] == "fast"
    assert "storageClassName" not in claims["journal-0"]
    mounts = {m["name"]: m["mountPath"] for m in container(sts)["volumeMounts"]}
    assert mounts["ledgers-1"] == "/bookie/ledgers-1"
    conf = builders.bookie_config(s)
    assert conf["ledgerDirectories"] == "/bookie/ledgers-0,/bookie/ledgers-1"
    assert builders.volume_claim_names("bk", s, 4) == ["journal-0-bk-4", "ledgers-0-bk-4", "ledgers-1-bk-4"]


def test_claims_never_carry_owner_references_and_outlive_scale_down() -> None:
    sts = builders.statefulset(OWNER, spec(), 3)
    for claim in sts["spec"]["volumeClaimTemplates"]:
        assert "ownerReferences" not in claim["metadata"]
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    deleting = builders.statefulset(OWNER, spec(storage={"deleteClaimsWithCluster": True}), 3)
    assert deleting["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == "Delete"


def test_every_other_object_is_owned_by_the_bookie_cluster() -> None:
    for obj in builders.desired_objects(OWNER, spec(), 3):
        ref = obj["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("BookieCluster", "bk", "uid-1", True)


def test_readiness_probe_is_the_bookie_is_ready_endpoint_and_updates_are_rolled_by_the_operator() -> None:
    sts = builders.statefulset(OWNER, spec(), 3)
    probe = container(sts)["readinessProbe"]["httpGet"]
    assert probe == {"path": "/api/v1/bookie/is_ready", "port": "http"}
    assert sts["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert sts["spec"]["serviceName"] == "bk-headless"


def test_config_checksum_rolls_pods_only_when_the_bookie_config_changes() -> None:
    def checksum(**fields: object) -> str:
        sts = builders.statefulset(OWNER, spec(**fields), 3)
        return str(sts["spec"]["template"]["metadata"]["annotations"][builders.CHECKSUM_ANNOTATION])

    base = checksum()
    assert checksum(replicas=5) == base
    assert checksum(diskPolicy={"readOnlyHighWaterMark": 0.9}) == base  # operator-side policy only
    assert checksum(config={"flushInterval": 500}) != base
    assert checksum(gc={"gcWaitTimeSeconds": 60}) != base


def test_bookie_ids_are_stable_hostnames_not_pod_ips() -> None:
    assert builders.bookie_id("bk", "ns", 12) == "bk-12.bk-headless.ns.svc.cluster.local:3181"
    env = {e["name"]: e for e in container(builders.statefulset(OWNER, spec(), 3))["env"]}
    assert env["BOOKIE_ID"]["value"] == "$(POD_NAME).bk-headless.$(POD_NAMESPACE).svc.cluster.local:3181"
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}


def test_python_bookie_config_is_a_valid_bookie_config_with_what_the_operator_needs() -> None:
    s = spec(config={"journalSyncData": False})
    conf = builders.bookie_config(s)
    parsed = BookieConfig.from_properties(builders.render_properties(conf))
    assert parsed.http_server_enabled and parsed.read_only_mode_enabled
    assert parsed.force_allow_compaction and parsed.is_force_gc_allow_when_no_space
    assert parsed.zk_connect == "zk-0.zk:2181" and parsed.ledgers_root == "/ledgers"
    assert parsed.journal_sync_data is False
    assert parsed.auto_recovery_daemon_enabled and parsed.lost_bookie_recovery_delay == 60
    assert container(builders.statefulset(OWNER, s, 3))["command"][:2] == ["sh", "-c"]


def test_apache_bookkeeper_gets_its_config_file_and_per_pod_identity_through_bk_variables() -> None:
    s = spec(implementation="apache-bookkeeper", image="apache/bookkeeper:4.17.2")
    c = container(builders.statefulset(OWNER, s, 3))
    assert "command" not in c
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["BK_bookieId"] == "$(BOOKIE_ID)" and env["BK_advertisedAddress"] == "$(POD_IP)"
    assert {"name": "config", "mountPath": "/opt/bookkeeper/conf/bk_server.conf", "subPath": "bk_server.conf",
            "readOnly": True} in c["volumeMounts"]
    conf = builders.bookie_config(s)
    assert conf["autoRecoveryDaemonEnabled"] is True and conf["useHostNameAsBookieID"] is False


def test_services_and_pdb() -> None:
    headless = builders.headless_service(OWNER, spec())
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    assert {p["port"] for p in builders.client_service(OWNER)["spec"]["ports"]} == {3181, 8080}
    pdb = builders.pod_disruption_budget(OWNER, spec(pdb={"maxUnavailable": 2}))
    assert pdb is not None and pdb["spec"]["maxUnavailable"] == 2
    assert builders.pod_disruption_budget(OWNER, spec(pdb={"enabled": False})) is None


def test_scheduling_fields_pass_through() -> None:
    tol = [{"key": "dedicated", "operator": "Equal", "value": "bookies", "effect": "NoSchedule"}]
    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]
    s = spec(tolerations=tol, topologySpreadConstraints=spread, affinity={"podAntiAffinity": {}},
             resources={"requests": {"cpu": "2"}, "limits": {"memory": "4Gi"}})
    pod = builders.statefulset(OWNER, s, 3)["spec"]["template"]["spec"]
    assert pod["tolerations"] == tol and pod["topologySpreadConstraints"] == spread
    assert pod["affinity"] == {"podAntiAffinity": {}}
    # A request given replaces the default one; the others stay; limits are passed as given.
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "2", "memory": "384Mi"},
                                                 "limits": {"memory": "4Gi"}}


def test_placement_defaults_a_production_user_expects() -> None:
    pod = builders.statefulset(OWNER, spec(), 3)["spec"]["template"]["spec"]
    selector = {"matchLabels": builders.selector_labels(OWNER.name)}
    assert pod["affinity"] == {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}}]}}
    assert pod["topologySpreadConstraints"] == [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                 "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}]
    # Not BestEffort: 64 MB write cache + 64 MB read-ahead cache + 256 MB for the process.
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "500m", "memory": "384Mi"}}


def test_memory_request_follows_the_cache_sizes() -> None:
    def memory(**overrides: Any) -> str:
        pod = builders.statefulset(OWNER, spec(**overrides), 3)["spec"]["template"]["spec"]
        return str(pod["containers"][0]["resources"]["requests"]["memory"])

    assert memory(config={"dbStorage_writeCacheMaxSizeMb": 1024, "dbStorage_readAheadCacheMaxSizeMb": 512}) \
        == f"{1024 + 512 + 256}Mi"
    java = {"implementation": "apache-bookkeeper", "image": "apache/bookkeeper:4.17.3"}
    # BookKeeper's caches: a quarter of direct memory each
    assert memory(**java) == builders.mebibytes(512 + 512 + 1024)
    assert memory(**java, config={"dbStorage_writeCacheMaxSizeMb": 256}) == f"{256 + 512 + 1024}Mi"


def test_placement_defaults_can_be_turned_off() -> None:
    pod = builders.statefulset(OWNER, spec(affinity={}, topologySpreadConstraints=[]), 3)["spec"]["template"]["spec"]
    assert "affinity" not in pod and "topologySpreadConstraints" not in pod


def test_ordinals_sort_as_integers() -> None:
    names = ["bk-10", "bk-9", "bk-2", "bk-1"]
    assert sorted(names, key=lambda n: builders.ordinal_of(n) or 0) == ["bk-1", "bk-2", "bk-9", "bk-10"]
    assert builders.ordinal_of("bk-x") is None


def test_escape_hatches_reach_the_pod() -> None:
    s = spec(implementation="apache-bookkeeper", image="apache/bookkeeper:4.17.3",
             jvmOptions=["-Xmx2g", "-XX:+UseG1GC"],
             env=[{"name": "TZ", "value": "UTC"},
                  {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}],
             imagePullSecrets=[{"name": "registry"}], serviceAccountName="bookies", priorityClassName="storage",
             extraVolumes=[{"name": "certs", "secret": {"secretName": "bookie-tls"}}],
             extraVolumeMounts=[{"name": "certs", "mountPath": "/certs", "readOnly": True}],
             sidecars=[{"name": "exporter", "image": "exporter:1", "ports": [{"containerPort": 9100}]}])
    pod = builders.statefulset(OWNER, s, 3)["spec"]["template"]["spec"]
    bookie, inspector, sidecar = pod["containers"]
    assert inspector["name"] == "inspector" and "BOOKIE_EXTRA_OPTS" not in {e["name"] for e in inspector["env"]}
    assert sidecar == {"name": "exporter", "image": "exporter:1", "ports": [{"containerPort": 9100}]}
    env = {e["name"]: e for e in bookie["env"]}
    assert env["BOOKIE_EXTRA_OPTS"]["value"] == "-Xmx2g -XX:+UseG1GC"
    assert env["TZ"]["value"] == "UTC" and env["TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "s"
    assert {"name": "certs", "mountPath": "/certs", "readOnly": True} in bookie["volumeMounts"]
    assert {"name": "certs", "secret": {"secretName": "bookie-tls"}} in pod["volumes"]
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["serviceAccountName"] == "bookies" and pod["priorityClassName"] == "storage"


def test_without_escape_hatches_the_pod_has_none_of_their_fields() -> None:
    pod = builders.statefulset(OWNER, spec(), 3)["spec"]["template"]["spec"]
    assert not {"imagePullSecrets", "serviceAccountName", "priorityClassName"} & set(pod)
    assert [c["name"] for c in pod["containers"]] == ["bookie"]
    assert "BOOKIE_EXTRA_OPTS" not in {e["name"] for e in pod["containers"][0]["env"]}


def test_default_memory_requests_are_spelled_as_the_api_server_stores_them() -> None:
    # The live StatefulSet holds canonical quantities; a desired "2048Mi" would never match its "2Gi".
    java = spec(implementation="apache-bookkeeper", image="bookie-fleet/apache-bookkeeper:4.18.0")
    assert builders.resources(java)["requests"]["memory"] == "2Gi"
    assert builders.mebibytes(384) == "384Mi" and builders.mebibytes(1024) == "1Gi"
