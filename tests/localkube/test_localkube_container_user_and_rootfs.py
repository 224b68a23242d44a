"""A pod from an OCI image runs under runc as its non-root user, with a read-only root filesystem, writing
only to its volumes, in its own mount/pid/ipc/uts namespaces and on the pod's loopback address."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any

from localkube.cluster import LocalCluster

from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.ociimage import runc_pid

SCRIPT = """
id
touch /written-to-root 2>&1 || true
echo hello > /data/out && echo wrote-volume
echo "ns $(readlink /proc/self/ns/pid) $(readlink /proc/self/ns/mnt) pid $$$$"
# A static binary: the bind shim cannot apply, so it listens on the pod IP itself.
httpd -f -p "$POD_IP:8080" -h /data &
sleep 3600
"""


def _status_field(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"{field} missing from /proc/{pid}/status")


def test_non_root_read_only_root_writes_only_to_volumes(kube: KubeTarget, kube_cluster: LocalCluster,
                                                        kube_namespace: str, shell_image: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"}, "spec": {
        "securityContext": {"runAsNonRoot": True},
        "volumes": [{"name": "data", "emptyDir": {}}],
        "containers": [{"name": "app", "image": f"docker.io/{shell_image}", "command": ["sh", "-c", SCRIPT],
                        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                        "securityContext": {"readOnlyRootFilesystem": True},
                        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}, namespace=kube_namespace)

    def ready() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/app")
        return pod if pod and pod_ready(pod) else None

    pod = wait_for(ready, 90, what="pod Ready")
    status = pod["status"]["containerStatuses"][0]
    assert status["containerID"].startswith("runc://")
    pid = runc_pid(kube_cluster.state_dir / "runner", status["containerID"])

    def output() -> str:
        text = kube.kubectl("-n", kube_namespace, "logs", "app").stdout
        return text if "ns pid:" in text else ""

    text = wait_for(output, 30, what="the container's output")
    assert "uid=1000(app) gid=1000(app)" in text
    assert "touch: /written-to-root: Read-only file system" in text
    assert "wrote-volume" in text
    # Own pid namespace (the shell is pid 1 there), own mount namespace; the host sees uid 1000.
    assert text.split("pid ")[-1].split()[0] == "1"
    assert f"pid:[{os.stat(f'/proc/{pid}/ns/pid').st_ino}]" in text
    assert os.stat(f"/proc/{pid}/ns/pid").st_ino != os.stat("/proc/self/ns/pid").st_ino
    assert os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino
    # The pod's own network namespace, not the machine's.
    assert os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
    assert _status_field(pid, "Uid").split()[:2] == ["1000", "1000"]
    # The volume got the write, as uid 1000; the image's shared root filesystem did not.
    volume = kube_cluster.state_dir / "runner" / "pods" / pod["metadata"]["uid"] / "volumes" / "data"
    written = volume / "out"
    assert written.read_text() == "hello\n" and written.stat().st_uid == 1000
    assert not list((kube_cluster.state_dir / "runner" / "rootfs").glob("*/rootfs/written-to-root"))
    # The readiness probe reached the listener on the pod's own address, in the node's pod CIDR.
    pod_cidr = ipaddress.ip_network(kube_cluster.node_network.pod_cidr)
    assert ipaddress.ip_address(pod["status"]["podIP"]) in pod_cidr
