"""A small thread-safe REST client for the Kubernetes API (raw JSON objects, as the API server sends them).

The pod runner and the launcher need only a handful of calls and want the objects exactly as the API
serves them (camelCase, unknown fields kept), so this talks HTTP directly with urllib3 instead of going
through the generated models of the ``kubernetes`` package.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import urllib3
import yaml

Obj = dict[str, Any]


class ApiError(RuntimeError):
    """An error answer of the API server; ``message`` is the server's own Status message."""

    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}


class ApiUnreachable(ConnectionError):
    """No answer from the API server: a refused or dropped connection, or a timeout. An OSError, as any network
    failure, so that callers who ride out such failures catch it with the rest."""


class KubeAPI:
    def __init__(self, server: str, ca_pem: bytes, *, cert_pem: bytes | None = None, key_pem: bytes | None = None,
                 token: str | None = None, user_agent: str = "localkube") -> None:
        self.server = server.rstrip("/")
        ctx = ssl.create_default_context(cadata=ca_pem.decode())
        if cert_pem is not None and key_pem is not None:
            # ssl wants files: write them to a private temporary directory, loaded, then removed.
            with tempfile.TemporaryDirectory(prefix="localkube-cred-") as tmp:
                cert_file, key_file = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
                cert_file.write_bytes(cert_pem)
                key_file.touch(0o600)
                key_file.write_bytes(key_pem)
                ctx.load_cert_chain(str(cert_file), str(key_file))
        self.headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.pool = urllib3.PoolManager(num_pools=4, maxsize=16, ssl_context=ctx, retries=False)

    @classmethod
    def from_kubeconfig(cls, path: str | os.PathLike[str], user_agent: str = "localkube") -> KubeAPI:
        config = yaml.safe_load(Path(path).read_text())
        current = config.get("current-context")
        contexts = {c["name"]: c["context"] for c in config.get("contexts", [])}
        context = contexts.get(current) or next(iter(contexts.values()))
        cluster = {c["name"]: c["cluster"] for c in config["clusters"]}[context["cluster"]]
        user = {u["name"]: u["user"] for u in config["users"]}[context["user"]]

        def data(obj: Obj, key: str) -> bytes | None:
            if obj.get(f"{key}-data"):
                return base64.b64decode(obj[f"{key}-data"])
            if obj.get(key):
                return Path(obj[key]).read_bytes()
            return None

        ca = data(cluster, "certificate-authority")
        if ca is None:
            raise ValueError(f"{path}: the cluster has no certificate-authority(-data)")
        return cls(cluster["server"], ca, cert_pem=data(user, "client-certificate"),
                   key_pem=data(user, "client-key"), token=user.get("token"), user_agent=user_agent)

    # --------------------------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Obj | list[Any] | None = None, *,
                params: dict[str, Any] | None = None, content_type: str = "application/json",
                timeout: float = 30.0) -> Obj:
        url = self.server + path
        if params:
            url += "?" + urlencode({k: v for k, v in params.items() if v is not None})
        headers = dict(self.headers)
        payload = None
        if body is not None:
            headers["Content-Type"] = content_type
            payload = json.dumps(body).encode()
        try:
            response = self.pool.request(method, url, body=payload, headers=headers, timeout=timeout,
                                         preload_content=True)
        except urllib3.exceptions.HTTPError as exc:
            raise ApiUnreachable(f"{method} {path}: {exc}") from exc
        return self._decode(response)

    @staticmethod
    def _decode(response: Any) -> Obj:
        text = response.data.decode(errors="replace")
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = {"message": text}
        if response.status >= 400:
            raise ApiError(response.status, str(data.get("reason", response.reason)),
                           str(data.get("message", text)), data if isinstance(data, dict) else None)
        return data if isinstance(data, dict) else {"items": data}

    def get(self, path: str, **params: Any) -> Obj | None:
        """The object, or None if it does not exist."""
        try:
            return self.request("GET", path, params=params or None)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, path: str, body: Obj) -> Obj:
        return self.request("POST", path, body)

    def merge_patch(self, path: str, body: Obj) -> Obj:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def delete(self, path: str, body: Obj | None = None) -> Obj | None:
        try:
            return self.request("DELETE", path, body)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def watch(self, path: str, resource_version: str, timeout_seconds: int = 60,
              **params: Any) -> Iterator[Obj]:
        """Events of a watch (``{"type": ..., "object": ...}``) until the server ends it."""
        query = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": timeout_seconds,
                 "allowWatchBookmarks": "true", **params}
        url = f"{self.server}{path}?{urlencode(query)}"
        response = self.pool.request("GET", url, headers=self.headers, preload_content=False,
                                     timeout=urllib3.Timeout(connect=5, read=timeout_seconds + 10))
        try:
            if response.status >= 400:
                response.data  # noqa: B018 - read the error body
                self._decode(response)
            buffer = b""
            for chunk in response.stream(4096):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            response.release_conn()
