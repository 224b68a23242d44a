"""`kubectl logs` works: the API server proxies it to the runner's kubelet endpoint, which serves the
container's output (also readable with `bookie-fleet cluster logs`)."""

from __future__ import annotations

import pytest
from bookie_fleet.cli import main as fleet_main
from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, wait_for


def test_kubectl_logs_and_cluster_logs(kube: KubeTarget, kube_cluster: LocalCluster, kube_namespace: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "talker"}, "spec": {"containers": [{
        "name": "talk", "image": "busybox",
        "command": ["sh", "-c", "for i in 1 2 3; do echo line $i; done; sleep 3600"],
    }]}}, namespace=kube_namespace)

    def logs() -> str:
        result = kube.kubectl("-n", kube_namespace, "logs", "talker", check=False)
        return result.stdout if result.returncode == 0 and "line 3" in result.stdout else ""

    assert wait_for(logs, 60, what="kubectl logs") == "line 1\nline 2\nline 3\n"
    assert kube.kubectl("-n", kube_namespace, "logs", "talker", "-c", "talk", "--tail=1").stdout == "line 3\n"
    missing = kube.kubectl("-n", kube_namespace, "logs", "nosuchpod", check=False)
    assert missing.returncode != 0 and 'pods "nosuchpod" not found' in missing.stderr

    assert fleet_main(["cluster", "--state-dir", str(kube_cluster.state_dir), "logs",
                       f"{kube_namespace}/talker"]) == 0
    assert capsys.readouterr().out == "line 1\nline 2\nline 3\n"
