"""Limit hits: every hit is counted for the metrics, but logged at most once per interval."""

from __future__ import annotations

import logging

import pytest
from bookie.limits import LimitHits


def test_counts_every_hit_and_logs_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    hits = LimitHits(interval_s=3600)
    with caplog.at_level(logging.WARNING, logger="bookie.limits"):
        for _ in range(1000):
            hits.hit("maxParkedLongPolls", "10000 in progress")
        hits.hit("maxConnections", "refused 127.0.0.1")
    assert hits.metrics() == {"limit_maxParkedLongPolls_hits": 1000.0, "limit_maxConnections_hits": 1.0}
    assert [r.getMessage() for r in caplog.records] == [
        "limit maxParkedLongPolls hit: 10000 in progress", "limit maxConnections hit: refused 127.0.0.1"]


def test_the_next_report_says_how_many_were_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    hits = LimitHits(interval_s=0.0)
    hits._logged_at["x"] = float("inf")  # inside the interval: not logged
    hits.hit("x", "a")
    hits.hit("x", "b")
    hits._logged_at["x"] = float("-inf")
    with caplog.at_level(logging.WARNING, logger="bookie.limits"):
        hits.hit("x", "c")
    assert caplog.records[-1].getMessage() == "limit x hit: c (2 more hits since the last report)"
