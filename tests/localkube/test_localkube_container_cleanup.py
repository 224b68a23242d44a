"""Nothing of a container is left behind: after a pod's deletion (graceful: SIGTERM first, SIGKILL after the
grace period) no runc container, mount, bundle, process or network namespace remains; after the runner itself
is killed and the cluster taken down, neither."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from localkube.cluster import LocalCluster

from localkube import network, procs
from tests.support.kube import KubeTarget, pod_ready, wait_for
from tests.support.ociimage import SHELL_IMAGE, load_shell_images, mounts_below, runc_containers, runc_pid

TERM_AWARE = "trap 'echo got-term; exit 0' TERM; while true; do sleep 1; done"


def _pod(name: str, command: str, grace: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "terminationGracePeriodSeconds": grace,
        "volumes": [{"name": "v", "emptyDir": {}}],
        "containers": [{"name": "c", "image": SHELL_IMAGE, "command": ["sh", "-c", command],
                        "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}}


def _running(kube: KubeTarget, namespace: str, name: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        return pod if pod and pod_ready(pod) else None

    return wait_for(ready, 90, what=f"{name} Ready")


def test_nothing_left_after_pod_deletion(kube: KubeTarget, kube_cluster: LocalCluster, kube_namespace: str,
                                         shell_image: str) -> None:
    state = kube_cluster.state_dir / "runner"
    kube.apply([_pod("polite", TERM_AWARE, 30), _pod("stubborn", "sleep 3600", 2)], namespace=kube_namespace)
    polite, stubborn = (_running(kube, kube_namespace, n) for n in ("polite", "stubborn"))
    pids = [runc_pid(state, p["status"]["containerStatuses"][0]["containerID"]) for p in (polite, stubborn)]
    uids = [p["metadata"]["uid"] for p in (polite, stubborn)]
    assert all(mounts_below(state / "pods" / uid) for uid in uids)   # each writable root is an overlay

    started = time.monotonic()
    kube.kubectl("-n", kube_namespace, "delete", "pod", "polite", "stubborn", "--wait=true", "--timeout=120s")
    # The shell as pid 1 of its namespace ignores SIGTERM without a trap: SIGKILL after its 2 s grace.
    assert time.monotonic() - started >= 2
    log = (state / "logs").glob(f"{kube_namespace}_polite_*/c.log")
    assert "got-term" in next(log).read_text()
    assert not any(procs.alive(pid) for pid in pids)
    for uid in uids:
        assert not any(name.endswith(uid) for name in network.netns_names())
        assert not any(uid in cid for cid in runc_containers(state))
        assert not list(Path("/sys/fs/cgroup").glob(f"*/localkube/{uid}-c"))
        assert not mounts_below(state / "pods" / uid)
        assert not (state / "pods" / uid).exists()


def test_nothing_left_after_runner_killed_and_cluster_down(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "c", ephemeral_ports=True, node_name="leftovers")
    try:
        cluster.up()
        state = cluster.state_dir / "runner"
        load_shell_images(state, tmp_path)
        api = cluster.api()
        api.create("/api/v1/namespaces/default/pods", _pod("orphan", "sleep 3600", 30))
        pod = wait_for(lambda: (lambda p: p if p and pod_ready(p) else None)(
            api.get("/api/v1/namespaces/default/pods/orphan")), 90, what="pod Ready")
        pid = runc_pid(state, pod["status"]["containerStatuses"][0]["containerID"])
        prefix = cluster.node_network.pod_netns_prefix
        assert any(name.startswith(prefix) for name in network.netns_names())
        runner = next(c for c in cluster.status().components if c.name == "pod-runner")
        assert runner.pid is not None
        os.kill(runner.pid, signal.SIGKILL)   # no chance to stop its containers
        time.sleep(1)
        assert procs.alive(pid) and runc_containers(state) and mounts_below(state / "pods")
    finally:
        cluster.down()
    assert not procs.alive(pid)
    assert not any(name.startswith(prefix) for name in network.netns_names())
    assert runc_containers(state) == []
    assert mounts_below(cluster.state_dir) == []
    assert not list(Path("/sys/fs/cgroup").glob(f"*/localkube/{pod['metadata']['uid']}-c"))
