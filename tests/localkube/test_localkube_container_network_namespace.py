"""A container runs in its pod's own network namespace: two pods of a program that listens on 0.0.0.0:3181 both
start (the port is each pod's own), each is reachable on its pod IP from this machine, and the container's
network namespace is neither the machine's nor the other pod's."""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.ociimage import LISTENER_IMAGE, runc_pid


def test_wildcard_listeners_in_their_own_network_namespaces(kube: KubeTarget, kube_namespace: str,
                                                             shell_image: str) -> None:
    names = ("one", "two")
    kube.apply([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n}, "spec": {"containers": [{
        "name": "c", "image": LISTENER_IMAGE, "command": ["listener", "3181"],
        "securityContext": {"readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        "readinessProbe": {"tcpSocket": {"port": 3181}, "periodSeconds": 1}}]}} for n in names],
        namespace=kube_namespace)

    def ready(name: str) -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{kube_namespace}/pods/{name}")
        return pod if pod and pod_ready(pod) else None

    assert kube.local is not None
    namespaces = set()
    for name in names:
        pod = wait_for(functools.partial(ready, name), 90, what=f"{name} Ready")
        assert kube.kubectl("-n", kube_namespace, "logs", name).stdout == "listening on 0.0.0.0:3181\n"
        with socket.create_connection((pod["status"]["podIP"], 3181), timeout=10):
            pass
        pid = runc_pid(kube.local.state_dir / "runner", pod["status"]["containerStatuses"][0]["containerID"])
        namespaces.add(os.stat(f"/proc/{pid}/ns/net").st_ino)
    assert len(namespaces) == 2 and os.stat("/proc/self/ns/net").st_ino not in namespaces
