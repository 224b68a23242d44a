"""The Pulsar end-to-end benchmark reads its figures from pulsar-perf's aggregated lines (as the 4.0.8 tools print
them) and takes the consume rate from the broker's delivery counter only over the time messages flowed; output
without the aggregated lines is an error naming what is missing, not a zero in the table."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.bench_runs import bench_module

PRODUCER = """INFO  PerformanceProducer - Started performance test thread 0
INFO  PerformanceProducer - Aggregated throughput stats --- 33255 records sent --- 3302.652 msg/s --- 25.802 Mbit/s
INFO  PerformanceProducer - Aggregated latency stats --- Latency: mean:  50.349 ms - med:  39.671 - 95pct: 152.885 \
- 99pct: 158.529 - 99.9pct: 172.138 - 99.99pct: 174.307 - 99.999pct: 185.011 - Max: 185.011
"""
CONSUMER = """INFO  PerformanceConsumer - Start receiving from 1 consumers per subscription on 1 topics
INFO  PerformanceConsumer - Aggregated throughput stats --- 1,233,255 records received --- 2070.103 msg/s --- 16.173 \
Mbit/s --- AckRate: 2070.1029136228776  msg/s --- ack failed 0 msg
INFO  PerformanceConsumer - Aggregated latency stats --- Latency: mean: 100.740 ms - med: 90 - 95pct: 194 - 99pct: \
311 - 99.9pct: 335 - 99.99pct: 378 - 99.999pct: 380 - Max: 380
"""


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_module("pulsar_e2e_bench")


def test_producer_figures_are_the_messages_acknowledged_and_the_latency_percentiles(bench: ModuleType) -> None:
    assert bench.parse_producer(PRODUCER) == (33255, (39.671, 158.529, 172.138))


def test_consumer_figures_are_the_messages_received_and_the_end_to_end_percentiles(bench: ModuleType) -> None:
    assert bench.parse_consumer(CONSUMER) == (1233255, (90.0, 311.0, 335.0))


@pytest.mark.parametrize(("parse", "text", "what"), [
    ("parse_producer", PRODUCER.splitlines()[0], "the producer printed no aggregated stats"),
    ("parse_consumer", CONSUMER.splitlines()[1], "the consumer printed no aggregated stats"),
])
def test_output_without_the_aggregated_lines_is_an_error_naming_the_tool(bench: ModuleType, parse: str, text: str,
                                                                        what: str) -> None:
    with pytest.raises(RuntimeError, match=what):
        getattr(bench, parse)(text)


def test_consume_rate_counts_only_the_time_messages_flowed(bench: ModuleType) -> None:
    # Idle before the producer starts, 1000 messages a second for 4 s, then idle again until the consumer stops.
    samples = [(0.0, 0), (0.5, 0), (1.0, 0), (1.5, 500), (2.0, 1000), (3.5, 2500), (5.5, 4500), (6.0, 4500),
               (9.0, 4500)]
    assert bench.delivery_rate(samples) == pytest.approx(1000.0)


def test_consume_rate_is_not_a_number_when_nothing_was_delivered(bench: ModuleType) -> None:
    rate = bench.delivery_rate([(0.0, 0), (0.5, 0)])
    assert rate != rate
