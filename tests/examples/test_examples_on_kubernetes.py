"""Every manifest in examples/ applied with kubectl to the local Kubernetes reaches Ready under the operator.

Only what depends on this machine is changed before applying: ZooKeeper's address (and a ledgers root of
the test's own), and, for Apache BookKeeper bookies, the Java bookie image the local pod runner runs
(tests/operator/conftest.py's JAVA). A metrics token Secret an example names is created first, as its header
says."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.examples.conftest import example_paths, load
from tests.operator.conftest import JAVA, OperatorProcess, wait_ready
from tests.support.kube import KubeTarget


@pytest.mark.parametrize("path", example_paths(standalone=True), ids=lambda p: p.stem)
def test_example_reaches_ready(kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
                               operator_factory: Callable[[str], OperatorProcess], path: Path) -> None:
    obj = load(path)
    spec = obj["spec"]
    spec["metadataService"] = {"zkServers": zookeeper.connect_string,
                               "ledgersRoot": f"/{kube_namespace}/ledgers"}
    if spec.get("implementation") == "apache-bookkeeper":
        spec["image"] = JAVA["image"]
    operator_factory(kube_namespace)
    metrics_token = spec.get("adminApi", {}).get("metricsTokenSecretName")
    if metrics_token:  # created first, as the example's header says
        kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": metrics_token},
                    "stringData": {"token": secrets.token_urlsafe(32)}}, namespace=kube_namespace)
    kube.apply(obj, namespace=kube_namespace)
    name = obj["metadata"]["name"]
    ready = wait_ready(kube, kube_namespace, name, timeout=420)
    status = ready["status"]
    assert status["readyReplicas"] == spec.get("replicas", 3), status
    assert status["writableBookies"] >= spec.get("ensembleSize", 3), status
