"""Termination messages as a kubelet keeps them: what a container writes to its ``terminationMessagePath``
(``/dev/termination-log`` by default, a private file per container) becomes ``state.terminated.message`` and,
after a restart, ``lastState.terminated.message``; ``FallbackToLogsOnError`` takes the end of the log of a
failed container that wrote nothing; the machine's own /dev never gets the file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.support.kube import KubeTarget, wait_for


def pod(name: str, script: str, restart: str = "Always", **container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": restart,
                     "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", script],
                                     **container}]}}


def container_status(kube: KubeTarget, ns: str, name: str) -> dict[str, Any]:
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    assert obj is not None
    return ((obj.get("status") or {}).get("containerStatuses") or [{}])[0]


def test_the_message_written_by_a_failing_container_is_in_its_status(kube: KubeTarget, kube_namespace: str,
                                                                   tmp_path: Path) -> None:
    ns = kube_namespace
    # Each run appends to a message that must start empty: a message belongs to one run.
    kube.apply(pod("fails", "echo 'log line'; echo -n \"DiskFull: run $(cat /dev/termination-log | wc -c)\" "
                   ">> /dev/termination-log; exit 3"), namespace=ns)

    def restarted() -> dict[str, Any] | None:
        status = container_status(kube, ns, "fails")
        return status if status.get("restartCount", 0) >= 1 and "terminated" in status.get("lastState", {}) else None

    status = wait_for(restarted, 60, what="a restart")
    last = status["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"], last["message"]) == (3, "Error", "DiskFull: run 0")
    assert last["startedAt"] <= last["finishedAt"]
    assert not os.path.exists("/dev/termination-log"), "the container's file stays in its own /dev"

    # A path of the test's own: a busybox pod runs as a host command, whose mount targets are made on the machine.
    why = tmp_path / "why"
    kube.apply(pod("custom", f"echo -n bye > {why}; exit 0", restart="Never",
                   terminationMessagePath=str(why)), namespace=ns)
    done = wait_for(lambda: container_status(kube, ns, "custom").get("state", {}).get("terminated"), 60,
                    what="terminated")
    assert (done["exitCode"], done["reason"], done["message"]) == (0, "Completed", "bye")


def test_fallback_to_logs_on_error(kube: KubeTarget, kube_namespace: str) -> None:
    ns = kube_namespace
    kube.apply(pod("logs", "echo first; echo 'java.io.IOException: No space left on device'; exit 1",
                   restart="Never", terminationMessagePolicy="FallbackToLogsOnError"), namespace=ns)
    kube.apply(pod("quiet", "echo nothing to see; exit 1", restart="Never"), namespace=ns)
    logs = wait_for(lambda: container_status(kube, ns, "logs").get("state", {}).get("terminated"), 60,
                    what="terminated")
    assert logs["message"].endswith("first\njava.io.IOException: No space left on device")
    quiet = wait_for(lambda: container_status(kube, ns, "quiet").get("state", {}).get("terminated"), 60,
                     what="terminated")
    assert "message" not in quiet, "policy File: no message without the file"
