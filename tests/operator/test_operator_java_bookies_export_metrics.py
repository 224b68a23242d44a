"""Apache BookKeeper's bookies export their metrics: the operator turns on BookKeeper's Prometheus provider
(the code's default, NullStatsProvider, leaves /metrics on their admin port empty, which the chart's PodMonitor
scrapes), and the configuration both implementations read during a switch still validates for ours."""

from __future__ import annotations

from bookie.config import PROMETHEUS_PROVIDER, BookieConfig
from bookie_operator import builders

from tests.operator.helpers import spec

JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}


def test_java_bookies_run_the_prometheus_provider() -> None:
    assert builders.bookie_config(spec(**JAVA))["statsProviderClass"] == PROMETHEUS_PROVIDER


def test_the_switch_configuration_carries_it_and_validates_for_ours() -> None:
    for target, other in (("apache-bookkeeper", "bookie-fleet"), ("bookie-fleet", "apache-bookkeeper")):
        fields = JAVA if target == "apache-bookkeeper" else {}
        shared = builders.switch_bookie_config(spec(**fields), other)
        assert shared["statsProviderClass"] == PROMETHEUS_PROVIDER
        BookieConfig.model_validate(shared)
