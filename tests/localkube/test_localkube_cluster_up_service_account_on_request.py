"""`bookie-fleet cluster up` creates a ServiceAccount only when asked (none by default, so none collides with the
operator chart's: tests/fleet/test_readme_quick_start.py installs the chart on a fresh cluster), with its
kubeconfig. Runs the CLI on the session's cluster (already up: `up` is idempotent)."""

from __future__ import annotations

import pytest
from bookie_fleet.cli import main as fleet_main
from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget


def test_cluster_up_creates_a_service_account_only_when_asked(kube: KubeTarget, kube_cluster: LocalCluster,
                                                             kube_namespace: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert fleet_main(["cluster", "--state-dir", str(kube_cluster.state_dir), "up",
                       "--service-account", f"{kube_namespace}/operator-dev"]) == 0
    path = kube_cluster.state_dir / f"sa-{kube_namespace}-operator-dev.kubeconfig"
    assert f"service account {kube_namespace}/operator-dev: KUBECONFIG={path}" in capsys.readouterr().out
    assert path.is_file()
    assert kube.get(f"/api/v1/namespaces/{kube_namespace}/serviceaccounts/operator-dev") is not None
