"""Pod network sandboxes: a network namespace per pod, attached to the node's bridge by the CNI plugins.

The runner runs in the node's network namespace (see ``localkube.network``); for each pod it creates the
namespace ``<prefix><pod uid>`` and calls Debian's CNI ``bridge`` plugin (with ``host-local`` IPAM over the
node's pod CIDR) as a container runtime does: ``CNI_COMMAND=ADD``, the network configuration on stdin, the
result (the pod's address) on stdout. The bridge ``cni0`` is the pods' gateway; the node routes between it
and the machine. All containers of the pod join that namespace, so they share its address and ports, and
each pod may listen on ``0.0.0.0``. ``hostNetwork`` pods use the node's namespace and address.

The IPAM store lives in the runner's state directory; a runner that starts deletes every pod namespace of
its cluster and that store (a crashed runner's leftovers): its pods then get their sandboxes again, asking
for the address they had.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
log = logging.getLogger("localkube.runner")
NETNS_DIR = Path("/var/run/netns")
CNI_BIN_DIR = Path("/usr/lib/cni")     # Debian's containernetworking-plugins


class PodNetworkError(RuntimeError):
    """A pod's sandbox could not be set up (the kubelet's FailedCreatePodSandBox)."""


@dataclass(frozen=True)
class PodNetworkConfig:
    network_name: str   # the CNI network's name (one per cluster)
    pod_cidr: str
    netns_prefix: str   # pod namespaces are <prefix><pod uid>
    node_ip: str
    node_netns: Path
    cni_bin_dir: Path = CNI_BIN_DIR


class PodNetwork:
    def __init__(self, config: PodNetworkConfig, root: Path) -> None:
        self.config = config
        self.ipam_dir = root / "cni"
        self._lock = threading.Lock()   # one plugin call at a time (the first one creates the bridge)

    def conf(self) -> Obj:
        return {
            "cniVersion": "0.4.0", "name": self.config.network_name, "type": "bridge", "bridge": "cni0",
            "isGateway": True, "ipMasq": False,
            # A pod reaching its own Service address is sent back to itself through the bridge.
            "hairpinMode": True,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": self.config.pod_cidr}]],
                     "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(self.ipam_dir)},
        }

    def netns_name(self, uid: str) -> str:
        return f"{self.config.netns_prefix}{uid}"

    def netns_path(self, uid: str, host_network: bool = False) -> Path:
        return self.config.node_netns if host_network else NETNS_DIR / self.netns_name(uid)

    def _cni(self, command: str, uid: str, ip: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": uid, "CNI_NETNS": str(self.netns_path(uid)),
               "CNI_IFNAME": "eth0", "CNI_PATH": str(self.config.cni_bin_dir),
               "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        if ip:
            env["CNI_ARGS"] = f"IgnoreUnknown=1;IP={ip}"
        plugin = self.config.cni_bin_dir / "bridge"
        if not plugin.exists():
            raise PodNetworkError(f"CNI plugin {plugin} not found: install Debian's containernetworking-plugins "
                                  "(scripts/bootstrap.d/net.sh)")
        return subprocess.run([str(plugin)], input=json.dumps(self.conf()), capture_output=True, text=True,
                              env=env, timeout=60)

    def setup(self, uid: str, requested_ip: str | None = None) -> str:
        """The pod's namespace, attached to the bridge: its IP (``requested_ip`` if still free)."""
        name = self.netns_name(uid)
        with self._lock:
            self._teardown_locked(uid)
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
            result = self._cni("ADD", uid, requested_ip)
            if result.returncode != 0 and requested_ip:
                log.info("pod %s: address %s not available again (%s)", uid, requested_ip, result.stdout.strip())
                self._cni("DEL", uid)
                result = self._cni("ADD", uid)
            if result.returncode != 0:
                self._teardown_locked(uid)
                raise PodNetworkError(f"CNI bridge plugin ADD failed: {(result.stdout or result.stderr).strip()}")
        ips = json.loads(result.stdout).get("ips") or []
        if not ips:
            raise PodNetworkError(f"CNI bridge plugin gave no address: {result.stdout.strip()}")
        return str(ips[0]["address"]).split("/")[0]

    def teardown(self, uid: str) -> None:
        with self._lock:
            self._teardown_locked(uid)

    def _teardown_locked(self, uid: str) -> None:
        if (NETNS_DIR / self.netns_name(uid)).exists():
            result = self._cni("DEL", uid)
            if result.returncode != 0:
                log.warning("pod %s: CNI DEL failed: %s", uid, (result.stdout or result.stderr).strip())
            subprocess.run(["ip", "netns", "delete", self.netns_name(uid)], capture_output=True)

    def cleanup(self) -> list[str]:
        """Delete every pod namespace of this cluster and the IPAM store (a previous runner's leftovers)."""
        names = sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []
        removed = [n for n in names if n.startswith(self.config.netns_prefix)]
        with self._lock:
            for name in removed:
                self._teardown_locked(name.removeprefix(self.config.netns_prefix))
            shutil.rmtree(self.ipam_dir, ignore_errors=True)
        return removed


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise PodNetworkError(f"`ip {' '.join(args)}` failed: {result.stderr.strip()}")
