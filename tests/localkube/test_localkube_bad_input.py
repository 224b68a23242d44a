"""Bad input gives clear errors: no Go toolchain, binaries not built (kube-router's included); a port in use is
avoided, not fatal."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
from localkube.binaries import MissingBinaryError, find_binaries
from localkube.cli import main as cli_main
from localkube.cluster import ClusterError, LocalCluster
from localkube.firewall import FirewallError, find_kube_router

from localkube import procs

REPO = Path(__file__).resolve().parents[2]


def test_bootstrap_without_go_says_what_to_install(tmp_path: Path) -> None:
    result = subprocess.run(["bash", str(REPO / "scripts/bootstrap.d/kube.sh")], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BOOKIE_FLEET_CACHE": str(tmp_path)})
    assert result.returncode == 1
    assert "missing 'go': install a Go toolchain >= 1.24 from https://go.dev/dl/" in result.stderr
    assert not list(tmp_path.glob("kube-*"))


def test_missing_binaries_name_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("BOOKIE_FLEET_KUBE_BIN", raising=False)
    with pytest.raises(MissingBinaryError, match=r"'etcd' not found .* ./scripts/bootstrap"):
        find_binaries()
    assert cli_main(["--state-dir", str(tmp_path / "c"), "up"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bookie-fleet cluster up: 'etcd' not found") and "./scripts/bootstrap" in err
    assert not (tmp_path / "c" / "cluster.json").exists()


def test_network_policy_without_kube_router_or_a_cluster_names_the_fix(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("BOOKIE_FLEET_NETPOLICY_BIN", str(tmp_path))
    with pytest.raises(FirewallError, match=r"'kube-router' not found .* BOOKIE_FLEET_PARTS=netpolicy ./scripts/boot"):
        find_kube_router()
    with pytest.raises(ClusterError, match=r"no cluster running .* `bookie-fleet cluster up` first"):
        LocalCluster(tmp_path / "c").enforce_network_policy()


def test_a_port_in_use_is_avoided() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        chosen = procs.pick_port(taken)
        assert chosen != taken and procs.port_free(chosen)
    free = procs.pick_port(0)
    assert procs.pick_port(free) == free
