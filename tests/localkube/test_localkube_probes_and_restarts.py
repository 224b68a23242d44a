"""Readiness follows the probe (exec / TCP), a crashing container is restarted by restartPolicy, and a
deleted pod's process gets SIGTERM, then SIGKILL after the grace period."""

from __future__ import annotations

import os
import time
from typing import Any

from tests.support.kube import KubeTarget, container_pid, pod_ready, wait_for


def pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "command": command, **spec.pop("container", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container], **spec}}


def get(kube: KubeTarget, ns: str, name: str) -> dict[str, Any]:
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    assert obj is not None
    return obj


def test_readiness_follows_exec_probe(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply(pod("ready", ["sh", "-c", "touch /tmp/ready-$HOSTNAME; sleep 3600"], container={
        "readinessProbe": {"exec": {"command": ["sh", "-c", "test -e /tmp/ready-$HOSTNAME"]},
                           "periodSeconds": 1, "failureThreshold": 1}}), namespace=kube_namespace)
    wait_for(lambda: pod_ready(get(kube, kube_namespace, "ready")), 30, what="Ready")
    os.remove("/tmp/ready-ready")
    wait_for(lambda: not pod_ready(get(kube, kube_namespace, "ready")), 30, what="not Ready")
    condition = next(c for c in get(kube, kube_namespace, "ready")["status"]["conditions"] if c["type"] == "Ready")
    assert condition["reason"] == "ContainersNotReady"


def test_crashing_container_is_restarted(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply(pod("crash", ["sh", "-c", "echo started; sleep 1; exit 3"]), namespace=kube_namespace)

    def restarted() -> dict[str, Any] | None:
        status = get(kube, kube_namespace, "crash")["status"].get("containerStatuses", [{}])[0]
        return status if status.get("restartCount", 0) >= 2 else None

    status = wait_for(restarted, 60, what="two restarts")
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["lastState"]["terminated"]["reason"] == "Error"

    kube.apply(pod("once", ["sh", "-c", "exit 4"], restartPolicy="Never"), namespace=kube_namespace)
    wait_for(lambda: get(kube, kube_namespace, "once")["status"].get("phase") == "Failed", 30, what="Failed")
    final = get(kube, kube_namespace, "once")["status"]["containerStatuses"][0]
    assert final["restartCount"] == 0 and final["state"]["terminated"]["exitCode"] == 4


def test_deletion_waits_for_grace_period_then_kills(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply(pod("stubborn", ["sh", "-c", "trap 'echo ignoring TERM' TERM; while true; do sleep 0.2; done"],
                   terminationGracePeriodSeconds=3, container={"readinessProbe": {"tcpSocket": {"port": 1}}}),
               namespace=kube_namespace)
    wait_for(lambda: get(kube, kube_namespace, "stubborn")["status"].get("phase") == "Running", 30, what="Running")
    pid = container_pid(get(kube, kube_namespace, "stubborn"))
    assert pid is not None
    assert not pod_ready(get(kube, kube_namespace, "stubborn"))   # nothing listens on port 1
    started = time.monotonic()
    kube.kubectl("-n", kube_namespace, "delete", "pod", "stubborn", "--wait=true", timeout=60)
    took = time.monotonic() - started
    assert not os.path.exists(f"/proc/{pid}")
    assert 2.5 <= took < 20, took
