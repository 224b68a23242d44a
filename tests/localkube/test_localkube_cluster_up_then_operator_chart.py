"""The README's sequence on the local Kubernetes: `bookie-fleet cluster up`, then
`helm install bookie-operator helm/bookie-operator -n bookie-fleet --create-namespace` installs the operator's
chart. `up` creates no ServiceAccount of its own unless asked, so none collides with the chart's (an object
Helm did not create "cannot be imported into the current release"); one it is asked for is created with its
kubeconfig. Runs the CLI on the session's cluster (already up: `up` is idempotent)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie_fleet.cli import main as fleet_main
from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, wait_for

CHART = Path(__file__).resolve().parents[2] / "helm" / "bookie-operator"
NAMESPACE = "bookie-fleet"   # the README's


@pytest.fixture
def readme_namespace(kube: KubeTarget) -> Iterator[str]:
    """The README's namespace, left as the session found it: the release and the namespace go afterwards."""
    assert kube.get(f"/api/v1/namespaces/{NAMESPACE}") is None, "another test left the README's namespace"
    try:
        yield NAMESPACE
    finally:
        kube.helm("uninstall", "bookie-operator", "-n", NAMESPACE, "--wait", check=False)
        kube.api.delete(f"/api/v1/namespaces/{NAMESPACE}")
        wait_for(lambda: kube.get(f"/api/v1/namespaces/{NAMESPACE}") is None, 120, what="namespace deleted")


def test_cluster_up_then_helm_install_of_the_operator_chart(kube: KubeTarget, kube_cluster: LocalCluster,
                                                            readme_namespace: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert fleet_main(["cluster", "--state-dir", str(kube_cluster.state_dir), "up"]) == 0
    assert "(already up)" in capsys.readouterr().out

    # The README's command; the session's cluster is shared with other tests' operators, so this one watches
    # only its own namespace (values change nothing of what collided: the objects' names).
    kube.helm("install", "bookie-operator", str(CHART), "-n", readme_namespace, "--create-namespace",
              "--set", f"watchNamespaces={{{readme_namespace}}}")
    releases = json.loads(kube.helm("list", "-n", readme_namespace, "--output", "json").stdout)
    assert [(r["name"], r["status"]) for r in releases] == [("bookie-operator", "deployed")]
    account = kube.get(f"/api/v1/namespaces/{readme_namespace}/serviceaccounts/bookie-operator")
    assert account is not None and account["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"


def test_cluster_up_creates_a_service_account_only_when_asked(kube: KubeTarget, kube_cluster: LocalCluster,
                                                             kube_namespace: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert fleet_main(["cluster", "--state-dir", str(kube_cluster.state_dir), "up",
                       "--service-account", f"{kube_namespace}/operator-dev"]) == 0
    path = kube_cluster.state_dir / f"sa-{kube_namespace}-operator-dev.kubeconfig"
    assert f"service account {kube_namespace}/operator-dev: KUBECONFIG={path}" in capsys.readouterr().out
    assert path.is_file()
    assert kube.get(f"/api/v1/namespaces/{kube_namespace}/serviceaccounts/operator-dev") is not None
