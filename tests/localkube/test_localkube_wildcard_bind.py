"""Replicas that listen on 0.0.0.0:9000, as written for containers, each do so in their own pod network
namespace, reachable on their own pod IP (host-command pods join the pod's namespace too)."""

from __future__ import annotations

import urllib.request
from typing import Any

from tests.support.kube import KubeTarget, pod_ready, wait_for

SERVER = """\
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = os.environ["HOSTNAME"].encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 9000), H).serve_forever()
"""


def test_wildcard_listeners_get_their_own_pod_ip(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "any"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "any"}},
        "template": {"metadata": {"labels": {"app": "any"}}, "spec": {"containers": [{
            "name": "http", "image": "python:3.11", "command": ["python3", "-c", SERVER],
            "readinessProbe": {"tcpSocket": {"port": 9000}, "periodSeconds": 1}}]}}}}, namespace=kube_namespace)

    def two_ready() -> list[dict[str, Any]] | None:
        pods = kube.pods(kube_namespace, "app=any")
        return pods if len(pods) == 2 and all(pod_ready(p) for p in pods) else None

    for pod in wait_for(two_ready, 60, what="2 Ready replicas"):
        with urllib.request.urlopen(f"http://{pod['status']['podIP']}:9000/", timeout=5) as response:
            assert response.read().decode() == pod["metadata"]["name"]
