"""Fixtures for the operator's tests against the real local control plane (tests/support/kube.py), a real
ZooKeeper (tests/support/zookeeper.py) and real bookie processes run by the pod runner.

``bookie_crd`` (session): the generated CRD, installed with ``kubectl apply --server-side``.
``operator_factory``: runs ``python -m bookie_operator`` for one namespace as a real process (its own process
group); ``start()``, ``kill()`` (SIGKILL, for restart tests) and the log text.
``small_ledger_volumes``: statically provisioned PersistentVolumes on size-limited tmpfs mounts, pre-bound to
the ledger claims of a BookieCluster, so "filling one bookie's disk" fills exactly that bookie's filesystem.
``zookeeper`` (session): the ZooKeeper of tests/support/kube.py's ``pod_zookeeper``, reachable from pods.
``audit_cluster_role``: the ClusterRole the operator binds for audit runs, removed after the test.
Bookie ids are ``<pod>.<service>.<namespace>.svc.cluster.local:3181``: pods resolve them through cluster DNS;
clients on this machine (the tests, the operator run as a process) reach the bookies through the endpoints
each bookie publishes in its ZooKeeper registration (pod IPs), our bookies and Apache BookKeeper's alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bookie_fleet import fork_server
from bookie_fleet.processes import free_port
from bookie_fleet.zookeeper import ZooKeeperServer
from bookie_operator import audit_builders, crd
from localkube.procs import ChildProcess

from tests.support.kube import KubeTarget, fresh_namespace, wait_for

Obj = dict[str, Any]
INTERVAL = 2.0

# Spec fields that run Apache BookKeeper's bookies (the pod runner maps this image to the Maven-assembled
# Java bookie) instead of ours; tests parametrized over IMPLEMENTATIONS run the same scenario on both.
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
IMPLEMENTATIONS = {"bookie-fleet": {}, "apache-bookkeeper": JAVA}


# BookieClusters of a namespace, by the REST path of their collection.
CLUSTERS = f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{{ns}}/{crd.models.PLURAL}"
AUDIT_ROLE = "bookie-operator-audit"  # the operator's default name for it, as the chart installs it


@pytest.fixture
def audit_cluster_role(kube: KubeTarget) -> Iterator[str]:
    """The ClusterRole the operator binds for audit runs (under the operator's default name), removed afterwards:
    cluster-scoped, it outlives the test's namespace, and the chart installed as the README's release
    `bookie-operator` creates one of that name, which Helm would refuse to take over."""
    kube.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(audit_builders.cluster_role(AUDIT_ROLE)))
    try:
        yield AUDIT_ROLE
    finally:
        kube.kubectl("delete", "clusterrole", AUDIT_ROLE, "--ignore-not-found")


@pytest.fixture
def other_namespace(kube: KubeTarget) -> Iterator[str]:
    """A namespace of its own, which the chart's default does not watch (it watches the release's)."""
    with fresh_namespace(kube) as name:
        try:
            yield name
        finally:
            # A finalizer the operator did not remove (the test failed before the cluster was deleted) would hold
            # the namespace forever.
            for item in (kube.get(CLUSTERS.format(ns=name)) or {}).get("items", []):
                kube.api.merge_patch(f"{CLUSTERS.format(ns=name)}/{item['metadata']['name']}",
                                     {"metadata": {"finalizers": None}})


@pytest.fixture(scope="session")
def bookie_crd(kube: KubeTarget) -> str:
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=crd.render())
    name = f"bookieclusters.{crd.models.GROUP}"

    def established() -> bool:
        obj = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        return obj is not None and any(c["type"] == "Established" and c["status"] == "True"
                                       for c in (obj.get("status") or {}).get("conditions") or [])

    wait_for(established, 30, what="the BookieCluster CRD established")
    return name


@pytest.fixture(scope="session")
def zookeeper(pod_zookeeper: ZooKeeperServer) -> ZooKeeperServer:
    """The session's ZooKeeper, where pods reach it (``pod_zookeeper`` of tests/support/kube.py)."""
    return pod_zookeeper


@pytest.fixture(scope="session")
def zk_tls_host(kube: KubeTarget) -> str:
    """The TLS-only ZooKeeper (tests/support/zookeeper_tls.py) on the address pods reach, as ``pod_zookeeper``."""
    return kube.local.host_ip if kube.local is not None else "127.0.0.1"


@dataclass
class OperatorProcess:
    kubeconfig: Path
    namespace: str
    log_path: Path
    interval: float = INTERVAL
    metrics_port: int = 0
    proc: ChildProcess | None = None
    starts: int = 0
    extra_args: list[str] = field(default_factory=list)
    hostname: str | None = None          # the replica's name (a pod's HOSTNAME): its leader identity starts so

    def start(self) -> OperatorProcess:
        assert self.proc is None or self.proc.poll() is not None, "operator already running"
        self.starts += 1
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        if self.hostname:
            env["HOSTNAME"] = self.hostname
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {self.starts}\n".encode())
        command = [sys.executable, "-m", "bookie_operator", "--namespace", self.namespace, "--kubeconfig",
                   str(self.kubeconfig), "--interval", str(self.interval), "--metrics-port", str(self.metrics_port),
                   "--liveness", "", "--log-format", "plain", *self.extra_args]
        self.proc = fork_server.start(command, self.log_path, env=env)  # tests/support/fork_server.py
        if self.proc is None:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                             start_new_session=True)
        return self

    def kill(self) -> None:
        """SIGKILL: no cleanup, no goodbye (an operator pod evicted mid-way)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _serving_metrics(op: OperatorProcess, tries: int = 3) -> None:
    """Wait until the operator serves its metrics. Another process can bind the port ``free_port()`` picked
    before the operator does (the operator then exits: address already in use): it starts again on a fresh
    port, at most ``tries`` times."""
    for _ in range(tries):
        deadline = time.monotonic() + 60
        while op.proc is not None and op.proc.poll() is None:
            if _answers_metrics(op.metrics_port):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the operator never served metrics on port {op.metrics_port}")
            time.sleep(0.2)
        this_start = op.log.rsplit("===== start", 1)[-1]
        if "Address already in use" not in this_start:
            raise AssertionError(f"the operator exited:\n{this_start[-3000:]}")
        op.metrics_port = free_port()
        op.start()
    raise AssertionError(f"no free metrics port for the operator in {tries} tries")


def _answers_metrics(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            return "bookie_operator_" in resp.read().decode(errors="replace")
    except OSError:
        return False


@pytest.fixture
def operator_factory(kube: KubeTarget, bookie_crd: str, tmp_path: Path) -> Iterator[Callable[..., OperatorProcess]]:
    made: list[OperatorProcess] = []

    def make(namespace: str, metrics: bool = False, replica: str | None = None,
             extra_args: list[str] | None = None) -> OperatorProcess:
        """An operator on ``namespace``; with ``metrics``, serving Prometheus metrics on ``op.metrics_port``."""
        log = tmp_path / (f"operator-{namespace}-{replica}.log" if replica else f"operator-{namespace}.log")
        op = OperatorProcess(kube.kubeconfig, namespace, log, metrics_port=free_port() if metrics else 0,
                             extra_args=extra_args or [], hostname=replica)
        made.append(op)
        op.start()
        if metrics:
            _serving_metrics(op)
        return op

    try:
        yield make
    finally:
        for op in made:
            # Delete the clusters while the operator runs: it removes its finalizer, so the namespace can go.
            base = f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{op.namespace}/{crd.models.PLURAL}"
            with contextlib.suppress(Exception):
                if op.proc is None or op.proc.poll() is not None:
                    op.start()
                for item in kube.api.request("GET", base)["items"]:
                    kube.api.delete(f"{base}/{item['metadata']['name']}")
                wait_for(lambda b=base: not kube.api.request("GET", b)["items"], 60,  # type: ignore[misc]
                         what="BookieClusters deleted")
            op.stop()
            print(f"\n[operator log {op.namespace}]\n" + op.log[-6000:])


@dataclass
class SmallVolumes:
    storage_class: str
    paths: dict[str, Path] = field(default_factory=dict)   # claim name -> host path (a tmpfs)

    def fill(self, claim: str, fraction: float) -> Path:
        """Write a file that takes ``fraction`` of the claim's filesystem (real blocks, not sparse)."""
        path = self.paths[claim]
        stat = os.statvfs(path)
        size = int(stat.f_blocks * stat.f_frsize * fraction)
        target = path / "ballast.bin"
        with open(target, "wb") as out:
            chunk = b"\xa5" * (1 << 20)
            for _ in range(size // len(chunk)):
                out.write(chunk)
        return target

    def used_fraction(self, claim: str) -> float:
        stat = os.statvfs(self.paths[claim])
        return 1 - stat.f_bavail / stat.f_blocks


@pytest.fixture
def small_ledger_volumes(kube: KubeTarget, kube_namespace: str, tmp_path: Path) \
        -> Iterator[Callable[[str, int, int], SmallVolumes]]:
    created: list[tuple[str, Path]] = []

    def make(cluster: str, count: int, size_mb: int = 256) -> SmallVolumes:
        vols = SmallVolumes(f"{kube_namespace}-small")
        for ordinal in range(count):
            claim = f"ledgers-0-{cluster}-{ordinal}"
            path = tmp_path / "tmpfs" / claim
            path.mkdir(parents=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)], check=True)
            pv = f"{kube_namespace}-{claim}"
            created.append((pv, path))
            kube.api.create("/api/v1/persistentvolumes", {
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                "spec": {"capacity": {"storage": f"{size_mb}Mi"}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": vols.storage_class,
                         "hostPath": {"path": str(path), "type": "Directory"},
                         "claimRef": {"namespace": kube_namespace, "name": claim}}})
            vols.paths[claim] = path
        return vols

    try:
        yield make
    finally:
        for pv, path in created:
            with contextlib.suppress(Exception):
                kube.api.delete(f"/api/v1/persistentvolumes/{pv}")
            subprocess.run(["umount", "-l", str(path)], check=False)


# ------------------------------------------------------------------------------------------- helpers
def bookie_cluster(name: str, zk: str, root: str, **spec: Any) -> Obj:
    """A BookieCluster manifest: test-sized volumes and fast bookie checkpoints.

    Volumes without a storage class are directories on the machine's own disk, so the disk thresholds (the
    operator's and the bookies' own) default to 99.9%: how full the CI machine's disk happens to be must never
    make a bookie read-only. Tests of disk pressure use small tmpfs volumes and set their own marks."""
    body: Obj = {
        "replicas": 3,
        "ensembleSize": 2,
        "metadataService": {"zkServers": zk, "ledgersRoot": root},
        "storage": {"journal": {"size": "1Gi"}, "ledgers": {"size": "1Gi"}},
        "config": {"flushInterval": 1000, "diskCheckInterval": 500, "journalSyncData": False,
                   "diskUsageThreshold": 0.999, "diskUsageWarnThreshold": 0.998},
        "diskPolicy": {"readOnlyHighWaterMark": 0.999, "writableLowWaterMark": 0.99, "forceCompactionRatio": 0.999},
    }
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value
    return {"apiVersion": f"{crd.models.GROUP}/{crd.models.VERSION}", "kind": crd.models.KIND,
            "metadata": {"name": name}, "spec": body}


def get_cluster(kube: KubeTarget, namespace: str, name: str) -> Obj:
    obj = kube.get(f"/apis/{crd.models.GROUP}/{crd.models.VERSION}/namespaces/{namespace}/"
                   f"{crd.models.PLURAL}/{name}")
    assert obj is not None
    return obj


def condition(obj: Obj, type_: str) -> Obj | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), None)


def wait_ready(kube: KubeTarget, namespace: str, name: str, timeout: float = 180) -> Obj:
    def ready() -> Obj | None:
        obj = get_cluster(kube, namespace, name)
        c = condition(obj, "Ready")
        gen = obj["metadata"].get("generation")
        if c and c["status"] == "True" and obj["status"].get("observedGeneration") == gen:
            return obj
        return None

    return wait_for(ready, timeout, interval=0.5, what=f"BookieCluster {name} Ready")


def bookie_status(obj: Obj, ordinal: int) -> Obj:
    return next(b for b in obj["status"]["bookies"] if b["ordinal"] == ordinal)


def events(kube: KubeTarget, namespace: str, name: str, reason: str | None = None) -> list[Obj]:
    return [e for e in kube.events(namespace, name) if reason is None or e.get("reason") == reason]


def as_posted(posted: list[Obj]) -> list[Obj]:
    """Events in the order the API server stored them. Their timestamps have whole seconds only, so two Events of
    one second (a bookie's compaction started and finished) would sort by anything else; the resource version is
    the order of writes in this control plane's etcd (opaque to clients in general; each Event here is written
    once)."""
    return sorted(posted, key=lambda e: int(e["metadata"]["resourceVersion"]))


def await_events(kube: KubeTarget, namespace: str, name: str, reason: str, at_least: int = 1,
                 timeout: float = 20) -> list[Obj]:
    """The Events of ``reason`` once there are ``at_least`` of them: the operator posts a tick's Events just
    after writing its status, so a test that has seen the status may be a moment ahead of them."""
    wait_for(lambda: len(events(kube, namespace, name, reason)) >= at_least, timeout, interval=0.2,
             what=f"{at_least} {reason} Event(s) about {name}")
    return events(kube, namespace, name, reason)


def patch_spec(kube: KubeTarget, namespace: str, name: str, spec: Obj) -> None:
    kube.kubectl("-n", namespace, "patch", f"{crd.models.PLURAL}.{crd.models.GROUP}", name, "--type", "merge",
                 "-p", json.dumps({"spec": spec}))


def elapsed(start: float) -> float:
    return time.monotonic() - start
