"""Volume expansion as on a cluster with a CSI driver, in the same API objects.

A claim of ``standard-xfs`` is an XFS filesystem of the claimed size (300 MiB at least); growing its request
goes through the real API server's PersistentVolumeClaimResize admission, then the runner's resizer (the
device grows, the PV's capacity follows, ``FileSystemResizePending``) and its kubelet part (the filesystem
grows online under the running pod, ``status.capacity`` follows). A pod whose volume was full writes again
without a restart. ``standard`` (directories, as kind's class) refuses expansion at admission."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.support.kube import KubeTarget, wait_for

Obj = dict[str, Any]
MiB = 2**20
# Retries a 40 MiB write every second; says so once it succeeded (the volume has room again).
WRITER = ("while true; do if dd if=/dev/zero of=/data/more bs=1048576 count=40 2>/dev/null; then "
          "echo wrote > /data/done; echo wrote; sleep 3600; fi; rm -f /data/more; sleep 1; done")


def claim(name: str, size: str, storage_class: str) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": size}}}}


def writer_pod(name: str, claim_name: str, image: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": "w", "image": image, "command": ["sh", "-c", WRITER],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]}}


def get_claim(kube: KubeTarget, ns: str, name: str) -> Obj:
    pvc = kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")
    assert pvc is not None
    return pvc


def bound(kube: KubeTarget, ns: str, name: str) -> Obj:
    return wait_for(lambda: (lambda p: p if p["status"].get("phase") == "Bound" else None)(get_claim(kube, ns, name)),
                    30, what=f"claim {name} Bound")


def grow(kube: KubeTarget, ns: str, name: str, size: str, check: bool = True) -> Any:
    return kube.kubectl("-n", ns, "patch", "pvc", name, "--type", "merge", "-p",
                        json.dumps({"spec": {"resources": {"requests": {"storage": size}}}}), check=check)


def fill(directory: Path, leave: int) -> None:
    """Allocate real blocks for all but ``leave`` bytes of the volume's free space."""
    st = os.statvfs(directory)
    size = st.f_bavail * st.f_frsize - leave
    fd = os.open(directory / "ballast", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


def reasons(kube: KubeTarget, ns: str, name: str) -> set[str]:
    return {e["reason"] for e in kube.events(ns, name)}


def test_a_full_volume_grows_online_under_its_pod(kube: KubeTarget, kube_namespace: str, shell_image: str) -> None:
    ns = kube_namespace
    kube.apply(claim("data", "200Mi", "standard-xfs"), namespace=ns)
    pvc = bound(kube, ns, "data")
    assert pvc["status"]["capacity"]["storage"] == "300Mi"     # the smallest XFS, as a cloud disk rounds up
    pv = kube.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
    assert pv is not None
    directory = Path(pv["spec"]["hostPath"]["path"])
    assert os.path.ismount(directory)
    st = os.statvfs(directory)
    before = st.f_blocks * st.f_frsize
    assert 200 * MiB < before <= 300 * MiB    # the claim's size (less XFS's log), not the machine's disk
    fill(directory, leave=8 * MiB)

    kube.apply(writer_pod("writer", "data", shell_image), namespace=ns)
    wait_for(lambda: (kube.get(f"/api/v1/namespaces/{ns}/pods/writer") or {}).get("status", {}).get("phase")
             == "Running", 90, what="the writer running")
    assert not (directory / "done").exists()                     # 40 MiB do not fit in 8

    grow(kube, ns, "data", "600Mi")

    def grown() -> Obj | None:
        p = get_claim(kube, ns, "data")
        return p if p["status"].get("capacity", {}).get("storage") == "600Mi" else None

    done = wait_for(grown, 60, what="status.capacity 600Mi")
    assert not done["status"].get("conditions") and not done["status"].get("allocatedResourceStatuses")
    assert done["status"]["allocatedResources"]["storage"] == "600Mi"
    pv = kube.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
    assert pv is not None and pv["spec"]["capacity"]["storage"] == "600Mi"
    assert pv["metadata"]["annotations"]["volume.alpha.kubernetes.io/pre-resize-capacity"] == "300Mi"
    assert os.statvfs(directory).f_blocks * os.statvfs(directory).f_frsize - before == 300 * MiB
    wait_for(lambda: (directory / "done").exists(), 30, what="the pod writing again")
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/writer")
    assert pod is not None and pod["status"]["containerStatuses"][0]["restartCount"] == 0
    # kube-controller-manager's expand controller hands the volume to an external resizer, which says so.
    wait_for(lambda: {"ExternalExpanding", "Resizing", "FileSystemResizeRequired"} <= reasons(kube, ns, "data"),
             20, what="the expand controller's and the resizer's Events on the claim")
    wait_for(lambda: "FileSystemResizeSuccessful" in reasons(kube, ns, "writer"), 20,
             what="the kubelet's Event on the pod")

    image = directory.with_name(directory.name + ".xfs")
    kube.kubectl("-n", ns, "delete", "pod", "writer", "--wait=true")
    kube.kubectl("-n", ns, "delete", "pvc", "data", "--wait=true")
    wait_for(lambda: kube.get(f"/api/v1/persistentvolumes/{pv['metadata']['name']}") is None, 60,
             what="the released volume deleted")
    assert not os.path.ismount(directory) and not directory.exists() and not image.exists()


def test_the_file_system_waits_for_a_pod_to_use_the_claim(kube: KubeTarget, kube_namespace: str,
                                                          shell_image: str) -> None:
    ns = kube_namespace
    kube.apply(claim("idle", "300Mi", "standard-xfs"), namespace=ns)
    bound(kube, ns, "idle")
    grow(kube, ns, "idle", "400Mi")

    def pending() -> Obj | None:
        p = get_claim(kube, ns, "idle")
        return p if (p["status"].get("allocatedResourceStatuses") or {}).get("storage") == "NodeResizePending" \
            else None

    status = wait_for(pending, 60, what="NodeResizePending")["status"]
    assert [c["type"] for c in status["conditions"]] == ["FileSystemResizePending"]
    assert status["conditions"][0]["message"] == ("Waiting for user to (re-)start a pod to finish file system "
                                                   "resize of volume on node.")
    assert status["capacity"]["storage"] == "300Mi"

    kube.apply(writer_pod("user", "idle", shell_image), namespace=ns)
    wait_for(lambda: get_claim(kube, ns, "idle")["status"]["capacity"]["storage"] == "400Mi", 90,
             what="the file system grown once a pod uses the claim")


def test_admission_refuses_growing_a_claim_whose_class_does_not_allow_it(kube: KubeTarget,
                                                                         kube_namespace: str) -> None:
    kube.apply(claim("plain", "10Mi", "standard"), namespace=kube_namespace)
    bound(kube, kube_namespace, "plain")
    result = grow(kube, kube_namespace, "plain", "20Mi", check=False)
    assert result.returncode != 0
    assert ("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must "
            "support resize") in result.stderr
    assert get_claim(kube, kube_namespace, "plain")["spec"]["resources"]["requests"]["storage"] == "10Mi"
