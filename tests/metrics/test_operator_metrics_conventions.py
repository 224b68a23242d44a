"""The operator's metrics follow the conventions of docs/monitoring.md: ``bookie_operator_`` prefix, counters
ending in ``_total``, seconds and ratios as units, bounded label names, and no ``*_created`` series."""

from __future__ import annotations

from bookie_operator import metrics
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.metrics import MetricWrapperBase

BOUNDED_LABELS = {"result", "verb", "kind", "to", "why", "phase", "namespace", "cluster", "pod"}


def operator_metrics() -> list[MetricWrapperBase]:
    return [v for v in vars(metrics).values() if isinstance(v, MetricWrapperBase)]


def test_names_units_and_labels() -> None:
    found = operator_metrics()
    assert len(found) >= 10
    for metric in found:
        name = metric._name  # the family name prometheus-client exposes (``_total`` stripped for counters)
        assert name.startswith("bookie_operator_"), name
        kind = metric._type
        if kind == "histogram":
            assert name.endswith("_seconds"), name
        if kind == "gauge":
            assert not name.endswith("_total"), name
        assert set(metric._labelnames) <= BOUNDED_LABELS, (name, metric._labelnames)


def test_exposition_has_total_counters_and_no_created_series() -> None:
    metrics.RESTARTS.inc(0)
    text = generate_latest(REGISTRY).decode()
    samples = [line.split(" ")[0].split("{")[0] for line in text.splitlines() if line.startswith("bookie_operator_")]
    assert "bookie_operator_rolling_restarts_total" in samples
    assert not [s for s in samples if s.endswith("_created")]
    assert not [s for s in samples if s.endswith("_total_total")]
