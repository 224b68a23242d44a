"""An operator started with a kubeconfig that embeds its client certificate and private key (the local control
plane's, a developer's) leaves no copy of them on disk: the Kubernetes client library writes them to temporary
files for its TLS context and removes those only at a clean exit, so every killed operator used to leave its
private key in /tmp. Now they are gone once the client is built, even when the process is killed right after,
and a second client in the same process still gets its key."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
import yaml
from bookie_operator.kube import Kube

_CONNECT_THEN_DIE = """
import asyncio, os, signal, sys
from bookie_operator.kube import Kube
asyncio.run(Kube.connect(sys.argv[1]))
print("connected", flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs: evicted, OOM-killed
"""


def _kubeconfig(path: Path) -> Path:
    ca = trustme.CA()
    client = ca.issue_cert("bookie-operator")

    def data(pem: bytes) -> str:
        return base64.b64encode(pem).decode()

    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": "https://127.0.0.1:1",
                                                   "certificate-authority-data": data(ca.cert_pem.bytes())}}],
        "users": [{"name": "admin", "user": {"client-certificate-data": data(client.cert_chain_pems[0].bytes()),
                                             "client-key-data": data(client.private_key_pem.bytes())}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}]}))
    return path


def _left_in(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


async def test_no_certificate_or_key_file_outlives_the_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    for _ in range(2):  # the second reads the same embedded data: its files must be written again
        kube = await Kube.connect(str(kubeconfig))
        await kube.close()
        assert _left_in(temporary) == []


def test_a_killed_operator_leaves_no_key_behind(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    run = subprocess.run([sys.executable, "-c", _CONNECT_THEN_DIE, str(kubeconfig)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "TMPDIR": str(temporary)})
    assert run.returncode == -signal.SIGKILL and "connected" in run.stdout, run.stderr
    assert _left_in(temporary) == []
