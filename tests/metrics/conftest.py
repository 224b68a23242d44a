"""A mixed fleet (three Apache BookKeeper bookies with their Prometheus provider, three of ours) under a light
write/read load, scraped by a real Prometheus: started once per test session, stopped at its end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from bookie_fleet.monitoring import LightLoad, MixedFleet, metrics_address, start_mixed_fleet
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.metrics.prometheus import Prometheus, Target


@dataclass
class Monitored:
    fleet: MixedFleet
    prometheus: Prometheus
    load: LightLoad

    @staticmethod
    def selector(kind: str) -> str:
        return f'cluster="monitored",kind="{kind}"'


def targets(fleet: MixedFleet) -> list[Target]:
    """The labels Kubernetes scrape relabeling gives a bookie pod: job, cluster, kubernetes_pod_name; ``kind``
    tells Apache BookKeeper's bookies (java) from ours (python)."""
    out = []
    for kind, bookies in (("java", fleet.java), ("python", fleet.ours)):
        for i, b in enumerate(bookies):
            out.append(Target(metrics_address(b), {"cluster": "monitored", "kind": kind,
                                                   "kubernetes_pod_name": f"{kind}-bookie-{i}"}))
    return out


@pytest.fixture(scope="session")
def monitored(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Monitored]:
    base = tmp_path_factory.mktemp("monitored")
    fleet = start_mixed_fleet(base, zookeeper.connect_string, f"/monitored-{uuid.uuid4().hex[:8]}/ledgers",
                              diskUsageThreshold=0.999, diskUsageWarnThreshold=0.998, journalSyncData=True)
    prometheus = load = None
    try:
        prometheus = Prometheus(base / "prometheus", targets(fleet)).start()
        load = LightLoad(zookeeper.connect_string, fleet.ledgers_root, len(fleet.bookies)).start()
        yield Monitored(fleet, prometheus, load)
    finally:
        if load is not None:
            load.stop()
        if prometheus is not None:
            prometheus.stop()
        fleet.stop()
