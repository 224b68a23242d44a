"""Argo CD's health check and kstatus (Flux, kpt) read BookieClusters as the API server holds them, through a
cluster's life on the local Kubernetes: progressing while its bookies start, healthy and current once Ready,
degraded and failed while its spec is one only the operator can refuse, and healthy again once fixed; and a
second cluster whose adoption is refused (its StatefulSet is not there) is degraded and failed with the refusal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    JAVA,
    OperatorProcess,
    bookie_cluster,
    condition,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.operator.gitops_health import argocd_health, kstatus
from tests.support.kube import KubeTarget, wait_for

pytestmark = pytest.mark.bootstrap_part("gitops")


def test_gitops_tools_follow_a_cluster_from_creation_to_an_invalid_spec_and_back(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns = kube_namespace
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers"), namespace=ns)

    def health() -> tuple[tuple[str, str], tuple[str, str], dict[str, Any]]:
        obj = get_cluster(kube, ns, "bk")
        return argocd_health(obj), kstatus(obj), obj

    def starting() -> tuple[str, str] | None:
        argocd, flux, obj = health()
        progressing = condition(obj, "Progressing")
        return (argocd[0], flux[0]) if progressing and progressing["status"] == "True" else None

    assert wait_for(starting, 60, interval=0.5, what="a Progressing condition") == ("Progressing", "InProgress")
    wait_ready(kube, ns, "bk")
    assert [h[0] for h in health()[:2]] == ["Healthy", "Current"]

    # In range key by key, refused together by the bookie configuration model: only the operator can tell.
    patch_spec(kube, ns, "bk", {"config": {"diskUsageLwmThreshold": 0.97, "diskUsageThreshold": 0.9,
                                           "diskUsageWarnThreshold": 0.85}})

    def refused() -> tuple[tuple[str, str], tuple[str, str]] | None:
        argocd, flux, obj = health()
        stalled = condition(obj, "Stalled")
        return (argocd, flux) if stalled and stalled["reason"] == "InvalidSpec" else None

    argocd, flux = wait_for(refused, 60, interval=0.5, what="the invalid spec's Stalled condition")
    assert argocd[0] == "Degraded" and flux[0] == "Failed"
    assert "diskUsageLwmThreshold must be <= diskUsageThreshold" in flux[1]

    patch_spec(kube, ns, "bk", {"config": None})

    def recovered() -> list[str] | None:
        argocd, flux, _ = health()
        return [argocd[0], flux[0]] if flux[0] == "Current" else None

    assert wait_for(recovered, 120, interval=0.5, what="kstatus Current again") == ["Healthy", "Current"]

    # An adoption refused before anything is created: the refusal is Stalled, as kstatus reads it from the server.
    kube.apply(bookie_cluster("gone", zookeeper.connect_string, f"/{ns}/gone", **JAVA,
                              adopt={"statefulSetName": "gone"}),
               namespace=ns)

    def adoption_refused() -> tuple[tuple[str, str], tuple[str, str]] | None:
        obj = get_cluster(kube, ns, "gone")
        stalled = condition(obj, "Stalled")
        return (argocd_health(obj), kstatus(obj)) if stalled and stalled["status"] == "True" else None

    argocd, flux = wait_for(adoption_refused, 60, interval=0.5, what="the refused adoption's Stalled condition")
    assert argocd == ("Degraded", f"AdoptionNotFound: StatefulSet gone: not found in namespace {ns}")
    assert flux == ("Failed", f"StatefulSet gone: not found in namespace {ns}")
