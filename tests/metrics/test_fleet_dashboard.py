"""The fleet dashboard (helm/bookie-operator/files/bookie-dashboard.json): every panel's query, evaluated by
the real Prometheus that scrapes the mixed fleet, returns data for our bookies; the read-only panel is
empty while every bookie is writable; the panels that need a scenario of their own are evaluated in it. The
chart ships the same JSON in its ConfigMap."""

from __future__ import annotations

import json
import time

from tests.metrics.alerts import render_chart
from tests.metrics.conftest import Monitored
from tests.metrics.fleet_dashboard import DASHBOARD, queries

EMPTY_WHILE_HEALTHY = {"Read-only bookies and why"}
# Panels with nothing to show on the mixed fleet (no garbage kept by a live ledger, no autorecovery), and the
# test that evaluates them where they have.
IN_THEIR_OWN_SCENARIO = {
    "Pinned garbage by ledger": "test_pinned_garbage_metric.py",
    "Under-replicated ledgers": "test_alerts.py::test_under_replicated_ledgers_after_a_bookie_is_killed",
}


def test_every_panel_answers_for_our_bookies(monitored: Monitored) -> None:
    ours = 'kind="python",cluster=~"monitored"'
    assert IN_THEIR_OWN_SCENARIO.keys() <= {title for title, _ in queries()}
    pending = {(title, expr.replace('cluster=~"$cluster"', ours)) for title, expr in queries()
               if title not in EMPTY_WHILE_HEALTHY | IN_THEIR_OWN_SCENARIO.keys()}
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
