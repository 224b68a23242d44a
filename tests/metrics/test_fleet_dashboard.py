"""The fleet dashboard (helm/bookie-operator/files/bookie-dashboard.json): every panel's query, evaluated by
the real Prometheus that scrapes the mixed fleet, returns data for our bookies; the read-only panel is
empty while every bookie is writable. The chart ships the same JSON in its ConfigMap."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.metrics.alerts import CHART, render_chart
from tests.metrics.conftest import Monitored

DASHBOARD = CHART / "files" / "bookie-dashboard.json"
EMPTY_WHILE_HEALTHY = {"Read-only bookies and why"}


def queries() -> list[tuple[str, str]]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p["targets"]]


def test_every_panel_answers_for_our_bookies(monitored: Monitored) -> None:
    ours = 'kind="python",cluster=~"monitored"'
    pending = {(title, expr.replace('cluster=~"$cluster"', ours)) for title, expr in queries()
               if title not in EMPTY_WHILE_HEALTHY}
    deadline = time.monotonic() + 240
    while pending and time.monotonic() < deadline:
        pending = {(title, expr) for title, expr in pending if not monitored.prometheus.query(expr)}
        time.sleep(3)
    assert not pending, f"panels without data: {sorted(pending)}"
    for title, expr in queries():
        if title in EMPTY_WHILE_HEALTHY:
            assert not monitored.prometheus.query(expr.replace('cluster=~"$cluster"', ours)), title
    assert monitored.prometheus.query("count(bookie_SERVER_STATUS) by (cluster)"), "the cluster variable's values"


def test_chart_ships_the_dashboard() -> None:
    (cm,) = [d for d in render_chart("monitoring.grafanaDashboard.enabled=true") if d["kind"] == "ConfigMap"
             and d["metadata"]["name"].endswith("-dashboard")]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["bookie-fleet.json"]) == json.loads(DASHBOARD.read_text())
