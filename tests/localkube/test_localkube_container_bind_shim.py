"""The bind shim works inside a container: two replicas of a dynamically linked program both "listen on all
interfaces" on the same port, each ending up on its own pod IP."""

from __future__ import annotations

import functools
import socket
from typing import Any

from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.ociimage import LISTENER_IMAGE


def test_wildcard_bind_lands_on_pod_ip(kube: KubeTarget, kube_namespace: str, shell_image: str) -> None:
    names = ("one", "two")
    kube.apply([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n}, "spec": {"containers": [{
        "name": "c", "image": LISTENER_IMAGE, "command": ["listener", "3181"],
        "securityContext": {"readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        "readinessProbe": {"tcpSocket": {"port": 3181}, "periodSeconds": 1}}]}} for n in names],
        namespace=kube_namespace)

    def ready(name: str) -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/{name}")
        return pod if pod and pod_ready(pod) else None

    for name in names:
        pod = wait_for(functools.partial(ready, name), 90, what=f"{name} Ready")
        ip = pod["status"]["podIP"]
        assert kube.kubectl("-n", kube_namespace, "logs", name).stdout == f"listening on {ip}:3181\n"
        with socket.create_connection((ip, 3181), timeout=10):
            pass
