"""NetworkPolicy enforcement for a local cluster: kube-router's firewall controller alone, in the node's namespace.

kube-router (``github.com/cloudnativelabs/kube-router/v2``, built by scripts/bootstrap.d/netpolicy.sh) runs with
``--run-firewall`` only: no routing, no service proxy (kube-proxy keeps that job). It watches pods, namespaces
and NetworkPolicies and programs iptables chains (``KUBE-ROUTER-*``, ``KUBE-POD-FW-*``, ``KUBE-NWPLCY-*``) and
ipsets (``KUBE-SRC-*``, ``KUBE-DST-*``) in the node's network namespace, where the pods' bridge is: the bridge
hands bridged traffic to iptables (``net.bridge.bridge-nf-call-iptables``, set by ``localkube.network``).
Traffic from the node itself (the runner's probes) stays admitted, as on any node.

kube-router has had security flaws reported against it; it is used here for a local test cluster only.

kube-router 2.1's own ``--cleanup-config`` cleans nothing of the firewall (it runs on an empty controller),
so ``cleanup`` removes its chains, the jumps into them and its ipsets itself.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

BIN_ENV = "BOOKIE_FLEET_NETPOLICY_BIN"
BINARY = "kube-router"
USER = "system:kube-router"
HEALTH_PORT = 20244
CHAIN_PREFIXES = ("KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-")
IPSET_PREFIXES = ("KUBE-SRC-", "KUBE-DST-")
FORWARD_CHAIN = "KUBE-ROUTER-FORWARD"

Obj = dict[str, Any]


class FirewallError(RuntimeError):
    """kube-router is missing, or its rules could not be read or removed (the message says which command)."""


def find_kube_router(bin_dir: Path | None = None) -> Path:
    directory = bin_dir or (Path(os.environ[BIN_ENV]) if os.environ.get(BIN_ENV) else None)
    if directory is not None and (directory / BINARY).is_file():
        return directory / BINARY
    found = shutil.which(BINARY)
    if found:
        return Path(found)
    raise FirewallError(f"'{BINARY}' not found (${BIN_ENV}={directory or '(unset)'}, nor on PATH): NetworkPolicy "
                        "enforcement needs it; build it with BOOKIE_FLEET_PARTS=netpolicy ./scripts/bootstrap "
                        "(scripts/bootstrap.d/netpolicy.sh) and `source` the env file it prints.")


def argv(binary: Path, kubeconfig: Path, node_name: str, service_cidr: str) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--hostname-override={node_name}",
            "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
            f"--service-cluster-ip-range={service_cidr}", f"--health-port={HEALTH_PORT}",
            # Policies change within a test: kube-router syncs on each change; this is only its resync.
            "--iptables-sync-period=1m", "--metrics-port=0"]


def rbac_objects() -> list[tuple[str, Obj]]:
    """What the firewall controller reads (its informers), and nothing it could change."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    read = ["get", "list", "watch"]
    role: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "localkube:kube-router"},
                 "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces", "nodes", "services", "endpoints"],
                            "verbs": read},
                           {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
                           {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": read}]}
    binding: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": "localkube:kube-router"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "localkube:kube-router"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]}
    return [(f"{rbac}/clusterroles", role), (f"{rbac}/clusterrolebindings", binding)]


def _run(netns: Path, *args: str) -> str:
    command = ["nsenter", f"--net={netns}", "--", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise FirewallError(f"`{' '.join(command)}` failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def _ours(name: str, prefixes: tuple[str, ...]) -> bool:
    return name.startswith(prefixes)


def chains(netns: Path) -> list[str]:
    """kube-router's chains in the filter table of ``netns``."""
    return [line[1:].split()[0] for line in _run(netns, "iptables-save", "-t", "filter").splitlines()
            if line.startswith(":") and _ours(line[1:].split()[0], CHAIN_PREFIXES)]


def ipsets(netns: Path) -> list[str]:
    return [n for n in _run(netns, "ipset", "list", "-n").split() if _ours(n, IPSET_PREFIXES)]


def enforcing(netns: Path) -> bool:
    """Whether kube-router's first sync is in place (its forward chain exists and the FORWARD chain jumps there)."""
    rules = _run(netns, "iptables-save", "-t", "filter").splitlines()
    return any(r.startswith("-A FORWARD ") and f"-j {FORWARD_CHAIN}" in r for r in rules)


def cleanup(netns: Path) -> None:
    """Remove kube-router's jumps, chains and ipsets from ``netns`` (rules first: a set in use cannot go)."""
    for line in _run(netns, "iptables-save", "-t", "filter").splitlines():
        if not line.startswith("-A "):
            continue
        words = shlex.split(line)
        chain, target = words[1], words[words.index("-j") + 1] if "-j" in words else ""
        if not _ours(chain, CHAIN_PREFIXES) and _ours(target, CHAIN_PREFIXES):
            _run(netns, "iptables", "-t", "filter", "-D", *words[1:])
    ours = chains(netns)
    for chain in ours:
        _run(netns, "iptables", "-t", "filter", "-F", chain)
    for chain in ours:
        _run(netns, "iptables", "-t", "filter", "-X", chain)
    for name in ipsets(netns):
        _run(netns, "ipset", "destroy", name)
