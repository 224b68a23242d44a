"""Kubeconfig files: client certificates or bearer tokens, CA embedded."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(path: Path, *, server: str, ca_pem: bytes, user: str, context: str = "localkube",
                     cert_pem: bytes | None = None, key_pem: bytes | None = None, token: str | None = None,
                     namespace: str | None = None) -> Path:
    credentials: dict[str, str] = {}
    if cert_pem is not None and key_pem is not None:
        credentials = {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}
    elif token is not None:
        credentials = {"token": token}
    else:
        raise ValueError("a kubeconfig needs a client certificate and key, or a token")
    ctx: dict[str, str] = {"cluster": "localkube", "user": user}
    if namespace:
        ctx["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "localkube", "cluster": {"server": server,
                                                       "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path
