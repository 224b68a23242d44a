"""Readiness / liveness / startup probes: HTTP GET, TCP connect, exec (inside the container's mounts)."""

from __future__ import annotations

import http.client
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


def resolve_port(port: int | str, container: Obj) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for p in container.get("ports", []):
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"named port {port!r} not found among the container's ports")


def run_probe(probe: Obj, pod_ip: str, container: Obj,
              exec_probe: Callable[[list[str], float], int]) -> tuple[bool, str]:
    """One probe attempt: (success, message)."""
    timeout = float(probe.get("timeoutSeconds", 1))
    try:
        if "httpGet" in probe:
            spec = probe["httpGet"]
            host = spec.get("host") or pod_ip
            port = resolve_port(spec["port"], container)
            conn: http.client.HTTPConnection
            if str(spec.get("scheme", "HTTP")).upper() == "HTTPS":
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
            else:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
            try:
                headers = {h["name"]: h["value"] for h in spec.get("httpHeaders", [])}
                headers.setdefault("User-Agent", "kube-probe/1.34")
                conn.request("GET", spec.get("path", "/"), headers=headers)
                status = conn.getresponse().status
            finally:
                conn.close()
            return 200 <= status < 400, f"HTTP probe failed with statuscode: {status}"
        if "tcpSocket" in probe:
            spec = probe["tcpSocket"]
            port = resolve_port(spec["port"], container)
            with socket.create_connection((spec.get("host") or pod_ip, port), timeout=timeout):
                return True, ""
        if "exec" in probe:
            code = exec_probe(list(probe["exec"]["command"]), timeout)
            return code == 0, f"command exited with {code}"
        if "grpc" in probe:
            return False, "gRPC probes are not supported by localkube"
    except (OSError, http.client.HTTPException, subprocess.SubprocessError, ValueError) as exc:
        return False, f"probe failed: {exc}"
    return True, ""


@dataclass
class ProbeState:
    """Thresholds and timing of one probe of one container instance."""

    probe: Obj
    started_at: float = field(default_factory=time.monotonic)
    next_at: float = 0.0
    successes: int = 0
    failures: int = 0
    result: bool | None = None   # None until the thresholds decide
    message: str = ""

    def __post_init__(self) -> None:
        self.next_at = self.started_at + float(self.probe.get("initialDelaySeconds", 0))

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def record(self, ok: bool, message: str, now: float) -> None:
        self.next_at = now + float(self.probe.get("periodSeconds", 10))
        if ok:
            self.successes += 1
            self.failures = 0
            if self.successes >= int(self.probe.get("successThreshold", 1)):
                self.result = True
        else:
            self.failures += 1
            self.successes = 0
            self.message = message
            if self.failures >= int(self.probe.get("failureThreshold", 3)):
                self.result = False
