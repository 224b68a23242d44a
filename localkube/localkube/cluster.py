"""The local control plane: etcd, kube-apiserver, kube-controller-manager, the pod runner and kube-proxy.

``LocalCluster(state_dir).up()`` claims a node network (``localkube.network``: a network namespace standing
in for the node, with the pods' bridge), generates certificates and keys (once), starts the five components
in their own process groups (the runner and kube-proxy in the node's network namespace), installs cluster
DNS, waits until the API server is ready, the controller manager healthy, the default service account
exists, the runner's Node is Ready, kube-proxy healthy and CoreDNS serving, and records everything in
``state_dir/cluster.json`` so that another process (``bookie-fleet cluster down``) can stop it.
``down()`` stops kube-proxy and the pod runner first (it stops its pods), then the control plane, then kills
any pod process group still listed by the runner, deletes its leftover runc containers and tears the node
network down: nothing is left running, no namespace, link or route is left behind.
``up(network_policy=True)`` or ``enforce_network_policy()`` also starts kube-router's firewall controller in the
node's network namespace (``localkube.firewall``), so that NetworkPolicies are enforced; ``down()`` stops it
first.
One module over the usual size limit: each component's command line sits next to its start and readiness.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localkube import addons, firewall, network, procs
from localkube.binaries import find_binaries
from localkube.kapi import KubeAPI
from localkube.kubeconfig import write_kubeconfig
from localkube.pki import CertificateAuthority, service_account_keys
from localkube.serviceaccounts import service_account_kubeconfig

KUBE_VERSION_ENV = "BOOKIE_FLEET_KUBE_VERSION"
SERVICE_CIDR = network.SERVICE_CIDR
KUBERNETES_SERVICE_IP = "10.96.0.1"    # the first address of the service CIDR, as the API server allocates it
CLUSTER_DNS_IP = "10.96.0.10"          # kubeadm's and kind's choice
CLUSTER_DOMAIN = "cluster.local"
STORAGE_CLASS = "standard"          # the name kind gives its default StorageClass
EXPANDABLE_STORAGE_CLASS = "standard-xfs"   # claims of their own size, online expansion (runner/filesystems.py)
PROVISIONER = "localkube.io/local-path"
DEFAULT_PORTS = {"etcd": 2379, "etcd-peer": 2380, "kube-apiserver": 6443, "kube-controller-manager": 10257}
ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "pod-runner", "kube-proxy")
FIREWALL = "kube-router"   # optional: NetworkPolicy enforcement (``enforce_network_policy``)


class ClusterError(RuntimeError):
    """The cluster did not come up; the message names the component and ends with its log."""


def default_state_dir() -> Path:
    cache = os.environ.get("BOOKIE_FLEET_CACHE") or str(Path.home() / ".cache" / "bookie-fleet")
    return Path(cache) / "localkube"


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class ComponentStatus:
    name: str
    pid: int | None
    running: bool
    log: Path
    detail: str = ""


@dataclass
class ClusterStatus:
    state_dir: Path
    components: list[ComponentStatus] = field(default_factory=list)
    apiserver_ready: bool = False
    server: str = ""

    @property
    def healthy(self) -> bool:
        return self.apiserver_ready and all(c.running for c in self.components)

    @property
    def stopped(self) -> bool:
        return not any(c.running for c in self.components)


class LocalCluster:
    """One local cluster, its files under ``state_dir``.

    ``ports``: preferred ports (``DEFAULT_PORTS`` keys); a port in use is replaced by a free one. Pass
    ``ephemeral_ports=True`` (tests) to use free ports only.
    """

    def __init__(self, state_dir: Path | None = None, *, bin_dir: Path | None = None,
                 node_name: str = "localkube", ephemeral_ports: bool = False,
                 python: str | None = None) -> None:
        self.state_dir = (state_dir or default_state_dir()).resolve()
        self.bin_dir = bin_dir
        self.node_name = node_name
        self.ephemeral_ports = ephemeral_ports
        self.python = python or sys.executable
        self.pki_dir = self.state_dir / "pki"
        self.logs_dir = self.state_dir / "logs"
        self.state_file = self.state_dir / "cluster.json"
        self.admin_kubeconfig = self.state_dir / "admin.kubeconfig"
        self.ready_seconds: float | None = None
        self._children: dict[int, subprocess.Popen[bytes]] = {}   # processes this object started

    # ----------------------------------------------------------------------------------------- state
    def _load_state(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.state_file.read_text())
            return data
        except (OSError, ValueError):
            return {}

    def _save_state(self, state: dict[str, Any]) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_file)

    @property
    def server(self) -> str:
        state = self._load_state()
        port = state.get("ports", {}).get("kube-apiserver")
        if not port or "network" not in state:
            raise ClusterError(f"no cluster state in {self.state_dir}: run `bookie-fleet cluster up`")
        return f"https://{network.NodeNetwork(int(state['network']['index'])).host_ip}:{port}"

    @property
    def node_network(self) -> network.NodeNetwork:
        """The node network of the running cluster: pod CIDR, node and machine addresses."""
        state = self._load_state()
        if "network" not in state:
            raise ClusterError(f"no cluster network in {self.state_dir}: run `bookie-fleet cluster up`")
        return network.NodeNetwork(int(state["network"]["index"]))

    @property
    def host_ip(self) -> str:
        """This machine's address as pods see it (the API server listens there; so may ZooKeeper)."""
        return self.node_network.host_ip

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    def log_path(self, component: str) -> Path:
        return self.logs_dir / f"{component}.log"

    # ------------------------------------------------------------------------------------------- up
    def up(self, timeout: float = 180.0, *, network_policy: bool = False) -> LocalCluster:
        """Start whatever is not running and wait until the cluster is usable. Idempotent. ``network_policy``:
        also enforce NetworkPolicy (``enforce_network_policy``)."""
        self._up(timeout)
        if network_policy:
            self.enforce_network_policy(timeout)
        return self

    def _up(self, timeout: float) -> None:
        binaries = find_binaries(self.bin_dir)
        started = time.monotonic()
        state = self._load_state()
        procs_state: dict[str, Any] = state.get("processes", {})
        if procs_state and all(self._running(procs_state.get(name)) for name in ORDER) and self._readyz():
            return
        # Partial leftovers (a crashed component): restart cleanly.
        if procs_state or "network" in state:
            self.down()
        preferred = state.get("last_network")
        ports = self._choose_ports()
        net = network.allocate(self.state_dir, preferred=int(preferred) if preferred is not None else None)
        state = {"ports": ports, "processes": {}, "node": self.node_name, "started_at": time.time(),
                 "network": {"index": net.index, "pod_cidr": net.pod_cidr, "host_ip": net.host_ip,
                             "node_ip": net.node_ip, "netns": net.netns},
                 "last_network": net.index}
        self._save_state(state)
        try:
            self._write_pki_and_kubeconfigs(ports["kube-apiserver"], net)
            self._start(state, "etcd", self._etcd_argv(str(binaries["etcd"]), ports))
            self._wait("etcd", lambda: self._http_ok(f"http://127.0.0.1:{ports['etcd']}/health"), timeout)
            self._start(state, "kube-apiserver", self._apiserver_argv(str(binaries["kube-apiserver"]), ports, net))
            self._wait("kube-apiserver", self._readyz, timeout)
            self._start(state, "kube-controller-manager",
                        self._kcm_argv(str(binaries["kube-controller-manager"]), ports))
            self._start(state, "pod-runner", net.in_node(self._runner_argv(net)))
            self._start(state, "kube-proxy", net.in_node(self._proxy_argv(str(binaries["kube-proxy"]), net)))
            self._bootstrap_objects()
            self._wait("kube-controller-manager",
                       lambda: self._http_ok(f"https://127.0.0.1:{ports['kube-controller-manager']}/healthz",
                                             verify=False), timeout)
            self._wait("kube-controller-manager", self._default_service_account_exists, timeout,
                       what="the default ServiceAccount (serviceaccount controller)")
            self._wait("pod-runner", self._node_ready, timeout, what=f"Node {self.node_name} Ready")
            self._wait("kube-proxy", lambda: self._http_ok(f"http://{net.node_ip}:10256/healthz"), timeout,
                       what="kube-proxy /healthz (rules synced)")
            self._wait("pod-runner", lambda: addons.dns_ready(self.api()), timeout,
                       what="CoreDNS ready behind the kube-dns Service (kube-system/coredns)")
        except BaseException:
            self.down()
            raise
        self.ready_seconds = time.monotonic() - started
        state["ready_seconds"] = round(self.ready_seconds, 2)
        self._save_state(state)

    # ------------------------------------------------------------------------------ network policy
    def enforce_network_policy(self, timeout: float = 120.0) -> None:
        """Start kube-router's firewall controller in the node's network namespace (``localkube.firewall``) and
        wait until its rules are in place: from then on the cluster's NetworkPolicies are enforced. Idempotent."""
        state = self._load_state()
        if self._running(state.get("processes", {}).get(FIREWALL)):
            return
        if "network" not in state:
            raise ClusterError(f"no cluster running in {self.state_dir}: run `bookie-fleet cluster up` first")
        net = self.node_network
        binary = firewall.find_kube_router()
        addons.install(self.api(), firewall.rbac_objects())
        self._start(state, FIREWALL, net.in_node(firewall.argv(binary, self.state_dir / "kube-router.kubeconfig",
                                                               self.node_name, SERVICE_CIDR)))
        try:
            self._wait(FIREWALL, lambda: firewall.enforcing(net.netns_path), timeout,
                       what="kube-router's firewall rules in the node (KUBE-ROUTER-FORWARD)")
        except BaseException:
            self.stop_network_policy()
            raise

    def stop_network_policy(self) -> None:
        """Stop kube-router and remove its chains and ipsets: NetworkPolicies are stored, no longer enforced."""
        state = self._load_state()
        entry = state.get("processes", {}).pop(FIREWALL, None)
        if entry is not None:
            self._stop(entry)
            self._save_state(state)
        if "network" in state and self.node_network.netns_path.exists():
            firewall.cleanup(self.node_network.netns_path)

    @property
    def network_policy_enforced(self) -> bool:
        return self._running(self._load_state().get("processes", {}).get(FIREWALL))

    def _choose_ports(self) -> dict[str, int]:
        chosen: dict[str, int] = {}
        for name, preferred in DEFAULT_PORTS.items():
            chosen[name] = procs.pick_port(0 if self.ephemeral_ports else preferred, avoid=set(chosen.values()))
        return chosen

    def _write_pki_and_kubeconfigs(self, apiserver_port: int, net: network.NodeNetwork) -> None:
        ca = CertificateAuthority(self.pki_dir)
        # Issued again when the addresses change (a restart that got another node network).
        ca.issue("apiserver", "kube-apiserver", server=True, ips=(net.host_ip, KUBERNETES_SERVICE_IP, "127.0.0.1"),
                 dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                            f"kubernetes.default.svc.{CLUSTER_DOMAIN}"))
        ca.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", organizations=("kubeadm:cluster-admins",),
                 client=True)
        ca.issue("kubelet", f"system:node:{self.node_name}", organizations=("system:nodes",), server=True,
                 ips=(net.node_ip,), dns_names=("localhost", self.node_name))
        service_account_keys(self.pki_dir)
        server = f"https://{net.host_ip}:{apiserver_port}"
        ca_pem = ca.pair.cert_pem()
        users = {
            "admin": ("kubernetes-admin", ("system:masters",), self.admin_kubeconfig),
            "kcm": ("system:kube-controller-manager", (), self.state_dir / "kube-controller-manager.kubeconfig"),
            "runner": (f"localkube-runner:{self.node_name}", ("system:masters",),
                       self.state_dir / "pod-runner.kubeconfig"),
            # The default binding system:node-proxier grants this user what kube-proxy needs.
            "kube-proxy": ("system:kube-proxy", (), self.state_dir / "kube-proxy.kubeconfig"),
            # Read-only, by firewall.rbac_objects(): pods, namespaces and NetworkPolicies.
            "kube-router": (firewall.USER, (), self.state_dir / "kube-router.kubeconfig"),
        }
        for name, (cn, orgs, path) in users.items():
            pair = ca.issue(name, cn, organizations=orgs, client=True)
            write_kubeconfig(path, server=server, ca_pem=ca_pem, user=cn, cert_pem=pair.cert_pem(),
                             key_pem=pair.key_pem())

    def _etcd_argv(self, etcd: str, ports: dict[str, int]) -> list[str]:
        client = f"http://127.0.0.1:{ports['etcd']}"
        peer = f"http://127.0.0.1:{ports['etcd-peer']}"
        return [etcd, "--name=localkube", f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=localkube={peer}", "--unsafe-no-fsync=true", "--log-level=warn",
                "--quota-backend-bytes=2147483648"]

    def _apiserver_argv(self, binary: str, ports: dict[str, int], net: network.NodeNetwork) -> list[str]:
        pki = self.pki_dir
        return [
            binary,
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            # The machine's end of the node link: reachable from this machine and, through the `kubernetes`
            # Service (its endpoint is the advertised address), from pods.
            f"--bind-address={net.host_ip}", f"--advertise-address={net.host_ip}",
            f"--secure-port={ports['kube-apiserver']}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            # kubectl logs: the runner serves /containerLogs with a certificate of this CA.
            f"--kubelet-certificate-authority={pki / 'ca.crt'}",
            f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--authorization-mode=RBAC",
            "--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,"
            "DefaultTolerationSeconds,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota,"
            "StorageObjectInUseProtection,PodSecurity,Priority",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--allow-privileged=true",
            f"--cert-dir={self.state_dir / 'apiserver-certs'}",
            "--profiling=false",
        ]

    def _kcm_argv(self, binary: str, ports: dict[str, int]) -> list[str]:
        pki = self.pki_dir
        kubeconfig = self.state_dir / "kube-controller-manager.kubeconfig"
        return [
            binary,
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            # No cloud, no pod CIDRs and no kubelet heartbeats to judge nodes by.
            "--controllers=*,-node-ipam-controller,-node-lifecycle-controller",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            "--use-service-account-credentials=true",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['kube-controller-manager']}",
            f"--cert-dir={self.state_dir / 'kcm-certs'}",
            "--profiling=false",
        ]

    def _runner_argv(self, net: network.NodeNetwork) -> list[str]:
        return [self.python, "-m", "localkube.runner",
                "--kubeconfig", str(self.state_dir / "pod-runner.kubeconfig"),
                "--state-dir", str(self.state_dir / "runner"),
                "--node-name", self.node_name,
                "--node-ip", net.node_ip, "--node-netns", str(net.netns_path),
                "--pod-cidr", net.pod_cidr, "--pod-netns-prefix", net.pod_netns_prefix,
                "--cni-network", net.netns,
                "--kubernetes-service", f"{KUBERNETES_SERVICE_IP}:443",
                "--cluster-dns", CLUSTER_DNS_IP, "--cluster-domain", CLUSTER_DOMAIN,
                "--tls-cert", str(self.pki_dir / "kubelet.crt"), "--tls-key", str(self.pki_dir / "kubelet.key")]

    def _proxy_argv(self, binary: str, net: network.NodeNetwork) -> list[str]:
        return [
            binary,
            f"--kubeconfig={self.state_dir / 'kube-proxy.kubeconfig'}",
            f"--hostname-override={self.node_name}",
            "--proxy-mode=iptables",
            f"--cluster-cidr={net.pod_cidr}",
            # The node is a network namespace: the conntrack table's size and timeouts are the machine's, not
            # ours to set (kind runs kube-proxy the same way).
            "--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0s",
            "--conntrack-tcp-timeout-close-wait=0s",
            f"--healthz-bind-address={net.node_ip}:10256", f"--metrics-bind-address={net.node_ip}:10249",
            "--profiling=false",
        ]

    def _start(self, state: dict[str, Any], name: str, argv: list[str]) -> None:
        child = procs.start_detached(argv, self.log_path(name), cwd=self.state_dir)
        self._children[child.pid] = child
        pid = child.pid
        # What the process's command line holds once running (nsenter execs the program it is given).
        expect = {"pod-runner": "localkube.runner", "kube-proxy": "kube-proxy",
                  FIREWALL: "kube-router"}.get(name, Path(argv[0]).name)
        state["processes"][name] = {"pid": pid, "argv": argv, "log": str(self.log_path(name)), "expect": expect}
        self._save_state(state)

    def _stop(self, entry: dict[str, Any], grace: float = 15.0) -> None:
        if self._running(entry):
            procs.stop_group(int(entry["pid"]), grace=grace)
        child = self._children.pop(int(entry["pid"]), None)
        if child is not None:
            child.poll()
        else:
            procs.reap(int(entry["pid"]))

    def _running(self, entry: dict[str, Any] | None) -> bool:
        if entry is None:
            return False
        pid = int(entry["pid"])
        child = self._children.get(pid)
        if child is not None:          # started by this object: ask the Popen (and reap it)
            return child.poll() is None
        return procs.alive(pid, entry.get("expect"))

    def _wait(self, name: str, check: Any, timeout: float, what: str | None = None) -> None:
        deadline = time.monotonic() + timeout
        entry = self._load_state().get("processes", {}).get(name)
        while time.monotonic() < deadline:
            if entry is not None and not self._running(entry):
                child = self._children.get(int(entry["pid"]))
                code = child.returncode if child is not None else "?"
                raise ClusterError(f"{name} exited while starting (exit status {code}; "
                                   f"{procs.describe(int(entry['pid']))}); log {self.log_path(name)}:\n"
                                   f"{log_tail(self.log_path(name))}")
            try:
                if check():
                    return
            except Exception:
                pass
            time.sleep(0.2)
        raise ClusterError(f"{name}: {what or 'health check'} not reached after {timeout:.0f}s; "
                           f"log {self.log_path(name)}:\n{log_tail(self.log_path(name))}")

    # --------------------------------------------------------------------------------------- checks
    def _ssl_context(self, client: bool = True) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        if client:
            ctx.load_cert_chain(str(self.pki_dir / "admin.crt"), str(self.pki_dir / "admin.key"))
        return ctx

    def _http_ok(self, url: str, verify: bool = True) -> bool:
        if url.startswith("https://"):
            if verify:
                ctx = self._ssl_context()
            else:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
        else:
            opener = urllib.request.build_opener()
        try:
            with opener.open(url, timeout=2) as response:
                return int(response.status) == 200
        except (urllib.error.URLError, OSError, ssl.SSLError):
            return False

    def _readyz(self) -> bool:
        try:
            return self._http_ok(f"{self.server}/readyz")
        except ClusterError:
            return False

    def _get_json(self, path: str) -> dict[str, Any] | None:
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=self._ssl_context()))
        try:
            with opener.open(f"{self.server}{path}", timeout=5) as response:
                data: dict[str, Any] = json.load(response)
                return data
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def _send_json(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=self._ssl_context()))
        request = urllib.request.Request(f"{self.server}{path}", data=json.dumps(body).encode(), method=method,
                                         headers={"Content-Type": "application/json"})
        with opener.open(request, timeout=10) as response:
            data: dict[str, Any] = json.load(response)
            return data

    def _default_service_account_exists(self) -> bool:
        return self._get_json("/api/v1/namespaces/default/serviceaccounts/default") is not None

    def _node_ready(self) -> bool:
        node = self._get_json(f"/api/v1/nodes/{self.node_name}")
        if not node:
            return False
        conditions = node.get("status", {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def _bootstrap_objects(self) -> None:
        """Cluster-level objects: the default StorageClass ``standard`` a kind cluster also has (directories, no
        capacity, no expansion), ``standard-xfs``: a filesystem of the claimed size per volume, which may
        grow (``allowVolumeExpansion``), as a cloud disk's class, and cluster DNS (CoreDNS behind the
        ``kube-dns`` Service)."""
        addons.install(self.api(), addons.cluster_dns_objects(CLUSTER_DNS_IP, CLUSTER_DOMAIN))
        classes: dict[str, dict[str, Any]] = {
            STORAGE_CLASS: {"metadata": {"name": STORAGE_CLASS,
                                         "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}},
            EXPANDABLE_STORAGE_CLASS: {"metadata": {"name": EXPANDABLE_STORAGE_CLASS},
                                       "parameters": {"csi.storage.k8s.io/fstype": "xfs"},
                                       "allowVolumeExpansion": True},
        }
        for name, body in classes.items():
            if self._get_json(f"/apis/storage.k8s.io/v1/storageclasses/{name}") is None:
                self._send_json("POST", "/apis/storage.k8s.io/v1/storageclasses", {
                    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", **body,
                    "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
                })

    # ------------------------------------------------------------------------- service accounts
    def api(self, user_agent: str = "localkube") -> KubeAPI:
        """An admin client of this cluster."""
        return KubeAPI.from_kubeconfig(self.admin_kubeconfig, user_agent=user_agent)

    def service_account_kubeconfig(self, namespace: str, name: str, *, cluster_role: str | None = None,
                                   path: Path | None = None) -> Path:
        """A kubeconfig for ServiceAccount ``namespace/name`` (created with its namespace if missing).

        ``cluster_role``: bind it cluster-wide to that ClusterRole (e.g. ``cluster-admin``); without it the
        account has only what RBAC objects applied later (a Helm chart's) grant it.
        """
        target = path or self.state_dir / f"sa-{namespace}-{name}.kubeconfig"
        return service_account_kubeconfig(self.api(), self.ca_file.read_bytes(), namespace, name, target,
                                          cluster_role=cluster_role)

    # ----------------------------------------------------------------------------------------- down
    def down(self, purge: bool = False, grace: float = 15.0) -> None:
        """Stop every component (runner first, so it stops its pods) and any pod process left over."""
        state = self._load_state()
        processes: dict[str, Any] = state.get("processes", {})
        # The firewall first (its rules go with the node's namespace below), then the runner and its pods.
        for name in (FIREWALL, *reversed(ORDER)):
            entry = processes.get(name)
            if entry:
                self._stop(entry, grace)
        from localkube.runner.state import kill_leftover_pods

        kill_leftover_pods(self.state_dir / "runner")
        if "network" in state:
            network.release(network.NodeNetwork(int(state["network"]["index"])), self.state_dir)
        if processes or "network" in state:
            state["processes"] = {}
            state.pop("network", None)
            state["stopped_at"] = time.time()
            self._save_state(state)
        if purge:
            import shutil

            shutil.rmtree(self.state_dir, ignore_errors=True)

    # --------------------------------------------------------------------------------------- status
    def status(self) -> ClusterStatus:
        state = self._load_state()
        result = ClusterStatus(self.state_dir)
        processes: dict[str, Any] = state.get("processes", {})
        for name in (*ORDER, *([FIREWALL] if FIREWALL in processes else [])):
            entry = processes.get(name)
            log = self.log_path(name)
            if entry is None:
                result.components.append(ComponentStatus(name, None, False, log, "not started"))
                continue
            running = self._running(entry)
            detail = "running" if running else f"exited; last lines of its log:\n{log_tail(log, 10)}"
            result.components.append(ComponentStatus(name, int(entry["pid"]), running, log, detail))
        if processes:
            result.server = self.server
            result.apiserver_ready = self._readyz()
        return result

    def pod_logs(self, namespace: str, pod: str, container: str | None = None) -> list[Path]:
        """Log files of a pod's containers (newest pod incarnation first), as the runner writes them."""
        dirs = sorted((self.state_dir / "runner" / "logs").glob(f"{namespace}_{pod}_*"),
                      key=lambda d: d.stat().st_mtime, reverse=True)
        if not dirs:
            return []
        pattern = f"{container}.log" if container else "*.log"
        return sorted(p for p in dirs[0].glob(pattern) if not p.name.endswith(".exec.log"))

    def kube_env(self) -> dict[str, str]:
        """Environment for kubectl/helm against this cluster."""
        return {"KUBECONFIG": str(self.admin_kubeconfig)}

    def __enter__(self) -> LocalCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()
