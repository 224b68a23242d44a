"""BookieCluster is served as v1beta1 (stored) and as the deprecated v1alpha1, with one schema, so no conversion
webhook: an object written as v1alpha1 before the upgrade reads as v1beta1 after it. The operator, at
start-up, rewrites objects still stored as v1alpha1 and trims the CRD's storedVersions to v1beta1, after which
v1alpha1 could leave the CRD."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

import pytest
import yaml
from bookie_operator import crd

from tests.operator.conftest import OperatorProcess, bookie_cluster
from tests.support.kube import KubeTarget, wait_for

CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd.models.PLURAL}.{crd.models.GROUP}"
OLD, NEW = "v1alpha1", "v1beta1"


def stored_versions(kube: KubeTarget) -> list[str]:
    live = kube.get(CRD_PATH)
    assert live is not None
    return list(live["status"]["storedVersions"])


def apply_crd(kube: KubeTarget, obj: dict[str, object]) -> None:
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump(obj))
    storage = next(v["name"] for v in obj["spec"]["versions"] if v["storage"])  # type: ignore[index]
    wait_for(lambda: storage in stored_versions(kube), 30, what=f"{storage} in storedVersions")


@pytest.fixture
def crd_stored_as_v1alpha1(kube: KubeTarget, bookie_crd: str) -> Iterator[None]:
    """The CRD as a v1alpha1-storing release had it; the current one is applied back afterwards."""
    before = copy.deepcopy(crd.crd())
    for version in before["spec"]["versions"]:
        version["storage"] = version["name"] == OLD
        version.pop("deprecated", None)
        version.pop("deprecationWarning", None)
    apply_crd(kube, before)
    try:
        yield
    finally:
        kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=crd.render())


def test_a_v1alpha1_object_is_served_as_v1beta1_and_migrated_by_the_operator(
        kube: KubeTarget, kube_namespace: str, crd_stored_as_v1alpha1: None,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    manifest = bookie_cluster("old", "127.0.0.1:1", "/old/ledgers", replicas=3)
    manifest["apiVersion"] = f"{crd.models.GROUP}/{OLD}"
    kube.apply(manifest, namespace=kube_namespace)
    path = f"/apis/{crd.models.GROUP}/{{}}/namespaces/{kube_namespace}/{crd.models.PLURAL}/old"
    written = kube.get(path.format(OLD))
    assert written is not None

    apply_crd(kube, crd.crd())           # the upgrade: v1beta1 stored, v1alpha1 still served
    assert set(stored_versions(kube)) == {OLD, NEW}

    as_new = kube.get(path.format(NEW))
    assert as_new is not None and as_new["apiVersion"] == f"{crd.models.GROUP}/{NEW}"
    assert as_new["spec"] == written["spec"]
    old_read = kube.kubectl("-n", kube_namespace, "get", f"{crd.models.PLURAL}.{OLD}.{crd.models.GROUP}", "old",
                            "-o", "yaml")
    assert f"apiVersion: {crd.models.GROUP}/{OLD}" in old_read.stdout
    assert f"{crd.models.GROUP}/{OLD} BookieCluster is deprecated; use {crd.models.GROUP}/{NEW}" in old_read.stderr

    op = operator_factory(kube_namespace)
    wait_for(lambda: stored_versions(kube) == [NEW], 60, what="storedVersions trimmed to v1beta1")
    migrated = kube.get(path.format(NEW))
    assert migrated is not None
    # Rewritten (a new resourceVersion: the API server stored it again, in v1beta1), nothing in it changed.
    assert int(migrated["metadata"]["resourceVersion"]) > int(written["metadata"]["resourceVersion"])
    assert migrated["spec"] == written["spec"]
    assert f"stored BookieClusters migrated to {crd.models.GROUP}/{NEW}" in op.log
