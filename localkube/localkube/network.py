"""The node network of a local cluster: a network namespace standing in for the node, as a kind node's container.

Each cluster claims a number ``n`` machine-wide (one file per number in ``/tmp/localkube-networks``, created
exclusively), so that concurrent clusters never share a name, an address or a firewall rule:

- the node's network namespace ``localkube-<n>``: the pod runner (our kubelet), kube-proxy and the pods'
  bridge ``cni0`` live there; kube-proxy's iptables rules are the namespace's own, so two clusters' proxies
  never rewrite each other's chains;
- a veth pair, ``lkh<n>`` on the machine (``10.240.<n>.1/30``) and ``eth0`` in the node (``10.240.<n>.2``), the
  node's default route pointing at the machine: this is how pods reach the API server and ZooKeeper, which
  run on the machine;
- the pod CIDR ``10.244.<n>.0/24`` (the bridge plugin's host-local IPAM), routed by the machine via the node, so
  tests and the operator on the machine reach pods by IP;
- the pods' own network namespaces ``lk<n>-<pod uid>``.

The machine does not forward packets (its ``ip_forward`` is left alone), so pods reach nothing beyond the
machine. Routes of type ``unreachable`` over the whole localkube ranges (kept while any cluster network
exists) make a pod or service address of a cluster that is gone fail at once instead of following the
default route out of the machine. A claim whose creator is gone and whose node namespace holds no process
(a crashed run) is torn down by the next cluster that starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REGISTRY = Path(os.environ.get("LOCALKUBE_NETWORK_REGISTRY", "/tmp/localkube-networks"))
NETNS_DIR = Path("/var/run/netns")
LINK_RANGE = ipaddress.IPv4Network("10.240.0.0/16")      # machine <-> node links, a /30 each
POD_RANGE = ipaddress.IPv4Network("10.244.0.0/16")       # pod CIDRs, a /24 each
SERVICE_CIDR = "10.96.0.0/16"                            # every cluster's own: translated inside its node
GUARDED = (str(LINK_RANGE), str(POD_RANGE), SERVICE_CIDR)
MAX_CLUSTERS = 250


class NetworkError(RuntimeError):
    """The node network could not be set up (the message names the command and what it said)."""


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise NetworkError(f"{argv[0]} not found: localkube's pod network needs iproute2 and util-linux "
                           "(scripts/bootstrap.d/net.sh)") from exc
    if check and result.returncode != 0:
        raise NetworkError(f"`{' '.join(argv)}` failed ({result.returncode}): {result.stderr.strip()}")
    return result


@dataclass(frozen=True)
class NodeNetwork:
    """The names and addresses of cluster number ``index``'s node network."""

    index: int

    @property
    def netns(self) -> str:
        return f"localkube-{self.index}"

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.netns

    @property
    def host_veth(self) -> str:
        return f"lkh{self.index}"

    @property
    def host_ip(self) -> str:
        """The machine's address on the node link: where pods reach the API server and ZooKeeper."""
        return str(LINK_RANGE.network_address + (self.index << 8) + 1)

    @property
    def node_ip(self) -> str:
        """The node's address (its InternalIP): kube-proxy, the kubelet endpoint, hostNetwork pods."""
        return str(LINK_RANGE.network_address + (self.index << 8) + 2)

    @property
    def pod_cidr(self) -> str:
        return str(ipaddress.IPv4Network((int(POD_RANGE.network_address) + (self.index << 8), 24)))

    @property
    def pod_netns_prefix(self) -> str:
        return f"lk{self.index}-"

    def in_node(self, argv: list[str]) -> list[str]:
        """``argv`` run in the node's network namespace (nsenter execs it: the pid stays the program's)."""
        return ["nsenter", f"--net={self.netns_path}", "--", *argv]

    # ----------------------------------------------------------------------------------- plumbing
    def create(self) -> None:
        """Build the node namespace, the link and the routes (whatever a crashed run left is removed first)."""
        self.destroy()
        ns, veth = self.netns, self.host_veth
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _run("ip", "addr", "add", f"{self.host_ip}/30", "dev", veth)
        _run("ip", "link", "set", veth, "up")
        _run("ip", "-n", ns, "addr", "add", f"{self.node_ip}/30", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "route", "add", "default", "via", self.host_ip)
        # The node routes between its pods and the machine; bridged pod-to-pod traffic goes through iptables
        # so that kube-proxy's rules also apply to a pod reaching a Service whose endpoint shares its bridge.
        _run(*self.in_node(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
                            "net.bridge.bridge-nf-call-iptables=1"]))
        _run("ip", "route", "add", self.pod_cidr, "via", self.node_ip, "dev", veth)

    def destroy(self) -> None:
        """Remove the pods' namespaces, the link (its routes go with it) and the node namespace, if present.
        Deleting the veth first makes its removal immediate (a namespace's devices go asynchronously)."""
        for name in netns_names():
            if name.startswith(self.pod_netns_prefix):
                _run("ip", "netns", "delete", name, check=False)
        if Path(f"/sys/class/net/{self.host_veth}").exists():
            _run("ip", "link", "delete", self.host_veth, check=False)
        if self.netns_path.exists():
            _run("ip", "netns", "delete", self.netns, check=False)

    def processes(self) -> list[int]:
        """Processes whose network namespace is the node's (kube-proxy, the runner)."""
        try:
            inode = self.netns_path.stat().st_ino
        except OSError:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(entry / "ns" / "net") == f"net:[{inode}]":
                        found.append(int(entry.name))
        return found


def netns_names() -> list[str]:
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


@contextlib.contextmanager
def _registry_lock() -> Iterator[None]:
    REGISTRY.mkdir(parents=True, exist_ok=True)
    with open(REGISTRY / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _claims() -> dict[int, dict[str, object]]:
    claims: dict[int, dict[str, object]] = {}
    for entry in REGISTRY.iterdir():
        if entry.name.isdigit():
            try:
                claims[int(entry.name)] = json.loads(entry.read_text())
            except (OSError, ValueError):
                claims[int(entry.name)] = {}
    return claims


def _stale(index: int, claim: dict[str, object]) -> bool:
    pid = claim.get("pid")
    if isinstance(pid, int) and Path(f"/proc/{pid}").exists():
        return False
    return not NodeNetwork(index).processes()


def _check_ranges_free() -> None:
    """Refuse to route localkube's ranges over a network this machine already uses."""
    routes = json.loads(_run("ip", "-j", "-4", "route", "show").stdout or "[]")
    ours = [ipaddress.IPv4Network(r) for r in GUARDED]
    for route in routes:
        dst = route.get("dst", "default")
        if dst == "default" or route.get("type") == "unreachable" or str(route.get("dev", "")).startswith("lkh"):
            continue
        network = ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False)
        clash = next((r for r in ours if r.overlaps(network)), None)
        if clash is not None:
            raise NetworkError(f"this machine routes {network} (dev {route.get('dev')}), which overlaps localkube's "
                               f"{clash}: the pod network cannot be set up here")


def _guard(on: bool) -> None:
    for cidr in GUARDED:
        if on:
            _run("ip", "route", "replace", "unreachable", cidr)
        else:
            _run("ip", "route", "delete", "unreachable", cidr, check=False)


def sweep() -> list[int]:
    """Tear down the networks of crashed runs (stale claims) and namespaces no claim accounts for."""
    with _registry_lock():
        return _sweep_locked()


def _sweep_locked() -> list[int]:
    removed = []
    claims = _claims()
    for index, claim in claims.items():
        if _stale(index, claim):
            NodeNetwork(index).destroy()
            (REGISTRY / str(index)).unlink(missing_ok=True)
            removed.append(index)
    for name in netns_names():
        index_text = name.removeprefix("localkube-")
        if name.startswith("localkube-") and index_text.isdigit() and int(index_text) not in claims:
            network = NodeNetwork(int(index_text))
            if not network.processes():
                network.destroy()
                removed.append(network.index)
    if not _claims():
        _guard(False)
    return removed


def allocate(state_dir: Path, preferred: int | None = None) -> NodeNetwork:
    """Claim a free number (``preferred`` if free: a restarted cluster keeps its addresses) and build its network."""
    with _registry_lock():
        _sweep_locked()
        _check_ranges_free()
        claims = _claims()
        candidates = [preferred] if preferred is not None else []
        candidates += [i for i in range(MAX_CLUSTERS) if i != preferred]
        for index in candidates:
            if index in claims or not 0 <= index < MAX_CLUSTERS:
                continue
            try:
                fd = os.open(REGISTRY / str(index), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as f:
                json.dump({"state_dir": str(state_dir), "pid": os.getpid()}, f)
            network = NodeNetwork(index)
            try:
                _guard(True)
                network.create()
            except BaseException:
                network.destroy()
                (REGISTRY / str(index)).unlink(missing_ok=True)
                raise
            return network
        raise NetworkError(f"all {MAX_CLUSTERS} localkube cluster networks are in use ({REGISTRY})")


def release(network: NodeNetwork, state_dir: Path) -> None:
    """Tear down ``network`` and give its number back (only if ``state_dir``'s cluster holds it)."""
    with _registry_lock():
        path = REGISTRY / str(network.index)
        try:
            owner = json.loads(path.read_text()).get("state_dir")
        except (OSError, ValueError):
            owner = None
        if owner == str(state_dir):
            network.destroy()
            path.unlink(missing_ok=True)
        if not _claims():
            _guard(False)
