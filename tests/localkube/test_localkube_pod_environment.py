"""What a container sees: args and env with $(VAR) expansion, downward API, ConfigMap/Secret env and volume
files at the container's paths (mount namespace), and an in-cluster service account token that works."""

from __future__ import annotations

import json
from typing import Any

from tests.support.kube import KubeTarget, wait_for

REPORT = """\
import json, os, ssl, sys, urllib.request
def read(p):
    try:
        return open(p).read()
    except OSError as exc:
        return f"ERROR {exc}"
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
ctx = ssl.create_default_context(cafile=f"{sa}/ca.crt")
req = urllib.request.Request(
    f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"
    f"/api/v1/namespaces/{read(sa + '/namespace')}/configmaps/settings",
    headers={"Authorization": "Bearer " + read(sa + "/token")})
try:
    api = json.load(urllib.request.urlopen(req, context=ctx, timeout=10))["data"]
except Exception as exc:
    api = f"ERROR {exc}"
print("REPORT " + json.dumps({
    "argv": sys.argv[1:], "cwd": os.getcwd(),
    "env": {k: v for k, v in os.environ.items() if k.startswith(("MY_", "CFG_", "KUBERNETES_SERVICE"))},
    "files": {p: read(p) for p in ["/etc/settings/mode", "/etc/settings/renamed", "/etc/creds/password",
                                   "/etc/podinfo/labels", "/srv/app/scratch/.keep"]},
    "api": api,
}), flush=True)
"""


def test_container_sees_env_volumes_and_service_account(kube: KubeTarget, kube_namespace: str) -> None:
    ns = kube_namespace
    kube.apply([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
         "data": {"mode": "fast", "level": "3"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"password": "s3cret"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "read-cm"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-cm"},
         "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}]},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "env", "labels": {"app": "env"}}, "spec": {
            "serviceAccountName": "reader", "restartPolicy": "Never",
            "containers": [{
                "name": "report", "image": "docker.io/library/python:3.11", "workingDir": "/srv/app",
                "command": ["python3", "-c", REPORT], "args": ["$(MY_POD)", "$$(MY_POD)", "$(UNDEFINED)"],
                "env": [
                    {"name": "MY_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "MY_URL", "value": "http://$(MY_IP):8080/$(MY_POD)"},
                    {"name": "MY_LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}},
                    {"name": "MY_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                ],
                "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
                "volumeMounts": [
                    {"name": "settings", "mountPath": "/etc/settings", "readOnly": True},
                    {"name": "renamed", "mountPath": "/etc/settings/renamed", "subPath": "renamed"},
                    {"name": "creds", "mountPath": "/etc/creds"},
                    {"name": "podinfo", "mountPath": "/etc/podinfo"},
                    {"name": "scratch", "mountPath": "/srv/app/scratch"},
                ],
            }],
            "volumes": [
                {"name": "settings", "configMap": {"name": "settings"}},
                {"name": "renamed", "configMap": {"name": "settings", "items": [{"key": "mode", "path": "renamed"}]}},
                {"name": "creds", "secret": {"secretName": "creds"}},
                {"name": "podinfo", "downwardAPI": {"items": [{"path": "labels",
                                                               "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "scratch", "emptyDir": {}},
            ],
        }},
    ], namespace=ns)

    def finished() -> dict[str, Any] | None:
        pod = kube.get(f"/api/v1/namespaces/{ns}/pods/env")
        return pod if pod and pod["status"].get("phase") in ("Succeeded", "Failed") else None

    pod = wait_for(finished, 60, what="the pod to finish")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    log_dir = kube.local.state_dir / "runner" / "logs" if kube.local else None
    assert log_dir is not None
    log = next(log_dir.glob(f"{ns}_env_*/report.log")).read_text()
    report = json.loads(log.split("REPORT ", 1)[1].splitlines()[0])
    ip = pod["status"]["podIP"]
    assert report["argv"] == ["env", "$(MY_POD)", "$(UNDEFINED)"]
    assert report["cwd"] == "/srv/app"
    env = report["env"]
    assert env["MY_POD"] == "env" and env["MY_NS"] == ns and env["MY_IP"] == ip
    assert env["MY_URL"] == f"http://{ip}:8080/env"
    assert env["MY_LEVEL"] == "3" and env["MY_PASSWORD"] == "s3cret"
    assert env["CFG_mode"] == "fast" and env["CFG_level"] == "3"
    # The `kubernetes` Service, as on any cluster: kube-proxy takes the pod to the API server.
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("10.96.0.1", "443")
    assert report["files"] == {"/etc/settings/mode": "fast", "/etc/settings/renamed": "fast",
                               "/etc/creds/password": "s3cret", "/etc/podinfo/labels": 'app="env"',
                               "/srv/app/scratch/.keep": "ERROR [Errno 2] No such file or directory: "
                                                      "'/srv/app/scratch/.keep'"}
    # The projected service account token, CA and namespace work against the API server, with RBAC applied.
    assert report["api"] == {"level": "3", "mode": "fast"}
