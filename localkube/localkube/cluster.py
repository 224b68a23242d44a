"""The local control plane: etcd, kube-apiserver, kube-controller-manager and the pod runner as processes.

``LocalCluster(state_dir).up()`` generates certificates and keys (once), starts the four components in
their own process groups, waits until the API server is ready, the controller manager healthy, the
default service account exists and the runner's Node is Ready, and records everything in
``state_dir/cluster.json`` so that another process (``bookie-fleet cluster down``) can stop it.
``down()`` stops the pod runner first (it stops its pods), then the control plane, then kills any pod
process group still listed by the runner and deletes its leftover runc containers: nothing is left running.
One module at the usual size limit: each component's command line sits next to its start and readiness.
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

from localkube import procs
from localkube.binaries import find_binaries
from localkube.kapi import KubeAPI
from localkube.kubeconfig import write_kubeconfig
from localkube.pki import CertificateAuthority, service_account_keys
from localkube.serviceaccounts import service_account_kubeconfig

KUBE_VERSION_ENV = "BOOKIE_FLEET_KUBE_VERSION"
SERVICE_CIDR = "10.96.0.0/16"
STORAGE_CLASS = "standard"          # the name kind gives its default StorageClass
EXPANDABLE_STORAGE_CLASS = "standard-xfs"   # claims of their own size, online expansion (runner/filesystems.py)
PROVISIONER = "localkube.io/local-path"
DEFAULT_PORTS = {"etcd": 2379, "etcd-peer": 2380, "kube-apiserver": 6443, "kube-controller-manager": 10257}
ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "pod-runner")


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
        port = self._load_state().get("ports", {}).get("kube-apiserver")
        if not port:
            raise ClusterError(f"no cluster state in {self.state_dir}: run `bookie-fleet cluster up`")
        return f"https://127.0.0.1:{port}"

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    def log_path(self, component: str) -> Path:
        return self.logs_dir / f"{component}.log"

    # ------------------------------------------------------------------------------------------- up
    def up(self, timeout: float = 180.0) -> LocalCluster:
        """Start whatever is not running and wait until the cluster is usable. Idempotent."""
        binaries = find_binaries(self.bin_dir)
        started = time.monotonic()
        state = self._load_state()
        procs_state: dict[str, Any] = state.get("processes", {})
        if procs_state and all(self._running(procs_state.get(name)) for name in ORDER) and self._readyz():
            return self
        # Partial leftovers (a crashed component): restart cleanly.
        if procs_state:
            self.down()
        ports = self._choose_ports()
        state = {"ports": ports, "processes": {}, "node": self.node_name, "started_at": time.time()}
        self._save_state(state)
        self._write_pki_and_kubeconfigs(ports["kube-apiserver"])
        try:
            self._start(state, "etcd", self._etcd_argv(str(binaries["etcd"]), ports))
            self._wait("etcd", lambda: self._http_ok(f"http://127.0.0.1:{ports['etcd']}/health"), timeout)
            self._start(state, "kube-apiserver", self._apiserver_argv(str(binaries["kube-apiserver"]), ports))
            self._wait("kube-apiserver", self._readyz, timeout)
            self._start(state, "kube-controller-manager",
                        self._kcm_argv(str(binaries["kube-controller-manager"]), ports))
            self._start(state, "pod-runner", self._runner_argv(ports))
            self._bootstrap_objects()
            self._wait("kube-controller-manager",
                       lambda: self._http_ok(f"https://127.0.0.1:{ports['kube-controller-manager']}/healthz",
                                             verify=False), timeout)
            self._wait("kube-controller-manager", self._default_service_account_exists, timeout,
                       what="the default ServiceAccount (serviceaccount controller)")
            self._wait("pod-runner", self._node_ready, timeout, what=f"Node {self.node_name} Ready")
        except BaseException:
            self.down()
            raise
        self.ready_seconds = time.monotonic() - started
        state["ready_seconds"] = round(self.ready_seconds, 2)
        self._save_state(state)
        return self

    def _choose_ports(self) -> dict[str, int]:
        chosen: dict[str, int] = {}
        for name, preferred in DEFAULT_PORTS.items():
            chosen[name] = procs.pick_port(0 if self.ephemeral_ports else preferred, avoid=set(chosen.values()))
        return chosen

    def _write_pki_and_kubeconfigs(self, apiserver_port: int) -> None:
        ca = CertificateAuthority(self.pki_dir)
        ca.issue("apiserver", "kube-apiserver", server=True, ips=("127.0.0.1", "10.96.0.1"),
                 dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                            "kubernetes.default.svc.cluster.local"))
        ca.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", organizations=("kubeadm:cluster-admins",),
                 client=True)
        ca.issue("kubelet", f"system:node:{self.node_name}", organizations=("system:nodes",), server=True,
                 ips=("127.0.0.1",), dns_names=("localhost", self.node_name))
        service_account_keys(self.pki_dir)
        server = f"https://127.0.0.1:{apiserver_port}"
        ca_pem = ca.pair.cert_pem()
        users = {
            "admin": ("kubernetes-admin", ("system:masters",), self.admin_kubeconfig),
            "kcm": ("system:kube-controller-manager", (), self.state_dir / "kube-controller-manager.kubeconfig"),
            "runner": (f"localkube-runner:{self.node_name}", ("system:masters",),
                       self.state_dir / "pod-runner.kubeconfig"),
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

    def _apiserver_argv(self, binary: str, ports: dict[str, int]) -> list[str]:
        pki = self.pki_dir
        return [
            binary,
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
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
            # The "kubernetes" Service's endpoints would be a loopback address, which Endpoints reject.
            "--endpoint-reconciler-type=none",
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

    def _runner_argv(self, ports: dict[str, int]) -> list[str]:
        return [self.python, "-m", "localkube.runner",
                "--kubeconfig", str(self.state_dir / "pod-runner.kubeconfig"),
                "--state-dir", str(self.state_dir / "runner"),
                "--node-name", self.node_name,
                "--apiserver-port", str(ports["kube-apiserver"]),
                "--ca-file", str(self.ca_file),
                "--tls-cert", str(self.pki_dir / "kubelet.crt"), "--tls-key", str(self.pki_dir / "kubelet.key")]

    def _start(self, state: dict[str, Any], name: str, argv: list[str]) -> None:
        child = procs.start_detached(argv, self.log_path(name), cwd=self.state_dir)
        self._children[child.pid] = child
        pid = child.pid
        state["processes"][name] = {"pid": pid, "argv": argv, "log": str(self.log_path(name)),
                                    "expect": Path(argv[0]).name if name != "pod-runner" else "localkube.runner"}
        self._save_state(state)

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
        capacity, no expansion), and ``standard-xfs``: a filesystem of the claimed size per volume, which may
        grow (``allowVolumeExpansion``), as a cloud disk's class."""
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
        for name in reversed(ORDER):
            entry = processes.get(name)
            if entry and self._running(entry):
                procs.stop_group(int(entry["pid"]), grace=grace)
            if entry:
                child = self._children.pop(int(entry["pid"]), None)
                if child is not None:
                    child.poll()
                else:
                    procs.reap(int(entry["pid"]))
        from localkube.runner.state import kill_leftover_pods, release_all_claims

        kill_leftover_pods(self.state_dir / "runner")
        release_all_claims(self.state_dir / "runner")
        if processes:
            state["processes"] = {}
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
        for name in ORDER:
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
