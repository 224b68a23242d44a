"""A CRD's OpenAPI schema is enforced by the real API server, with its own messages."""

from __future__ import annotations

import pytest
from localkube.kapi import ApiError

from tests.support.kube import KubeTarget, wait_for

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.localkube.io
spec:
  group: test.localkube.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            properties:
              replicas: {type: integer, minimum: 1, maximum: 9}
              mode: {type: string, enum: [fast, safe]}
            x-kubernetes-validations:
            - rule: "self.mode != 'fast' || self.replicas >= 3"
              message: fast mode needs at least 3 replicas
"""


def widget(ns: str, spec: dict[str, object], name: str = "w") -> dict[str, object]:
    return {"apiVersion": "test.localkube.io/v1alpha1", "kind": "Widget",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_crd_schema_rejects_invalid_objects(kube: KubeTarget, kube_namespace: str) -> None:
    kube.apply(CRD)
    wait_for(lambda: any(c["type"] == "Established" and c["status"] == "True" for c in
                         (kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.localkube.io")
                          or {}).get("status", {}).get("conditions") or []), 30, what="CRD Established")
    path = f"/apis/test.localkube.io/v1alpha1/namespaces/{kube_namespace}/widgets"

    def served() -> bool:
        try:
            return kube.api.request("GET", path) is not None
        except ApiError:   # 404 until discovery has the group, 429 while the storage initializes
            return False

    wait_for(served, 30, what="widgets served")

    with pytest.raises(ApiError) as bad_range:
        kube.api.create(path, widget(kube_namespace, {"replicas": 0}))
    assert bad_range.value.status == 422
    assert "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1" \
        in bad_range.value.message

    with pytest.raises(ApiError) as missing:
        kube.api.create(path, widget(kube_namespace, {"mode": "safe"}))
    assert 'spec.replicas: Required value' in missing.value.message

    with pytest.raises(ApiError) as rule:
        kube.api.create(path, widget(kube_namespace, {"replicas": 2, "mode": "fast"}))
    assert "fast mode needs at least 3 replicas" in rule.value.message

    # kubectl shows the same server message.
    result = kube.kubectl("apply", "-f", "-", check=False, input=(
        f"apiVersion: test.localkube.io/v1alpha1\nkind: Widget\nmetadata: {{name: k, namespace: {kube_namespace}}}\n"
        "spec: {replicas: 1, mode: slow}\n"))
    assert result.returncode != 0
    assert 'spec.mode: Unsupported value: "slow": supported values: "fast", "safe"' in result.stderr

    created = kube.api.create(path, widget(kube_namespace, {"replicas": 3, "mode": "fast"}))
    assert created["spec"] == {"replicas": 3, "mode": "fast"}
    kube.kubectl("delete", "crd", "widgets.test.localkube.io", "--wait=false")
