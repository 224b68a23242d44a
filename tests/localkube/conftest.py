"""localkube's own tests always run on the local cluster, whatever BOOKIE_FLEET_KUBECONFIG says."""

from __future__ import annotations

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer
from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, local_target
from tests.support.ociimage import SHELL_IMAGE, load_shell_images


@pytest.fixture(scope="session")
def kube(kube_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> KubeTarget:
    return local_target(kube_cluster, tmp_path_factory.mktemp("kube-local"))


@pytest.fixture(scope="session")
def shell_image(kube_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The small test image (busybox, USER 1000) loaded into the session cluster's node."""
    load_shell_images(kube_cluster.state_dir / "runner", tmp_path_factory.mktemp("shell-image"))
    return SHELL_IMAGE


@pytest.fixture(scope="session")
def zookeeper(pod_zookeeper: ZooKeeperServer) -> ZooKeeperServer:
    """The session's ZooKeeper, where pods reach it (``pod_zookeeper`` of tests/support/kube.py)."""
    return pod_zookeeper
