"""A configuration change restarts the bookies one at a time (highest ordinal first), each only after every
bookie is ready again and nothing is under-replicated; the operator's Prometheus metrics count it."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import (
    OperatorProcess,
    as_posted,
    bookie_cluster,
    events,
    get_cluster,
    patch_spec,
    wait_ready,
)
from tests.support.kube import KubeTarget, pod_ready, wait_for


def test_a_config_change_rolls_one_bookie_at_a_time(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[..., OperatorProcess]) -> None:
    ns = kube_namespace
    operator = operator_factory(ns, metrics=True)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, f"/{ns}/ledgers"), namespace=ns)
    obj = wait_ready(kube, ns, "bk")
    checksum = obj["status"]["configChecksum"]
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in kube.pods(ns, "app.kubernetes.io/instance=bk")}

    patch_spec(kube, ns, "bk", {"config": {"flushInterval": 1500}})
    most_unready = 0

    def rolled() -> dict[str, Any] | None:
        nonlocal most_unready
        pods = kube.pods(ns, "app.kubernetes.io/instance=bk")
        most_unready = max(most_unready, sum(1 for p in pods if not pod_ready(p)) + (3 - len(pods)))
        replaced = all(before.get(p["metadata"]["name"]) != p["metadata"]["uid"] for p in pods)
        obj = get_cluster(kube, ns, "bk")
        return obj if replaced and len(pods) == 3 and all(pod_ready(p) for p in pods) else None

    obj = wait_for(rolled, 240, interval=0.2, what="every bookie restarted with the new configuration")
    assert obj["status"]["configChecksum"] != checksum
    assert most_unready == 1, f"{most_unready} bookies were down at once"
    restarts = as_posted(events(kube, ns, "bk", "RollingRestart"))
    assert [e["message"].split()[0] for e in restarts] == ["bk-2", "bk-1", "bk-0"]
    wait_ready(kube, ns, "bk")

    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    assert 'bookie_operator_rolling_restarts_total 3.0' in text
    assert "bookie_operator_reconciles_total" in text
    assert 'bookie_operator_kube_api_requests_total{verb="GET"}' in text
    assert f'bookie_operator_writable_bookies{{cluster="bk",namespace="{ns}"}} 3.0' in text
