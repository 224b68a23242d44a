"""The part of the kubelet's HTTPS API that needs no container runtime: container logs.

The API server proxies ``kubectl logs`` to ``https://<node InternalIP>:<daemonEndpoints.kubeletEndpoint.Port>
/containerLogs/<namespace>/<pod>/<container>``; this serves the runner's log files there (``follow``,
``tailLines``, ``limitBytes``; ``previous`` gives the same file, which holds every restart's output).
exec, attach and port-forward are not served.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

log = logging.getLogger("localkube.runner")


class KubeletAPI:
    def __init__(self, logs_root: Path, cert: Path, key: Path, pod_alive: Callable[[str, str], bool],
                 host: str = "127.0.0.1") -> None:
        self.logs_root = logs_root
        self.pod_alive = pod_alive
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                log.debug("kubelet api: " + format, *args)

            def do_GET(self) -> None:
                api.handle(self)

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, name="kubelet-api", daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()

    def log_file(self, namespace: str, pod: str, container: str) -> Path | None:
        dirs = sorted(self.logs_root.glob(f"{namespace}_{pod}_*"), key=lambda d: d.stat().st_mtime, reverse=True)
        for d in dirs:
            candidate = d / f"{container}.log"
            if candidate.is_file():
                return candidate
        return None

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        url = urlparse(request.path)
        parts = url.path.strip("/").split("/")
        if parts == ["healthz"]:
            self._reply(request, 200, b"ok")
            return
        if len(parts) != 4 or parts[0] != "containerLogs":
            self._reply(request, 404, b"localkube serves only /containerLogs")
            return
        _, namespace, pod, container = parts
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        path = self.log_file(namespace, pod, container)
        if path is None:
            self._reply(request, 404, f'container "{container}" in pod "{pod}" has no log yet'.encode())
            return
        data = path.read_bytes()
        if "tailLines" in query:
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-int(query["tailLines"]):]) if int(query["tailLines"]) > 0 else b""
        if "limitBytes" in query:
            data = data[: int(query["limitBytes"])]
        follow = query.get("follow") in ("true", "1")
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        if not follow:
            request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        try:
            request.wfile.write(data)
            if follow:
                offset = path.stat().st_size
                while self.pod_alive(namespace, pod):
                    size = path.stat().st_size
                    if size > offset:
                        with open(path, "rb") as f:
                            f.seek(offset)
                            chunk = f.read(size - offset)
                        offset = size
                        request.wfile.write(chunk)
                        request.wfile.flush()
                    time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, code: int, body: bytes) -> None:
        request.send_response(code)
        request.send_header("Content-Type", "text/plain")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)
