"""Upgrading the operator upgrades its CRD: Helm installs a chart's crds/ once and never updates them, so the
operator applies the CRD of its own version at start-up. A live CRD of an older shape (a printer column
fewer, an older description) is the operator's own again once it has started."""

from __future__ import annotations

import json
from collections.abc import Callable

from bookie_operator import crd

from tests.operator.conftest import OperatorProcess
from tests.support.kube import KubeTarget, wait_for

PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd.models.PLURAL}.{crd.models.GROUP}"


def columns(obj: dict[str, object]) -> list[str]:
    version = obj["spec"]["versions"][0]  # type: ignore[index]
    return [c["name"] for c in version.get("additionalPrinterColumns", [])]


def test_the_operator_applies_its_own_crd_over_an_older_one(
        kube: KubeTarget, kube_namespace: str, bookie_crd: str,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    wanted = columns(crd.crd())
    older = [{"op": "remove", "path": "/spec/versions/0/additionalPrinterColumns/1"},
             {"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema/description",
              "value": "an older BookieCluster"}]
    kube.kubectl("patch", "crd", bookie_crd, "--type", "json", "-p", json.dumps(older))
    live = kube.get(PATH)
    assert live is not None and columns(live) != wanted

    op = operator_factory(kube_namespace)
    # The operator says what it did with the CRD once the API server has answered its apply; a busy machine
    # can take a while to start it, so the wait is for that line, not for a fixed time after the start.
    try:
        said = wait_for(lambda: next((line for line in op.log.splitlines()
                                      if "is the operator's own" in line or "cannot apply" in line), None),
                        180, what="the operator to apply its CRD")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; its log:\n{op.log[-3000:]}") from None
    assert "is the operator's own" in said, f"{said}\n{op.log[-3000:]}"

    obj = kube.get(PATH)
    assert obj is not None
    assert columns(obj) == wanted
    assert obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"].get("description") != "an older BookieCluster"


def test_the_chart_grants_the_operator_its_crd_only_when_it_manages_it(kube: KubeTarget) -> None:
    from tests.operator.test_operator_helm_chart import CHART

    crd_rule = 'resourceNames: ["bookieclusters.bookie-fleet.dev"]'
    managed = kube.helm("template", "bkop", str(CHART)).stdout
    assert crd_rule in managed
    assert "--no-manage-crd" not in managed
    unmanaged = kube.helm("template", "bkop", str(CHART), "--set", "crds.manage=false").stdout
    assert crd_rule not in unmanaged and "--no-manage-crd" in unmanaged
