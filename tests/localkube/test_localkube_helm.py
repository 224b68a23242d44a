"""helm (built from the Go module proxy, Kubernetes version set) lints and installs a chart on the cluster."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.kube import KubeTarget, pod_ready, wait_for

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: hello\nversion: 0.1.0\nkubeVersion: \">=1.30.0-0\"\n",
    "values.yaml": "greeting: hello\nreplicas: 1\n",
    "templates/configmap.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-greeting\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"),
    "templates/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n"
        "  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: {{ .Release.Name }}}}\n"
        "  template:\n    metadata: {labels: {app: {{ .Release.Name }}}}\n    spec:\n      containers:\n"
        "      - name: sleep\n        image: busybox:1.36\n        command: [sleep, infinity]\n"),
}


def test_helm_lint_and_install(kube: KubeTarget, kube_namespace: str, tmp_path: Path) -> None:
    chart = tmp_path / "hello"
    for rel, text in CHART.items():
        (chart / rel).parent.mkdir(parents=True, exist_ok=True)
        (chart / rel).write_text(text)
    lint = kube.helm("lint", str(chart))
    assert "1 chart(s) linted, 0 chart(s) failed" in lint.stdout

    kube.helm("install", "hello", str(chart), "--namespace", kube_namespace, "--wait", "--timeout", "120s")
    cm = kube.get(f"/api/v1/namespaces/{kube_namespace}/configmaps/hello-greeting")
    assert cm is not None and cm["data"]["greeting"] == "hello"
    assert cm["data"]["kube"].startswith("v1.34.")   # the server's version, as helm install sees it
    wait_for(lambda: [p for p in kube.pods(kube_namespace, "app=hello") if pod_ready(p)], 60, what="Ready pod")
    releases = json.loads(kube.helm("list", "--namespace", kube_namespace, "--output", "json").stdout)
    assert [(r["name"], r["status"]) for r in releases] == [("hello", "deployed")]
    kube.helm("uninstall", "hello", "--namespace", kube_namespace, "--wait")
    assert kube.get(f"/api/v1/namespaces/{kube_namespace}/configmaps/hello-greeting") is None
