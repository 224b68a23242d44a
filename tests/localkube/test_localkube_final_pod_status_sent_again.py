"""A finished pod's last status reaches the API server even when the first try is refused: the pod runner sends it
again, and does not run the container again meanwhile.

The refusal is the API server's own: a ValidatingAdmissionPolicy (CEL) denies the status update that says the
pod Succeeded while the pod carries a label, and the test lifts the label once the runner was refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localkube.kapi import ApiError

from tests.support.kube import KubeTarget, wait_for

HOLD = "localkube-test/hold-final-status"
MESSAGE = "the final status is held by the test"


def policy(name: str, namespace: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["UPDATE"], "resources": ["pods/status"]}]},
                  "validations": [{"expression": f"object.status.phase != 'Succeeded' || "
                                                 f"!has(object.metadata.labels) || "
                                                 f"!('{HOLD}' in object.metadata.labels)",
                                   "message": MESSAGE}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": name},
         "spec": {"policyName": name, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {
                      "kubernetes.io/metadata.name": namespace}}}}},
    ]


def held(kube: KubeTarget, path: str) -> bool:
    """Whether the policy is in force: a dry-run status update saying Succeeded is denied with its message."""
    try:
        kube.api.request("PATCH", f"{path}/status", {"status": {"phase": "Succeeded"}},
                         params={"dryRun": "All"}, content_type="application/merge-patch+json")
    except ApiError as exc:
        return MESSAGE in exc.message
    return False


def test_a_refused_final_status_is_sent_again_and_the_container_runs_once(kube: KubeTarget, kube_namespace: str,
                                                                          tmp_path: Path) -> None:
    ns = kube_namespace
    runs, go = tmp_path / "runs", tmp_path / "go"
    # busybox runs as a host command: the container sees the test's directory.
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "once", "labels": {HOLD: "yes"}},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox",
                    "command": ["sh", "-c", f"echo ran >> {runs}; until [ -e {go} ]; do sleep 0.1; done; exit 0"]}]}},
               namespace=ns)
    path = f"/api/v1/namespaces/{ns}/pods/once"
    wait_for(lambda: runs.exists(), 60, what="the container started")
    name = f"hold-{ns}"
    for obj in policy(name, ns):
        kube.apply(obj)
    try:
        wait_for(lambda: held(kube, path), 60, what="the admission policy in force")
        log = kube.local.log_path("pod-runner") if kube.local is not None else None
        assert log is not None
        refused = f"pod {ns}/once: status update failed"
        go.touch()
        wait_for(lambda: refused in log.read_text(errors="replace"), 60, what="the runner's final status refused")
        pod = kube.get(path)
        assert pod is not None and pod["status"]["phase"] == "Running", "the refused status is not in the API"

        kube.kubectl("-n", ns, "label", "pod", "once", f"{HOLD}-")

        def succeeded() -> dict[str, Any] | None:
            pod = kube.get(path)
            return pod if pod is not None and pod["status"]["phase"] == "Succeeded" else None

        pod = wait_for(succeeded, 30, what="the final status sent again")
    finally:
        kube.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name,
                     "--ignore-not-found", check=False)
    state = pod["status"]["containerStatuses"][0]
    assert state["state"]["terminated"]["exitCode"] == 0 and state["restartCount"] == 0
    assert runs.read_text().splitlines() == ["ran"], "the container ran once"
