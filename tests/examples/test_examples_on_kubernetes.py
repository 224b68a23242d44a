"""Every manifest in examples/ applied with kubectl to the local Kubernetes reaches Ready under the operator.

Only what depends on this machine is changed before applying (``deploy_example`` in tests/examples/conftest.py):
ZooKeeper's address (and a ledgers root of the test's own), and, for Apache BookKeeper bookies, the Java bookie
image the local pod runner runs. What an example's header says to create first is created first: a metrics token
Secret it names, and the Secrets of its spec.tls as cert-manager makes them from its certificates file (with the
DNS names and roles of that file's Certificates, for the test's namespace); the operator then reports those
certificates valid for the bookies (CertificatesValid: they name every bookie id's host, chain to their CA)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.examples.conftest import deploy_example, example_paths
from tests.operator.conftest import OperatorProcess, condition, wait_ready
from tests.support.kube import KubeTarget


@pytest.mark.parametrize("path", example_paths(standalone=True), ids=lambda p: p.stem)
def test_example_reaches_ready(kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
                               operator_factory: Callable[[str], OperatorProcess], path: Path) -> None:
    operator_factory(kube_namespace)
    obj = deploy_example(kube, kube_namespace, zookeeper, path).obj
    spec = obj["spec"]
    ready = wait_ready(kube, kube_namespace, obj["metadata"]["name"], timeout=420)
    status = ready["status"]
    assert status["readyReplicas"] == spec.get("replicas", 3), status
    assert status["writableBookies"] >= spec.get("ensembleSize", 3), status
    if spec.get("tls"):
        valid = condition(ready, "CertificatesValid")
        assert valid is not None and valid["status"] == "True", valid
