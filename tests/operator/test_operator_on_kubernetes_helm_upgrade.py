"""``helm upgrade`` from the chart's newest release (helm/releases) to the working chart keeps a running cluster
Ready: the operator's pods are replaced (a rolling update; an upgraded pod takes the Lease), the BookieCluster's Ready
condition never leaves True, and the new operator reconciles the next change of its spec. An upgrade whose values
would narrow the operator's namespaces past a BookieCluster it manages is refused before anything changes, naming
the cluster and what to set.

The operator runs from the chart's own image (operator/Dockerfile, built by the bootstrap), as a container."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import yaml
from bookie_fleet.zookeeper import ZooKeeperServer
from packaging.version import Version

from tests.operator.conftest import CLUSTERS, bookie_cluster, condition, get_cluster, patch_spec, wait_ready
from tests.support.kube import KubeTarget, pod_ready, wait_for

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "bookie-operator"
RELEASE = "bkup"
OPERATOR_PODS = f"app.kubernetes.io/name=bookie-operator,app.kubernetes.io/instance={RELEASE}"


def newest_release() -> Path:
    return max((REPO / "helm" / "releases").glob("bookie-operator-*.tgz"),
               key=lambda p: Version(p.name.removeprefix("bookie-operator-").removesuffix(".tgz")))


class ReadyWatch:
    """The BookieCluster's Ready condition, read every half second in a thread of its own until stopped."""

    def __init__(self, kube: KubeTarget, namespace: str, name: str) -> None:
        self.seen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(kube, namespace, name), daemon=True)
        self._thread.start()

    def _watch(self, kube: KubeTarget, namespace: str, name: str) -> None:
        while not self._stop.wait(0.5):
            ready = condition(get_cluster(kube, namespace, name), "Ready")
            self.seen.append(ready["status"] if ready else "absent")

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(timeout=30)
        return self.seen


def operator_pods(kube: KubeTarget, namespace: str) -> list[dict[str, Any]]:
    return [p for p in kube.pods(namespace, OPERATOR_PODS) if not p["metadata"].get("deletionTimestamp")]


def test_upgrade_from_the_newest_release_keeps_a_running_cluster_ready(
        kube: KubeTarget, kube_namespace: str, other_namespace: str, bookie_crd: str,
        zookeeper: ZooKeeperServer) -> None:
    ns, other = kube_namespace, other_namespace
    previous = newest_release()
    working = str(yaml.safe_load((CHART / "Chart.yaml").read_text())["version"])
    assert Version(working) > Version(previous.name.removeprefix("bookie-operator-").removesuffix(".tgz"))
    kube.helm("install", RELEASE, str(previous), "--namespace", ns, "--wait", "--timeout", "180s",
              "--set", "clusterWide=true", "--set", "reconcileInterval=2", "--set", "logFormat=plain")
    try:
        kube.apply(bookie_cluster("elsewhere", zookeeper.connect_string, f"/{other}/ledgers", replicas=1,
                                  ensembleSize=1), namespace=other)
        wait_ready(kube, other, "elsewhere", timeout=180)
        before = {p["metadata"]["name"] for p in operator_pods(kube, ns)}

        # The chart's default values (a values file without clusterWide, as the charts before the first release
        # needed) would watch the release's namespace only and leave the BookieCluster elsewhere unmanaged:
        # refused, naming it, before anything is changed. (Without any values, helm upgrade reuses the last.)
        refused = kube.helm("upgrade", RELEASE, str(CHART), "--namespace", ns, "--reset-values", check=False)
        assert refused.returncode != 0
        assert f"this upgrade would stop managing BookieClusters {other}/elsewhere" in refused.stderr, refused.stderr
        assert "Set clusterWide=true" in refused.stderr
        history = json.loads(kube.helm("history", RELEASE, "--namespace", ns, "--output", "json").stdout)
        assert [(h["revision"], h["status"]) for h in history] == [(1, "deployed")], history

        # The same values: the upgrade goes through, and the cluster stays Ready while the operator is replaced.
        watch = ReadyWatch(kube, other, "elsewhere")
        try:
            kube.helm("upgrade", RELEASE, str(CHART), "--namespace", ns, "--reuse-values", "--wait",
                      "--timeout", "180s")

            def replaced() -> list[dict[str, Any]] | None:
                pods = operator_pods(kube, ns)
                new = [p for p in pods if p["metadata"]["name"] not in before and pod_ready(p)
                       and p["metadata"]["labels"].get("helm.sh/chart") == f"bookie-operator-{working}"]
                return new if len(new) == len(pods) == 2 else None

            upgraded = {p["metadata"]["name"] for p in wait_for(
                replaced, 120, what="both operator pods replaced by the upgraded chart's")}

            def lease_holder() -> str:
                lease = kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/bookie-operator") or {}
                return str(lease.get("spec", {}).get("holderIdentity") or "").split("_")[0]

            wait_for(lambda: lease_holder() in upgraded, 90,
                     what=f"the Lease taken by an upgraded operator pod, one of {sorted(upgraded)}")
            # The upgraded operator reconciles the next change of spec.
            patch_spec(kube, other, "elsewhere", {"diskPolicy": {"writableLowWaterMark": 0.995}})
            wait_ready(kube, other, "elsewhere", timeout=90)
        finally:
            seen = watch.stop()
        assert seen and set(seen) == {"True"}, f"Ready during the upgrade: {seen}"
        history = json.loads(kube.helm("history", RELEASE, "--namespace", ns, "--output", "json").stdout)
        assert [(h["revision"], h["chart"], h["status"]) for h in history] == [
            (1, previous.name.removesuffix(".tgz"), "superseded"), (2, f"bookie-operator-{working}", "deployed")]

        kube.api.delete(f"{CLUSTERS.format(ns=other)}/elsewhere")
        wait_for(lambda: kube.get(f"{CLUSTERS.format(ns=other)}/elsewhere") is None, 60,
                 what="BookieCluster elsewhere deleted")
    finally:
        kube.helm("uninstall", RELEASE, "--namespace", ns, "--wait", check=False)
