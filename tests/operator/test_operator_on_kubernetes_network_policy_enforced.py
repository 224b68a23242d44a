"""The bookies' NetworkPolicy, enforced (localkube with kube-router's firewall controller). By default no pod
reaches the bookie port, also not one of the bookies' namespace with the label earlier versions admitted;
once the spec names clients (a namespace and pod labels), those reach the bookie port and nothing else, and a
pod with the same labels in another namespace, or another pod of that namespace, still gets no TCP
connection to the bookie, admin or metrics port. The monitoring namespace reaches the metrics port only; the
operator (on this machine, named by an ipBlock) the admin port only. Before enforcement every pod connects
everywhere (so a refusal is the policy's doing), and turning enforcement off leaves no kube-router process,
chain or ipset behind."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer
from localkube.cluster import LocalCluster
from localkube.firewall import BINARY, chains, ipsets

from tests.operator.conftest import OperatorProcess, bookie_cluster, patch_spec, wait_ready
from tests.support.kube import KubeTarget, pod_ready, wait_for

pytestmark = pytest.mark.bootstrap_part("netpolicy")


Obj = dict[str, Any]
PORTS = {"bookie": 3181, "admin": 8080, "metrics": 8000}
PROBE = textwrap.dedent("""\
    import socket, sys
    for port in sys.argv[2:]:
        s = socket.socket()
        s.settimeout(3)
        try:
            s.connect((sys.argv[1], int(port)))
            print("open", end=" ")
        except OSError:
            print("closed", end=" ")
        finally:
            s.close()
""")


def _sleeper(name: str, labels: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": {
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "bookie-fleet/bookie:0.1.0", "command": ["sleep", "3600"]}]}}


def _reaches(netns: Path | None, ip: str) -> dict[str, bool]:
    """Which of the bookie's ports a TCP connection from ``netns`` (a pod's; None: this machine) gets to."""
    argv = [sys.executable, "-c", PROBE, ip, *map(str, PORTS.values())]
    command = ["nsenter", f"--net={netns}", "--", *argv] if netns else argv
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout.split()
    return {name: word == "open" for name, word in zip(PORTS, out, strict=True)}


@pytest.fixture
def other_namespaces(kube: KubeTarget) -> Iterator[dict[str, str]]:
    """A namespace for the named clients and one for monitoring, deleted afterwards."""
    names = {role: f"t-{uuid.uuid4().hex[:8]}-{role}" for role in ("clients", "monitoring")}
    for name in names.values():
        kube.api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield names
    finally:
        for name in names.values():
            kube.api.delete(f"/api/v1/namespaces/{name}")


def test_only_the_peers_the_spec_names_reach_each_port(
        kube: KubeTarget, kube_namespace: str, other_namespaces: dict[str, str], zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    local = kube.local
    assert local is not None, "enforcing NetworkPolicy needs the local cluster (BOOKIE_FLEET_KUBECONFIG is set)"
    ns, clients_ns, monitoring_ns = kube_namespace, other_namespaces["clients"], other_namespaces["monitoring"]
    started = time.monotonic()
    operator_factory(ns)
    by_name = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": clients_ns}},
               "podSelector": {"matchLabels": {"app": "broker"}}}
    network_policy = {
        "monitoring": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": monitoring_ns}}}],
        # The operator of these tests runs on this machine, outside the cluster: named by its address.
        "operator": [{"ipBlock": {"cidr": f"{local.host_ip}/32"}}],
    }
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers", replicas=1, ensembleSize=1,
                              networkPolicy=network_policy), namespace=ns)
    kube.apply([_sleeper("labelled", {"bookie-fleet.dev/client": "true"}), _sleeper("stranger", {})], namespace=ns)
    kube.apply([_sleeper("broker", {"app": "broker"})], namespace=clients_ns)
    kube.apply([_sleeper("stranger", {"app": "other"})], namespace=clients_ns)   # right namespace, wrong labels
    kube.apply([_sleeper("elsewhere", {"app": "broker"})], namespace=ns)   # right labels, wrong namespace
    kube.apply([_sleeper("prometheus", {"app": "prometheus"})], namespace=monitoring_ns)
    wait_ready(kube, ns, "bk")
    bookie_ip = kube.pods(ns, "app.kubernetes.io/instance=bk")[0]["status"]["podIP"]
    probes = {"labelled": (ns, "labelled"), "stranger": (ns, "stranger"), "broker": (clients_ns, "broker"),
              "wrong-labels": (clients_ns, "stranger"), "wrong-namespace": (ns, "elsewhere"),
              "monitoring": (monitoring_ns, "prometheus")}
    netns: dict[str, Path | None] = {"machine (operator)": None}
    for probe, (namespace, pod) in probes.items():
        uid = wait_for(functools.partial(_ready_uid, kube, namespace, pod), 120, what=f"pod {namespace}/{pod} ready")
        netns[probe] = Path("/var/run/netns") / f"{local.node_network.pod_netns_prefix}{uid}"
    seen: dict[str, dict[str, bool]] = {}

    def as_expected(expected: dict[str, dict[str, bool]]) -> bool:
        seen.update({p: _reaches(n, bookie_ip) for p, n in netns.items()})
        return seen == expected

    everywhere = {name: True for name in PORTS}
    wait_for(functools.partial(as_expected, {p: everywhere for p in netns}), 60, interval=2,
             what="every peer connecting to every port of the bookie before enforcement")

    nothing = {name: False for name in PORTS}
    by_default = {"machine (operator)": {"bookie": False, "admin": True, "metrics": False},
                  **{p: nothing for p in probes}, "monitoring": {"bookie": False, "admin": False, "metrics": True}}
    enforcing = time.monotonic()
    local.enforce_network_policy()
    try:
        wait_for(functools.partial(as_expected, by_default), 90, interval=2,
                 what="kube-router enforcing the bookies' default NetworkPolicy")
        print(f"\n[network policy] cluster ready and probed in {enforcing - started:.1f}s, enforced in "
              f"{time.monotonic() - enforcing:.1f}s")
        patch_spec(kube, ns, "bk", {"networkPolicy": {"clients": [by_name]}})
        named = {**by_default, "broker": {"bookie": True, "admin": False, "metrics": False}}
        wait_for(functools.partial(as_expected, named), 90, interval=2,
                 what="the operator's NetworkPolicy admitting the named clients, enforced")
    except BaseException:
        print(f"\n[network policy] last reading {seen}\n{local.log_path('kube-router').read_text()[-3000:]}")
        raise
    finally:
        _stop_and_check_clean(local)
    assert _reaches(netns["stranger"], bookie_ip) == everywhere, "enforcement off: stored, not enforced"


def _ready_uid(kube: KubeTarget, namespace: str, name: str) -> str | None:
    pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return str(pod["metadata"]["uid"]) if pod and pod_ready(pod) else None


def _stop_and_check_clean(local: LocalCluster) -> None:
    pid = next(c.pid for c in local.status().components if c.name == BINARY)
    local.stop_network_policy()
    assert not Path(f"/proc/{pid}").exists(), "kube-router stopped and reaped"
    node = local.node_network.netns_path
    assert (chains(node), ipsets(node)) == ([], []), "kube-router's rules and ipsets removed"
    assert not local.network_policy_enforced
