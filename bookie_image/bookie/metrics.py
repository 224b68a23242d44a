"""Prometheus metrics of a bookie, collected on scrape from the components' own counters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class BookieCollector(Collector):
    """Reads counters from a snapshot function so components need no Prometheus dependency."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot()
        for name, value in sorted(snap.get("counters", {}).items()):
            yield CounterMetricFamily(f"bookie_{name}", f"bookie counter {name}", value=value)
        for name, value in sorted(snap.get("gauges", {}).items()):
            yield GaugeMetricFamily(f"bookie_{name}", f"bookie gauge {name}", value=value)
        dirs = snap.get("ledger_dirs", {})
        if dirs:
            used = GaugeMetricFamily("bookie_ledger_dir_used_ratio", "used fraction of a ledger directory's disk",
                                     labels=["dir"])
            for path, ratio in dirs.items():
                used.add_metric([path], ratio)
            yield used


def registry_for(snapshot: Callable[[], dict[str, Any]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BookieCollector(snapshot))
    return registry


def render(registry: CollectorRegistry) -> tuple[bytes, str]:
    return generate_latest(registry), CONTENT_TYPE
