"""The node network of a run that crashed (its claim's creator gone, no process left in its namespace) is torn
down by the sweep every cluster start makes before claiming its own: namespace, pods' namespaces, link,
routes and claim. A live cluster's network is left alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from localkube.cluster import LocalCluster

from localkube import network

CRASHING_UP = """\
import subprocess, sys
from pathlib import Path
from localkube import network
net = network.allocate(Path(sys.argv[1]))
subprocess.run(["ip", "netns", "add", net.pod_netns_prefix + "orphan"], check=True)
print(net.index)
"""   # exits without releasing anything, as a killed `cluster up` would


def _routes() -> str:
    return subprocess.run(["ip", "route"], capture_output=True, text=True, check=True).stdout


def test_next_start_removes_a_crashed_runs_network(tmp_path: Path, kube_cluster: LocalCluster) -> None:
    out = subprocess.run([sys.executable, "-c", CRASHING_UP, str(tmp_path / "crashed")], capture_output=True,
                         text=True, check=True).stdout
    crashed = network.NodeNetwork(int(out))
    assert {crashed.netns, crashed.pod_netns_prefix + "orphan"} <= set(network.netns_names())
    assert Path(f"/sys/class/net/{crashed.host_veth}").exists() and crashed.pod_cidr in _routes()

    # What every cluster start does before claiming its own network.
    assert crashed.index in network.sweep()
    assert not any(n == crashed.netns or n.startswith(crashed.pod_netns_prefix) for n in network.netns_names())
    assert not Path(f"/sys/class/net/{crashed.host_veth}").exists()
    assert crashed.pod_cidr not in _routes()
    assert not (network.REGISTRY / str(crashed.index)).exists()
    # The session's cluster (alive: its runner and kube-proxy are in its node namespace) kept its network.
    assert kube_cluster.node_network.netns in network.netns_names()
    assert (network.REGISTRY / str(kube_cluster.node_network.index)).exists()
