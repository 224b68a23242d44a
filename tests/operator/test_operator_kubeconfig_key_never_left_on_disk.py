"""An operator started with a kubeconfig that embeds its client certificate and private key (the local control
plane's, a developer's) leaves no copy of them on disk: the Kubernetes client library writes them to temporary
files for its TLS context and removes those only at a clean exit, so every killed operator used to leave its
private key in /tmp. Now they are gone once the client is built, even when the process is killed right after,
and a second client in the same process still gets its key. Kopf's own connection, which by default logs in
through the same library, is given the operator's credentials in memory instead, its client certificate and key
as in-memory files (Kopf writes key data to a temporary file for each session it opens), so a whole operator
killed once it has logged in leaves nothing either."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trustme
import yaml
from bookie_operator import handlers
from bookie_operator.kube import Kube

_CONNECT_THEN_DIE = """
import asyncio, os, signal, sys
from bookie_operator import handlers
from bookie_operator.kube import Kube
asyncio.run(Kube.connect(sys.argv[1]))
print("connected", flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs: evicted, OOM-killed
"""


def _data(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


def _kubeconfig(path: Path, user: dict[str, str] | None = None) -> Path:
    """A kubeconfig whose server refuses connections (port 1), with an embedded client certificate and key, or
    ``user``'s credentials."""
    ca = trustme.CA()
    if user is None:
        client = ca.issue_cert("bookie-operator")
        user = {"client-certificate-data": _data(client.cert_chain_pems[0].bytes()),
                "client-key-data": _data(client.private_key_pem.bytes())}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": "https://127.0.0.1:1",
                                                   "certificate-authority-data": _data(ca.cert_pem.bytes())}}],
        "users": [{"name": "admin", "user": user}],
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


def test_a_killed_operator_leaves_no_key_behind_once_kopf_has_logged_in(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        operator = subprocess.Popen(
            [sys.executable, "-m", "bookie_operator", "--kubeconfig", str(kubeconfig), "--namespace", "keys",
             "--no-manage-crd", "--liveness", "", "--log-format", "plain"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "TMPDIR": str(temporary)})
    try:
        deadline = time.monotonic() + 60
        # Kopf's words once its login handlers have answered; its first requests are refused after that.
        while "Initial authentication has finished" not in log.read_text(errors="replace"):
            assert operator.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
    finally:
        operator.kill()  # no exit handler runs: evicted, OOM-killed
        operator.wait(timeout=30)
    assert _left_in(temporary) == []
    assert "Activity 'login' succeeded" in log.read_text(), log.read_text()[-3000:]  # the operator's own login


async def test_kopf_loads_the_client_key_from_memory_never_from_a_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Handed the key as data, Kopf writes it to $TMPDIR for the moment it builds each session's TLS context: a kill
    # in that moment (right after its login, as it opens its first sessions) left the key behind.
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig")
    key = base64.b64decode(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["client-key-data"])
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr("tempfile.tempdir", None)
    info = await handlers.kubeconfig_connection(str(kubeconfig))
    assert info.certificate_data is None and info.private_key_data is None
    paths = [str(info.certificate_path), str(info.private_key_path)]
    for path in paths:
        assert os.readlink(path).startswith("/memfd:bookie-operator-"), os.readlink(path)  # memory, no disk
    assert await asyncio.to_thread(Path(paths[1]).read_bytes) == key
    info.as_ssl_context()  # Kopf's own loading of them, as for each session it opens
    again = await handlers.kubeconfig_connection(str(kubeconfig))  # a login again: the same files, no more
    assert [str(again.certificate_path), str(again.private_key_path)] == paths
    assert _left_in(temporary) == []


async def test_kopf_presents_the_kubeconfig_token_as_the_operator_does(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", user={"token": "sa-token-1"})
    info = await handlers.kubeconfig_connection(str(kubeconfig))
    assert info.as_http_headers() == {"Authorization": "Bearer sa-token-1"}
    assert info.server == "https://127.0.0.1:1" and info.certificate_data is None and not info.insecure
    assert isinstance(info.ca_data, bytes) and info.ca_data.startswith(b"-----BEGIN CERTIFICATE"), info.ca_data
