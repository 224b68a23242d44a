"""What a pod worker needs from its node: the interface ``node.Runner`` provides to ``worker.PodWorker``.

The worker depends on this protocol, not on the node module, so the node imports the worker and nothing
imports back.
"""

from __future__ import annotations

from typing import Any, Protocol

from localkube.kapi import KubeAPI
from localkube.runner.dns import ClusterDNS, Resolv
from localkube.runner.imagestore import ImageStore
from localkube.runner.podnet import PodNetwork
from localkube.runner.runtime import Runc
from localkube.runner.state import RunnerState

Obj = dict[str, Any]


class Node(Protocol):
    api: KubeAPI
    state: RunnerState
    network: PodNetwork
    node_ip: str
    kubernetes_service: tuple[str, int]   # (ClusterIP, port) of the `kubernetes` Service
    dns: ClusterDNS
    node_resolv: Resolv
    capacity: dict[str, str]
    images: ImageStore
    runtime: Runc | None          # None: runc/umoci missing, only host-command images run

    def emit_event(self, obj: Obj, kind: str, reason: str, message: str, component: str = "kubelet") -> None: ...

    def worker_done(self, uid: str) -> None: ...
