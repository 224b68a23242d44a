"""What a failed Kubernetes test leaves in its report: the state of the namespaces it used, read before their
teardown deletes them.

For every namespace open when the test failed (``fresh_namespace``, hence ``kube_namespace`` too) the report gets
a section with each pod's phase, conditions and container states, and the namespace's events. On the local
cluster it also gets what the pod runner (localkube's kubelet) logged during the test about those namespaces,
with its warnings and errors: a pod that never started says why there, and nowhere else once the session's
cluster is gone.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from tests.support.kube import KubeTarget, open_namespaces

RUNNER_LOG_OFFSET = pytest.StashKey[int]()
MAX_RUNNER_LINES = 80
MAX_EVENTS = 40


def runner_log_size(kube: KubeTarget) -> int:
    if kube.local is None:
        return 0
    try:
        return kube.local.log_path("pod-runner").stat().st_size
    except OSError:
        return 0


def _runner_lines(kube: KubeTarget, offset: int, namespaces: list[str]) -> list[str]:
    """The runner's log lines since ``offset`` that name one of ``namespaces`` or say something went wrong."""
    if kube.local is None:
        return []
    try:
        with open(kube.local.log_path("pod-runner"), "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError as exc:
        return [f"(runner log unreadable: {exc})"]
    wanted = [line for line in text.splitlines()
              if any(ns in line for ns in namespaces) or " WARNING " in line or " ERROR " in line
              or line.startswith(("Traceback", "  ", "localkube."))]
    return wanted[-MAX_RUNNER_LINES:]


def _container_line(status: dict[str, Any]) -> str:
    state = status.get("state") or {}
    last = status.get("lastState") or {}
    return (f"    container {status.get('name')}: state {state}, last state {last}, "
            f"ready {status.get('ready')}, restarts {status.get('restartCount')}")


def _namespace_report(kube: KubeTarget, namespace: str) -> list[str]:
    lines = [f"namespace {namespace}:"]
    pods = kube.pods(namespace)
    if not pods:
        lines.append("  no pods")
    for pod in pods:
        status = pod.get("status") or {}
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        lines.append(f"  pod {pod['metadata']['name']} on {pod['spec'].get('nodeName') or '(unscheduled)'}: "
                     f"phase {status.get('phase')}, conditions {conditions}")
        containers = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
        lines += [_container_line(c) for c in containers]
    events = sorted(kube.events(namespace), key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime")))
    for event in events[-MAX_EVENTS:]:
        involved = event.get("involvedObject") or {}
        lines.append(f"  event {event.get('lastTimestamp') or event.get('eventTime')} {event.get('type')} "
                     f"{event.get('reason')} {involved.get('kind')}/{involved.get('name')}: {event.get('message')}")
    return lines


def state_report(kube: KubeTarget, offset: int) -> str:
    namespaces = sorted(open_namespaces)
    lines: list[str] = []
    for namespace in namespaces:
        try:
            lines += _namespace_report(kube, namespace)
        except Exception as exc:  # the report must never hide the failure it describes
            lines.append(f"namespace {namespace}: not readable ({exc!r})")
    runner = _runner_lines(kube, offset, namespaces)
    if runner:
        lines += ["pod runner log during the test (these namespaces, warnings and errors):", *runner]
    return "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    kube = getattr(item, "funcargs", {}).get("kube")
    if isinstance(kube, KubeTarget):
        item.stash[RUNNER_LOG_OFFSET] = runner_log_size(kube)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, pytest.TestReport]:
    report = yield
    kube = getattr(item, "funcargs", {}).get("kube")
    if report.when == "call" and report.failed and isinstance(kube, KubeTarget) and open_namespaces:
        report.sections.append(("Kubernetes state at the failure",
                                state_report(kube, item.stash.get(RUNNER_LOG_OFFSET, 0))))
    return report
