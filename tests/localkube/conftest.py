"""localkube's own tests always run on the local cluster, whatever BOOKIE_FLEET_KUBECONFIG says."""

from __future__ import annotations

import pytest
from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, local_target


@pytest.fixture(scope="session")
def kube(kube_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> KubeTarget:
    return local_target(kube_cluster, tmp_path_factory.mktemp("kube-local"))
