"""A bookie pod as the operator builds it, from the bookie image the bootstrap built ($BOOKIE_FLEET_IMAGES),
hardened further (read-only root, no capabilities, no privilege escalation, runAsNonRoot): it runs under runc
as the image's uid 10000, becomes Ready, registers in ZooKeeper, and writes only to its volumes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bookie.metadata.store import MetadataStore
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import builders, models
from bookie_operator.reconcile.admin_token import token_hashes
from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.ociimage import runc_pid


def _objects(namespace: str, zk: str, root: str) -> list[dict[str, Any]]:
    spec = models.BookieClusterSpec.model_validate({
        "replicas": 1, "ensembleSize": 1,
        "metadataService": {"zkServers": zk, "ledgersRoot": root},
        "storage": {"journal": {"size": "1Gi"}, "ledgers": {"size": "1Gi"}},
        "config": {"diskUsageThreshold": 0.999, "diskUsageWarnThreshold": 0.998}})
    owner = builders.Owner("bk", namespace, "0")
    # The operator writes the Secret of the tokens' hashes, which the bookie pods mount; without an operator here,
    # the test does.
    hashes = builders.token_hashes_secret(owner, token_hashes("test-admin-token-0123456789\n"),
                                          token_hashes("test-audit-token-0123456789\n"))
    objects = [hashes, *builders.desired_objects(owner, spec, replicas=1)]
    for obj in objects:
        obj["metadata"].pop("ownerReferences", None)   # no BookieCluster here: nothing may collect them
    sts = next(o for o in objects if o["kind"] == "StatefulSet")
    pod_spec = sts["spec"]["template"]["spec"]
    pod_spec["securityContext"]["runAsNonRoot"] = True
    pod_spec["containers"][0]["securityContext"] = {
        "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"}}
    return objects


async def test_bookie_image_runs_non_root_read_only(kube: KubeTarget, kube_cluster: LocalCluster,
                                                   kube_namespace: str, zookeeper: ZooKeeperServer,
                                                   metadata_store: MetadataStore, ledgers_root: str) -> None:
    objects = _objects(kube_namespace, zookeeper.connect_string, ledgers_root)
    image = objects[-1]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("bookie-fleet/bookie:")
    kube.apply(objects, namespace=kube_namespace)

    def ready() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/bk-0")
        return pod if pod and pod_ready(pod) else None

    pod = wait_for(ready, 180, what="bookie pod Ready")
    status = pod["status"]["containerStatuses"][0]
    assert status["containerID"].startswith("runc://")
    assert any(e["reason"] == "Pulled" for e in kube.events(kube_namespace, "bk-0"))
    assert not any(e["reason"] == "HostCommand" for e in kube.events(kube_namespace, "bk-0"))
    assert await metadata_store.list_bookies() == [
        f"bk-0.bk-headless.{kube_namespace}.svc.cluster.local:3181"]

    _check_process_and_volumes(kube, kube_namespace, runc_pid(kube_cluster.state_dir / "runner",
                                                              status["containerID"]))


def _check_process_and_volumes(kube: KubeTarget, namespace: str, pid: int) -> None:
    proc_status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    assert proc_status["Uid"].split()[:2] == ["10000", "10000"]
    assert proc_status["CapEff"].strip() == "0000000000000000" and proc_status["NoNewPrivs"].strip() == "1"
    root = Path(f"/proc/{pid}/root")
    assert (root / "opt" / "venv" / "bin" / "bookie").exists()
    assert os.statvfs(root).f_flag & os.ST_RDONLY
    # Its writes went to the claims' directories, owned by the image's user and the pod's fsGroup.
    claims = kube.api.request("GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")["items"]
    assert len(claims) == 2
    for pvc in claims:
        pv = kube.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}") or {}
        directory = Path(pv["spec"]["hostPath"]["path"])
        written = [p for p in directory.rglob("*") if p.is_file()]
        assert written and all(p.stat().st_uid == 10000 and p.stat().st_gid == 10000 for p in written)
