"""An API server that does not answer is a ``ConnectionError`` naming the request (``ApiUnreachable``), not a
urllib3 error: whoever rides out network failures (the pod runner's status updates, Events and heartbeats)
catches it with the rest."""

from __future__ import annotations

import socket

import pytest
from localkube.cluster import LocalCluster
from localkube.kapi import ApiUnreachable, KubeAPI


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_an_os_error_naming_the_request(kube_cluster: LocalCluster) -> None:
    api = KubeAPI(f"https://127.0.0.1:{closed_port()}", kube_cluster.ca_file.read_bytes())
    with pytest.raises(ApiUnreachable, match=r"PATCH /api/v1/namespaces/x/pods/y/status: .*refused") as caught:
        api.merge_patch("/api/v1/namespaces/x/pods/y/status", {"status": {}})
    assert isinstance(caught.value, OSError)


def test_a_timeout_is_one_too(kube_cluster: LocalCluster) -> None:
    with socket.socket() as silent:  # accepts (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        api = KubeAPI(f"https://127.0.0.1:{silent.getsockname()[1]}", kube_cluster.ca_file.read_bytes())
        with pytest.raises(ApiUnreachable, match=r"GET /api/v1/pods: .*timed out"):
            api.request("GET", "/api/v1/pods", timeout=0.5)
