"""The local provisioner: a claim of the default StorageClass gets a PersistentVolume (a directory) that the
real PV controller binds; a pod sees the directory at its mount path; deleting the claim deletes the
volume and its directory (reclaim policy Delete)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.kube import KubeTarget, wait_for


def test_claim_provisioned_bound_used_and_deleted(kube: KubeTarget, kube_namespace: str) -> None:
    ns = kube_namespace
    sc = kube.get("/apis/storage.k8s.io/v1/storageclasses/standard")
    assert sc is not None and sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    kube.apply([
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Mi"}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "writer"}, "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "w", "image": "busybox", "command": ["sh", "-c", "echo kept > /vol/file"],
                            "volumeMounts": [{"name": "v", "mountPath": "/vol"}]}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "claim"}}]}},
    ], namespace=ns)

    def bound() -> dict[str, Any] | None:
        pvc = kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/claim")
        return pvc if pvc and pvc.get("status", {}).get("phase") == "Bound" else None

    pvc = wait_for(bound, 30, what="the claim Bound")
    assert pvc["spec"]["storageClassName"] == "standard"
    pv = kube.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
    assert pv is not None and pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "localkube.io/local-path"
    directory = Path(pv["spec"]["hostPath"]["path"])
    wait_for(lambda: (kube.get(f"/api/v1/namespaces/{ns}/pods/writer") or {}).get("status", {}).get("phase")
             == "Succeeded", 30, what="the writer to finish")
    assert (directory / "file").read_text() == "kept\n"

    kube.kubectl("-n", ns, "delete", "pod", "writer", "--wait=true")
    kube.kubectl("-n", ns, "delete", "pvc", "claim", "--wait=true")
    wait_for(lambda: kube.get(f"/api/v1/persistentvolumes/{pv['metadata']['name']}") is None, 60,
             what="the released volume deleted")
    assert not directory.exists()
