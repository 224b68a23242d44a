"""A second, private cluster beside the session's: start-to-ready time (printed and recorded in docs, not
asserted), its own node network (namespace, link, pod CIDR) distinct from the session cluster's, status with
log paths, service account kubeconfigs under RBAC, a crashed component reported, and `down` leaving
nothing running and nothing of its network: no component, no pod process, ports free, no namespace, link,
route or claim."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from bookie_fleet.cli import main as fleet_main
from localkube.cli import main as cli_main
from localkube.cluster import LocalCluster
from localkube.kapi import ApiError, KubeAPI

from localkube import network, procs
from tests.support.kube import container_pid, pod_ready, wait_for


def test_cluster_up_status_service_accounts_and_clean_down(tmp_path: Path, kube_cluster: LocalCluster,
                                                           capsys: object) -> None:
    cluster = LocalCluster(tmp_path / "c", ephemeral_ports=True, node_name="lifecycle")
    started = time.monotonic()
    try:
        cluster.up()
        print(f"\n[localkube] start-to-ready: {time.monotonic() - started:.1f}s (binaries prebuilt)")
        status = cluster.status()
        assert status.healthy and status.apiserver_ready
        assert [c.name for c in status.components] == ["etcd", "kube-apiserver", "kube-controller-manager",
                                                       "pod-runner", "kube-proxy"]
        assert all(c.log.is_file() for c in status.components)
        net, session_net = cluster.node_network, kube_cluster.node_network
        assert net.index != session_net.index and net.pod_cidr != session_net.pod_cidr
        assert net.netns in network.netns_names() and Path(f"/sys/class/net/{net.host_veth}").exists()

        # Service account kubeconfigs: what RBAC allows, and nothing else.
        api = cluster.api()
        plain = KubeAPI.from_kubeconfig(cluster.service_account_kubeconfig("ops", "operator"))
        try:
            plain.request("GET", "/api/v1/namespaces/ops/pods")
            raise AssertionError("an unbound service account must not list pods")
        except ApiError as exc:
            assert exc.status == 403
            assert 'User "system:serviceaccount:ops:operator" cannot list resource "pods"' in exc.message
        admin_sa = KubeAPI.from_kubeconfig(cluster.service_account_kubeconfig("ops", "admin",
                                                                              cluster_role="cluster-admin"))
        assert admin_sa.request("GET", "/api/v1/namespaces/ops/pods")["items"] == []

        # A pod, so that `down` has a pod process to stop.
        api.create("/api/v1/namespaces/ops/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                   "spec": {"containers": [{"name": "c", "image": "busybox",
                                                                            "command": ["sleep", "3600"]}]}})
        pod = wait_for(lambda: (lambda p: p if p and pod_ready(p) else None)(
            api.get("/api/v1/namespaces/ops/pods/p")), 60, what="pod Ready")
        pod_pid = container_pid(pod)
        assert pod_pid is not None

        # The CLI's status: 0 while healthy; a crashed component is reported with its log path.
        assert fleet_main(["cluster", "--state-dir", str(cluster.state_dir), "status"]) == 0
        kcm = next(c for c in status.components if c.name == "kube-controller-manager")
        assert kcm.pid is not None
        os.kill(kcm.pid, signal.SIGKILL)
        wait_for(lambda: not procs.alive(kcm.pid), 10, what="kube-controller-manager gone")   # type: ignore[arg-type]
        assert cli_main(["--state-dir", str(cluster.state_dir), "status"]) == 1
        out = capsys.readouterr().out  # type: ignore[attr-defined]
        assert "kube-controller-manager  DOWN" in out
        assert str(cluster.log_path("kube-controller-manager")) in out
    finally:
        state = cluster._load_state()
        cluster.down()
    pids = [int(p["pid"]) for p in state.get("processes", {}).values()]
    assert pids and not any(procs.alive(pid) for pid in pids)
    assert not os.path.exists(f"/proc/{pod_pid}")
    assert not list((cluster.state_dir / "runner" / "procs").iterdir())
    ports = state["ports"]
    assert all(procs.port_free(port) for port in ports.values()), ports
    assert not any(n == net.netns or n.startswith(net.pod_netns_prefix) for n in network.netns_names())
    assert not Path(f"/sys/class/net/{net.host_veth}").exists()
    assert net.pod_cidr not in subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    assert not (network.REGISTRY / str(net.index)).exists()
    assert cli_main(["--state-dir", str(cluster.state_dir), "status"]) == 3
