"""The API server itself (CEL transition rules against the stored object) refuses what an existing cluster's
volumes cannot follow: a smaller size, another volume count, another StorageClass; a larger size is accepted.
Each refusal names the field and says how to migrate instead."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.operator.conftest import bookie_cluster, get_cluster
from tests.support.kube import KubeTarget

ZK = "127.0.0.1:2181"
MIGRATE = "to migrate, create a second BookieCluster with the new storage on the same metadataService"


def patch(kube: KubeTarget, namespace: str, storage: dict[str, Any]) -> tuple[int, str]:
    result = kube.kubectl("-n", namespace, "patch", "bookieclusters.bookie-fleet.dev", "bk", "--type", "merge",
                          "-p", json.dumps({"spec": {"storage": storage}}), check=False)
    return result.returncode, result.stderr


@pytest.fixture
def cluster(kube: KubeTarget, kube_namespace: str, bookie_crd: str) -> str:
    kube.apply(bookie_cluster("bk", ZK, "/bk/ledgers", storage={
        "journal": {"size": "1Gi", "count": 1},
        "ledgers": {"size": "2Gi", "count": 2, "storageClassName": "fast"}}), namespace=kube_namespace)
    return kube_namespace


@pytest.mark.parametrize(("storage", "field", "message"), [
    ({"ledgers": {"size": "1536Mi"}}, "spec.storage.ledgers.size", "size cannot shrink"),
    ({"journal": {"size": "1000Mi"}}, "spec.storage.journal.size", "size cannot shrink"),
    ({"ledgers": {"count": 3}}, "spec.storage.ledgers.count", "count cannot change on an existing cluster"),
    ({"journal": {"count": 2}}, "spec.storage.journal.count", "count cannot change on an existing cluster"),
    ({"ledgers": {"storageClassName": "slow"}}, "spec.storage.ledgers.storageClassName",
     "storageClassName cannot change on an existing cluster"),
    ({"ledgers": {"storageClassName": None}}, "spec.storage.ledgers",
     "storageClassName cannot be set or removed on an existing cluster"),
    ({"journal": {"storageClassName": "fast"}}, "spec.storage.journal",
     "storageClassName cannot be set or removed on an existing cluster"),
])
def test_the_api_server_refuses_what_the_volumes_cannot_follow(kube: KubeTarget, cluster: str,
                                                               storage: dict[str, Any], field: str,
                                                               message: str) -> None:
    code, stderr = patch(kube, cluster, storage)
    assert code != 0
    assert f"{field}: Invalid value" in stderr and message in stderr and MIGRATE in stderr, stderr
    assert get_cluster(kube, cluster, "bk")["spec"]["storage"]["ledgers"] == {
        "size": "2Gi", "count": 2, "storageClassName": "fast"}


def test_a_larger_size_is_accepted_in_any_unit(kube: KubeTarget, cluster: str) -> None:
    assert patch(kube, cluster, {"ledgers": {"size": "3Gi"}, "journal": {"size": "1100Mi"}})[0] == 0
    assert patch(kube, cluster, {"ledgers": {"size": "3221225472"}})[0] == 0      # the same size, in bytes
    storage = get_cluster(kube, cluster, "bk")["spec"]["storage"]
    assert storage["ledgers"]["size"] == "3221225472" and storage["journal"]["size"] == "1100Mi"
