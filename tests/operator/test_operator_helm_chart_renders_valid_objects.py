"""The chart as a user renders it (`helm template`, default values, the cluster-wide opt-in, listed namespaces) is
accepted by the real API server object by object (`kubectl apply --dry-run=server`), and lints strictly."""

from __future__ import annotations

from tests.operator.test_operator_helm_chart import CHART
from tests.support.kube import KubeTarget


def test_rendered_chart_is_accepted_by_the_api_server(kube: KubeTarget, kube_namespace: str,
                                                      bookie_crd: str) -> None:
    lint = kube.helm("lint", str(CHART), "--strict")
    assert "0 chart(s) failed" in lint.stdout
    rbac = "rbac.authorization.k8s.io"
    for values, expected in (([], {"clusterrole", "clusterrolebinding", "role", "rolebinding"}),
                             (["--set", "clusterWide=true"], {"clusterrole", "clusterrolebinding"}),
                             (["--set", f"watchNamespaces={{{kube_namespace}}}", "--set", "crds.manage=false"],
                              {"clusterrole", "role", "rolebinding"})):
        rendered = kube.helm("template", "bkop", str(CHART), "--namespace", kube_namespace, *values).stdout
        result = kube.kubectl("apply", "--dry-run=server", "-n", kube_namespace, "-f", "-", input=rendered)
        kinds = {line.split("/")[0] for line in result.stdout.splitlines() if "(server dry run)" in line}
        assert {"deployment.apps", "serviceaccount", *(f"{k}.{rbac}" for k in expected)} <= kinds, result.stdout
