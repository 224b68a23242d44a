"""The node loop: registers the Node, binds pending pods to it (scheduler), provisions PersistentVolumes
for claims of the ``localkube.io/local-path`` StorageClass (directories, or XFS filesystems of the claimed
size: ``filesystems``), expands them (``resizer``), and keeps one PodWorker per pod of the node and of the
nodes it emulates (``scheduling``).

``python -m localkube.runner --kubeconfig K --state-dir D --node-name N --node-ip IP --pod-cidr CIDR ...``,
started by ``LocalCluster`` in the node's network namespace (``localkube.network``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import platform
import shutil
import signal
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localkube.kapi import ApiError, KubeAPI
from localkube.runner import filesystems
from localkube.runner.cache import ObjectCache
from localkube.runner.container import now_rfc3339
from localkube.runner.dns import ClusterDNS, Resolv
from localkube.runner.envvars import quantity
from localkube.runner.imagestore import ImageStore
from localkube.runner.kubeletapi import KubeletAPI
from localkube.runner.podnet import CNI_BIN_DIR, PodNetwork, PodNetworkConfig
from localkube.runner.resizer import VolumeResizer, claim_users
from localkube.runner.runtime import Runc
from localkube.runner.scheduling import EMULATED_BY, pick_node
from localkube.runner.state import RunnerState, kill_leftover_pods
from localkube.runner.worker import PodWorker

Obj = dict[str, Any]
log = logging.getLogger("localkube.runner")
PROVISIONER = "localkube.io/local-path"
KUBE_VERSION = os.environ.get("BOOKIE_FLEET_KUBE_VERSION", "v1.34.4")


class Runner:
    def __init__(self, api: KubeAPI, state: RunnerState, node_name: str, network: PodNetwork,
                 kubernetes_service: tuple[str, int], dns: ClusterDNS, kubelet_api: KubeletAPI | None = None) -> None:
        self.api = api
        self.state = state
        self.node_name = node_name
        self.network = network
        self.node_ip = network.config.node_ip
        self.kubernetes_service = kubernetes_service
        self.dns = dns
        try:
            self.node_resolv = Resolv.parse(Path("/etc/resolv.conf").read_text())
        except OSError:
            self.node_resolv = Resolv()
        self.workers: dict[str, PodWorker] = {}
        self.images = ImageStore.from_environment(state.root)
        self.runtime: Runc | None = Runc(state.root) if Runc.available() else None
        if self.runtime is None:
            log.warning("runc or umoci missing: only host-command images run (scripts/bootstrap.d/runc.sh)")
        self.kubelet_api = kubelet_api
        self._workers_lock = threading.Lock()
        self.resizer = VolumeResizer(api, PROVISIONER, state.volumes, self.emit_event, node_name)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        # What the node loop reads on every pass, kept current by watches (each change wakes the loop).
        self.pods = ObjectCache(api, "/api/v1/pods", "Pod", on_change=self.wake.set)
        self.node_objects = ObjectCache(api, "/api/v1/nodes", "Node", on_change=self.wake.set)
        self.claims = ObjectCache(api, "/api/v1/persistentvolumeclaims", "PersistentVolumeClaim",
                                  on_change=self.wake.set)
        self.volumes = ObjectCache(api, "/api/v1/persistentvolumes", "PersistentVolume", on_change=self.wake.set)
        self.storage_classes = ObjectCache(api, "/apis/storage.k8s.io/v1/storageclasses", "StorageClass",
                                           "storage.k8s.io/v1", on_change=self.wake.set)
        self.caches = (self.pods, self.node_objects, self.claims, self.volumes, self.storage_classes)
        mem_kib = 0
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
        except OSError:
            pass
        self.capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{mem_kib}Ki", "pods": "110",
                         "ephemeral-storage": f"{shutil.disk_usage(state.root).total // 1024}Ki"}

    # ------------------------------------------------------------------------------------- node
    def node_status(self) -> Obj:
        now = now_rfc3339()

        def cond(kind: str, status: str, reason: str, message: str) -> Obj:
            return {"type": kind, "status": status, "reason": reason, "message": message,
                    "lastHeartbeatTime": now, "lastTransitionTime": self._started_at}

        return {
            "capacity": self.capacity, "allocatable": self.capacity,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "localkube runner"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "localkube runner"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "localkube runner"),
                cond("Ready", "True", "KubeletReady", "localkube pod runner is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": self.node_ip},
                          {"type": "Hostname", "address": self.node_name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet_api.port if self.kubelet_api else 0}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": platform.release(),
                         "osImage": "localkube", "containerRuntimeVersion":
                         "localkube://1", "kubeletVersion": KUBE_VERSION, "kubeProxyVersion": "",
                         "operatingSystem": "linux", "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(
                             platform.machine(), platform.machine())},
        }

    def register_node(self) -> None:
        self._started_at = now_rfc3339()
        path = f"/api/v1/nodes/{self.node_name}"
        labels = {"kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": self.node_status()["nodeInfo"]["architecture"],
                  "node-role.kubernetes.io/control-plane": "", "localkube.io/node": "true"}
        if self.api.get(path) is None:
            self.api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                              "metadata": {"name": self.node_name, "labels": labels}})
        # TaintNodesByCondition gives a new Node the not-ready taint; the node lifecycle controller (not run
        # here) would lift it once the Node is Ready, so the runner does.
        self.api.merge_patch(path, {"metadata": {"labels": labels}, "spec": {"taints": None}})
        self.api.merge_patch(f"{path}/status", {"status": self.node_status()})
        self._renew_lease()

    def _renew_lease(self) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node_name}"
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {"holderIdentity": self.node_name, "leaseDurationSeconds": 40, "renewTime": now}
        try:
            if self.api.get(path) is None:
                self.api.create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                                {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                 "metadata": {"name": self.node_name}, "spec": spec})
            else:
                self.api.merge_patch(path, {"spec": spec})
        except ApiError as exc:
            log.warning("lease renewal failed: %s", exc)

    def heartbeat_loop(self) -> None:
        while not self.stopping.wait(10):
            try:
                self.api.merge_patch(f"/api/v1/nodes/{self.node_name}/status", {"status": self.node_status()})
                self._renew_lease()
                self.tend_emulated_nodes()
            except (ApiError, OSError) as exc:
                log.warning("node heartbeat failed: %s", exc)

    # ----------------------------------------------------------------------------- emulated nodes
    def nodes(self) -> list[Obj]:
        """The runner's own Node and the Nodes it emulates (label ``localkube.io/emulated-by``)."""
        nodes = self.node_objects.items()
        own = [n for n in nodes if n["metadata"]["name"] == self.node_name]
        emulated = [n for n in nodes if (n["metadata"].get("labels") or {}).get(EMULATED_BY) == self.node_name]
        return own + sorted(emulated, key=lambda n: n["metadata"]["name"])

    def tend_emulated_nodes(self) -> None:
        """Emulated nodes are Ready like the runner's own (the same status), and lose the not-ready taint that
        TaintNodesByCondition gives every new Node; their other taints are their creator's."""
        for node in self.nodes():
            name = node["metadata"]["name"]
            if name == self.node_name:
                continue
            taints = (node.get("spec") or {}).get("taints") or []
            kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
            if kept != taints:
                self.api.merge_patch(f"/api/v1/nodes/{name}", {"spec": {"taints": kept or None}})
            status = self.node_status()
            status["addresses"] = [{"type": "InternalIP", "address": self.node_ip},   # the same network
                                   {"type": "Hostname", "address": name}]
            self.api.merge_patch(f"/api/v1/nodes/{name}/status", {"status": status})

    # ------------------------------------------------------------------------------------ events
    def emit_event(self, obj: Obj, kind: str, reason: str, message: str, component: str = "kubelet") -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        now = dt.datetime.now(dt.UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", "Pod"),
                               "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta.get("uid")},
            "reason": reason, "message": message, "type": kind,
            "source": {"component": component, "host": self.node_name},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "reportingComponent": component, "reportingInstance": self.node_name,
        }
        try:
            self.api.create(f"/api/v1/namespaces/{namespace}/events", event)
        except (ApiError, OSError) as exc:
            log.debug("event not recorded: %s", exc)
        log.info("event %s %s %s/%s: %s", kind, reason, namespace, meta["name"], message)

    # --------------------------------------------------------------------------------- scheduler
    def schedule(self, pod: Obj, nodes: list[Obj], bound: dict[str, list[Obj]]) -> None:
        meta = pod["metadata"]
        target, why = pick_node(pod, nodes, bound, self.node_name)
        if target is None:
            self.emit_event(pod, "Warning", "FailedScheduling", why, component="default-scheduler")
            return
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"], "uid": meta["uid"]},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": target}}
        try:
            self.api.create(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", binding)
        except ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("binding %s/%s failed: %s", meta["namespace"], meta["name"], exc)
            return
        bound.setdefault(target, []).append(pod)
        self.emit_event(pod, "Normal", "Scheduled",
                        f"Successfully assigned {meta['namespace']}/{meta['name']} to {target}",
                        component="default-scheduler")

    # ------------------------------------------------------------------------------- provisioner
    def provision(self) -> None:
        classes = {sc["metadata"]["name"]: sc for sc in self.storage_classes.items()}
        pvs = self.volumes.items()
        claimed = {pv["spec"].get("claimRef", {}).get("uid") for pv in pvs}
        for pvc in self.claims.items():
            meta, spec = pvc["metadata"], pvc["spec"]
            sc = classes.get(spec.get("storageClassName") or "")
            if (sc is None or sc.get("provisioner") != PROVISIONER or spec.get("volumeName")
                    or pvc.get("status", {}).get("phase") != "Pending" or meta["uid"] in claimed
                    or meta.get("deletionTimestamp")):
                continue
            name = f"pvc-{meta['uid']}"
            directory = self.state.volumes / name
            capacity = spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")
            annotations = {"pv.kubernetes.io/provisioned-by": PROVISIONER}
            if filesystems.wants_filesystem(sc):
                try:
                    size = (filesystems.image_of(directory).stat().st_size if filesystems.has_image(directory)
                            else filesystems.create(directory, quantity(capacity)))
                    capacity = f"{size // filesystems.MiB}Mi"
                except (OSError, filesystems.FilesystemError) as exc:
                    self.emit_event(pvc, "Warning", "ProvisioningFailed", f"{filesystems.FS_TYPE} volume {name}: "
                                    f"{exc} (needs {', '.join(filesystems.TOOLS)})", component=PROVISIONER)
                    continue
                annotations["localkube.io/filesystem"] = filesystems.FS_TYPE
            else:
                directory.mkdir(parents=True, exist_ok=True)
                directory.chmod(0o777)   # as kind's local-path provisioner: writable by any container user
            pv: Obj = {
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": name, "annotations": annotations,
                             "labels": {"localkube.io/claim-namespace": meta["namespace"]}},
                "spec": {
                    "capacity": {"storage": capacity},
                    "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                    "storageClassName": sc["metadata"]["name"],
                    "volumeMode": spec.get("volumeMode", "Filesystem"),
                    "hostPath": {"path": str(directory), "type": "DirectoryOrCreate"},
                    "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                                 "name": meta["name"], "uid": meta["uid"]},
                },
            }
            try:
                self.api.create("/api/v1/persistentvolumes", pv)
            except ApiError as exc:
                if exc.status != 409:
                    log.warning("provisioning %s failed: %s", name, exc)
                continue
            self.emit_event(pvc, "Normal", "ProvisioningSucceeded",
                            f"Successfully provisioned volume {name} at {directory}", component=PROVISIONER)
        for pv in pvs:
            meta, spec = pv["metadata"], pv["spec"]
            if (meta.get("annotations", {}).get("pv.kubernetes.io/provisioned-by") == PROVISIONER
                    and pv.get("status", {}).get("phase") == "Released"
                    and spec.get("persistentVolumeReclaimPolicy") == "Delete" and not meta.get("deletionTimestamp")):
                path = Path(spec.get("hostPath", {}).get("path", ""))
                if path.is_relative_to(self.state.volumes):
                    try:
                        filesystems.remove(path)
                    except filesystems.FilesystemError as exc:
                        log.warning("volume %s stays: %s", meta["name"], exc)
                        continue
                    shutil.rmtree(path, ignore_errors=True)
                self.api.delete(f"/api/v1/persistentvolumes/{meta['name']}")
                log.info("deleted released volume %s and %s", meta["name"], path)

    # ------------------------------------------------------------------------------------- pods
    def sync_pods(self) -> None:
        pods = self.pods.items()
        nodes = self.nodes()
        names = {n["metadata"]["name"] for n in nodes} | {self.node_name}
        bound: dict[str, list[Obj]] = {}
        for pod in pods:
            if pod["spec"].get("nodeName"):
                bound.setdefault(pod["spec"]["nodeName"], []).append(pod)
        seen = set()
        for pod in pods:
            meta, spec = pod["metadata"], pod["spec"]
            node = spec.get("nodeName")
            if not node:
                if (spec.get("schedulerName", "default-scheduler") == "default-scheduler"
                        and not meta.get("deletionTimestamp")):
                    self.schedule(pod, nodes, bound)
                continue
            if node not in names:
                continue
            seen.add(meta["uid"])
            with self._workers_lock:
                worker = self.workers.get(meta["uid"])
                if worker is None:
                    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                        if meta.get("deletionTimestamp"):
                            self.api.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                                            {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}})
                        continue
                    if self.stopping.is_set():
                        continue
                    worker = PodWorker(self, pod)
                    self.workers[meta["uid"]] = worker
                    worker.start()
                elif pod is not worker.pod:  # changed since (the cache replaces an object it is told changed)
                    worker.update(pod)
        with self._workers_lock:
            for uid, worker in list(self.workers.items()):
                if uid not in seen:
                    worker.gone()

    def resize_volumes(self) -> None:
        """Expansion of the claims whose size grew: the resizer's controller part, and the node part for the
        claims this node's pods use."""
        with self._workers_lock:
            pods = [w.pod for w in self.workers.values()]
        self.resizer.sync(claim_users(pods), self.claims.items(), self.volumes.items())

    def pod_alive(self, namespace: str, name: str) -> bool:
        with self._workers_lock:
            return any(w.namespace == namespace and w.pod_name == name for w in self.workers.values())

    def worker_done(self, uid: str) -> None:
        with self._workers_lock:
            self.workers.pop(uid, None)
        self.wake.set()

    # ------------------------------------------------------------------------------------- loops
    def run(self) -> None:
        self.register_node()
        for cache in self.caches:
            threading.Thread(target=cache.run, args=(self.stopping,), name=f"cache {cache.path}", daemon=True).start()
        for cache in self.caches:  # a pass over half-listed objects would see pods and claims missing
            while not cache.synced.wait(1) and not self.stopping.is_set():
                log.info("waiting for the first list of %s", cache.path)
        threading.Thread(target=self.heartbeat_loop, daemon=True).start()
        log.info("node %s registered; runner state in %s", self.node_name, self.state.root)
        while not self.stopping.is_set():
            try:
                self.provision()
                self.sync_pods()
                self.resize_volumes()
            except Exception:
                log.exception("sync failed")
            self.wake.wait(2.0)
            self.wake.clear()
        self.shutdown()

    def shutdown(self, grace: float = 5.0) -> None:
        with self._workers_lock:
            workers = list(self.workers.values())
        for worker in workers:
            worker.shutdown(grace)
        for worker in workers:
            worker.join(grace + 10)
        kill_leftover_pods(self.state.root)
        self.network.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localkube.runner", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--state-dir", required=True, type=Path)
    parser.add_argument("--node-name", default="localkube")
    parser.add_argument("--node-ip", required=True, help="the node's address (this network namespace's)")
    parser.add_argument("--node-netns", type=Path, required=True,
                        help="the node's network namespace (hostNetwork pods)")
    parser.add_argument("--pod-cidr", required=True)
    parser.add_argument("--pod-netns-prefix", required=True, help="pods' network namespaces are PREFIX<pod uid>")
    parser.add_argument("--cni-network", required=True, help="the CNI network's name")
    parser.add_argument("--cni-bin-dir", type=Path, default=CNI_BIN_DIR)
    parser.add_argument("--kubernetes-service", required=True, metavar="IP:PORT",
                        help="the `kubernetes` Service (KUBERNETES_SERVICE_HOST/PORT of every container)")
    parser.add_argument("--cluster-dns", required=True, help="cluster DNS server of ClusterFirst pods")
    parser.add_argument("--cluster-domain", default="cluster.local")
    parser.add_argument("--tls-cert", type=Path, default=None, help="serving certificate of the kubelet API (logs)")
    parser.add_argument("--tls-key", type=Path, default=None)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(threadName)s %(message)s")
    state = RunnerState(args.state_dir)
    leftovers = kill_leftover_pods(state.root)
    if leftovers:
        log.warning("killed %d container process groups left by a previous runner", len(leftovers))
    network = PodNetwork(PodNetworkConfig(args.cni_network, args.pod_cidr, args.pod_netns_prefix, args.node_ip,
                                          args.node_netns, args.cni_bin_dir), state.root)
    sandboxes = network.cleanup()
    if sandboxes:
        log.warning("deleted %d pod network namespaces left by a previous runner", len(sandboxes))
    host, _, port = args.kubernetes_service.rpartition(":")
    runner = Runner(KubeAPI.from_kubeconfig(args.kubeconfig, user_agent="localkube-runner"), state,
                    args.node_name, network, (host, int(port)), ClusterDNS(args.cluster_dns, args.cluster_domain))
    if args.tls_cert and args.tls_key:
        runner.kubelet_api = KubeletAPI(state.root / "logs", args.tls_cert, args.tls_key, runner.pod_alive,
                                        host=args.node_ip)
        runner.kubelet_api.start()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal %d: stopping pods and exiting", signum)
        runner.stopping.set()
        runner.wake.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    runner.run()
    log.info("runner stopped")
    return 0
