"""pytest fixtures around a real Kubernetes control plane: localkube (default) or any cluster you point at.

``kube`` (session): a ``KubeTarget`` with ``kubeconfig``, ``api`` (``localkube.kapi.KubeAPI``, admin),
``kubectl(*args)``, ``helm(*args)``, ``apply(manifest)``, ``wait_for(...)`` and
``service_account_kubeconfig(namespace, name, cluster_role=None)``. By default it starts one local cluster
for the whole session (``LocalCluster`` with free ports, in a temporary directory) and stops it at the end,
nothing left running. With ``BOOKIE_FLEET_KUBECONFIG=/path/to/kubeconfig`` the same tests run against that
cluster instead (e.g. kind from kind-config.yaml); nothing is started or stopped then.
``kube_cluster`` (session): the ``LocalCluster`` itself, for tests of localkube (always local; the same
cluster as ``kube``'s unless ``BOOKIE_FLEET_KUBECONFIG`` points elsewhere). tests/localkube/conftest.py
overrides ``kube`` with ``local_target(kube_cluster)`` so that localkube's own tests always run locally.
``kube_namespace``: a fresh namespace per test, deleted afterwards.
``pod_zookeeper`` (session): a ZooKeeper that both this machine and the cluster's pods reach: it listens on the
machine's address on the local cluster's node link (``LocalCluster.host_ip``). The Kubernetes test folders
use it as their ``zookeeper``.

Registered for every test folder by tests/conftest.py (``pytest_plugins``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from bookie_fleet.zookeeper import ZooKeeperServer
from localkube.binaries import find_binary
from localkube.cluster import LocalCluster
from localkube.kapi import KubeAPI
from localkube.serviceaccounts import service_account_kubeconfig

KUBECONFIG_ENV = "BOOKIE_FLEET_KUBECONFIG"
T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.25,
             what: str = "condition") -> T:
    """Poll ``check`` until it returns a truthy value (returned); fail the test with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last value: {last!r})")


@dataclass
class KubeTarget:
    kubeconfig: Path
    api: KubeAPI
    local: LocalCluster | None = None
    workdir: Path = field(default_factory=lambda: Path("/tmp"))

    def _env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig),
                "HELM_CACHE_HOME": str(self.workdir / "helm-cache"),
                "HELM_CONFIG_HOME": str(self.workdir / "helm-config"),
                "HELM_DATA_HOME": str(self.workdir / "helm-data")}

    def _run(self, tool: str, args: tuple[str, ...], input: str | None, check: bool,
             timeout: float) -> subprocess.CompletedProcess[str]:
        exe = str(find_binary(tool))
        result = subprocess.run([exe, *args], input=input, capture_output=True, text=True, env=self._env(),
                                timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return self._run("kubectl", args, input, check, timeout)

    def helm(self, *args: str, check: bool = True, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        return self._run("helm", args, None, check, timeout)

    def apply(self, manifest: str | list[dict[str, Any]] | dict[str, Any], namespace: str | None = None) -> None:
        """``kubectl apply`` of YAML text or objects."""
        if not isinstance(manifest, str):
            docs = manifest if isinstance(manifest, list) else [manifest]
            manifest = yaml.safe_dump_all(docs)
        args = ["apply", "-f", "-"] + (["-n", namespace] if namespace else [])
        self.kubectl(*args, input=manifest)

    def get(self, path: str) -> dict[str, Any] | None:
        return self.api.get(path)

    def pods(self, namespace: str, selector: str | None = None) -> list[dict[str, Any]]:
        params = {"labelSelector": selector} if selector else None
        return list(self.api.request("GET", f"/api/v1/namespaces/{namespace}/pods", params=params)["items"])

    def ready_endpoints(self, namespace: str, service: str) -> set[str]:
        """The addresses a Service's EndpointSlices list as ready."""
        slices = self.api.request("GET", f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                                  params={"labelSelector": f"kubernetes.io/service-name={service}"})["items"]
        return {a for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")
                for a in e["addresses"]}

    def events(self, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
        items = self.api.request("GET", f"/api/v1/namespaces/{namespace}/events")["items"]
        return [e for e in items if name is None or e["involvedObject"].get("name") == name]

    def service_account_kubeconfig(self, namespace: str, name: str, cluster_role: str | None = None) -> Path:
        ca = self._ca_pem()
        return service_account_kubeconfig(self.api, ca, namespace, name,
                                          self.workdir / f"sa-{namespace}-{name}.kubeconfig",
                                          cluster_role=cluster_role)

    def _ca_pem(self) -> bytes:
        config = yaml.safe_load(self.kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        if cluster.get("certificate-authority-data"):
            return base64.b64decode(cluster["certificate-authority-data"])
        return Path(cluster["certificate-authority"]).read_bytes()

    wait_for = staticmethod(wait_for)


def pod_ready(pod: dict[str, Any]) -> bool:
    return pod.get("status", {}).get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


def container_pid(pod: dict[str, Any], container: str | None = None) -> int | None:
    """The process id of a running container of a localkube pod (its containerID is localkube://<pid>)."""
    for status in pod.get("status", {}).get("containerStatuses") or []:
        if (container is None or status["name"] == container) and "running" in status.get("state", {}):
            cid = status.get("containerID", "")
            if cid.startswith("localkube://"):
                return int(cid.removeprefix("localkube://"))
    return None


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The local cluster of the session (started on first use, stopped at the end)."""
    cluster = LocalCluster(tmp_path_factory.mktemp("localkube") / "cluster", ephemeral_ports=True)
    cluster.up()
    print(f"\n[localkube] cluster ready in {cluster.ready_seconds:.1f}s at {cluster.server} ({cluster.state_dir})")
    try:
        yield cluster
    finally:
        cluster.down()


def local_target(cluster: LocalCluster, workdir: Path) -> KubeTarget:
    return KubeTarget(cluster.admin_kubeconfig, cluster.api("bookie-fleet-tests"), cluster, workdir)


@pytest.fixture(scope="session")
def kube(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> KubeTarget:
    """The cluster tests run against: $BOOKIE_FLEET_KUBECONFIG's if set, else the session's local cluster."""
    workdir = tmp_path_factory.mktemp("kube")
    external = os.environ.get(KUBECONFIG_ENV)
    if external:
        return KubeTarget(Path(external), KubeAPI.from_kubeconfig(external), None, workdir)
    return local_target(request.getfixturevalue("kube_cluster"), workdir)


@pytest.fixture(scope="session")
def pod_zookeeper(kube: KubeTarget, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """One ZooKeeper for the session's pods (and this machine's clients): pods reach the machine at
    ``host_ip``, not at 127.0.0.1 (their own loopback). On an external cluster it stays on 127.0.0.1."""
    host = kube.local.host_ip if kube.local is not None else "127.0.0.1"
    server = ZooKeeperServer(tmp_path_factory.mktemp("pod-zookeeper"), host=host)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# The namespaces of ``fresh_namespace`` not yet deleted: a failed test's report describes them
# (tests/support/kube_failures.py).
open_namespaces: set[str] = set()


@contextlib.contextmanager
def fresh_namespace(kube: KubeTarget) -> Iterator[str]:
    """A namespace of a random name, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    kube.api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    open_namespaces.add(name)
    try:
        yield name
    finally:
        open_namespaces.discard(name)
        kube.api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def kube_namespace(kube: KubeTarget) -> Iterator[str]:
    with fresh_namespace(kube) as name:
        yield name


ZONE_TAINT = {"key": "localkube.io/zone-test", "value": "true", "effect": "NoSchedule"}
ZONE_TOLERATION = {"key": "localkube.io/zone-test", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture
def zone_nodes(kube: KubeTarget) -> Iterator[dict[str, str]]:
    """Three nodes of the local cluster in zones zone-a/b/c (emulated by its runner: same machine), tainted so
    that only pods tolerating ``ZONE_TOLERATION`` and selecting ``localkube.io/emulated-by`` land there.
    Yields node name -> zone once all three are Ready and schedulable; the nodes are deleted afterwards."""
    assert kube.local is not None, ("zone nodes are emulated by the local cluster's runner: run this test without "
                                    f"{KUBECONFIG_ENV}")
    runner_node = kube.local.node_name
    suffix = uuid.uuid4().hex[:6]
    zones = {f"zone-{z}-{suffix}": f"zone-{z}" for z in "abc"}
    for name, zone in zones.items():
        kube.api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"localkube.io/emulated-by": runner_node, "kubernetes.io/hostname": name,
                                     "topology.kubernetes.io/zone": zone,
                                     "topology.kubernetes.io/region": "region-1"}},
            "spec": {"taints": [ZONE_TAINT]}})

    def schedulable() -> bool:
        # A new Node carries the not-ready taint until the runner reports it Ready (every 10 s): pods created
        # before that would all land on the zones already schedulable.
        for name in zones:
            node = kube.api.get(f"/api/v1/nodes/{name}") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (node.get("status") or {}).get("conditions") or [])
            taints = {t.get("key") for t in (node.get("spec") or {}).get("taints") or []}
            if not ready or taints - {ZONE_TAINT["key"]}:
                return False
        return True

    try:
        wait_for(schedulable, 60, interval=0.5, what="the zone nodes Ready without the not-ready taint")
        yield zones
    finally:
        for name in zones:
            kube.api.delete(f"/api/v1/nodes/{name}")


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1)[:4000]
