"""fsGroup: the pod's writable volumes (emptyDir, claims) get the group, group read/write and setgid
directories, as the kubelet applies it, and the container's process carries the group; configMap volumes
are left alone."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, wait_for


def test_fs_group_applied_to_volumes(kube: KubeTarget, kube_cluster: LocalCluster, kube_namespace: str,
                                     shell_image: str) -> None:
    kube.apply([
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Mi"}}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "grouped"}, "spec": {
            "securityContext": {"runAsUser": 1234, "runAsGroup": 1234, "fsGroup": 2000,
                                "supplementalGroups": [4000]},
            "volumes": [{"name": "scratch", "emptyDir": {}},
                        {"name": "disk", "persistentVolumeClaim": {"claimName": "claim"}},
                        {"name": "conf", "configMap": {"name": "conf"}}],
            "containers": [{"name": "c", "image": shell_image, "command": ["sh", "-c",
                            "id; mkdir /disk/sub && echo x > /disk/sub/f && echo disk-ok; sleep 3600"],
                            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"},
                                             {"name": "disk", "mountPath": "/disk"},
                                             {"name": "conf", "mountPath": "/conf"}]}]}},
    ], namespace=kube_namespace)

    def logs() -> str:
        result = kube.kubectl("-n", kube_namespace, "logs", "grouped", check=False)
        return result.stdout if result.returncode == 0 and "uid=" in result.stdout else ""

    text = wait_for(logs, 90, what="the container's output")
    assert text.startswith("uid=1234 gid=1234 groups=1234,2000,4000")
    wait_for(lambda: "disk-ok" in kube.kubectl("-n", kube_namespace, "logs", "grouped").stdout, 30,
             what="a write to the claim")

    pod: dict[str, Any] = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/grouped") or {}
    volumes = kube_cluster.state_dir / "runner" / "pods" / pod["metadata"]["uid"] / "volumes"
    scratch = volumes / "scratch"
    assert scratch.stat().st_gid == 2000 and scratch.stat().st_mode & stat.S_ISGID
    claim = kube.get(f"/api/v1/namespaces/{kube_namespace}/persistentvolumeclaims/claim") or {}
    pv = kube.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}") or {}
    disk = Path(pv["spec"]["hostPath"]["path"])
    assert disk.stat().st_gid == 2000 and disk.stat().st_mode & 0o2070 == 0o2070
    # A directory created by the container inherits the group (setgid), its file too.
    assert (disk / "sub").stat().st_gid == 2000 and (disk / "sub" / "f").stat().st_gid == 2000
    assert (disk / "sub" / "f").stat().st_uid == 1234
    assert (volumes / "conf").stat().st_gid == 0
