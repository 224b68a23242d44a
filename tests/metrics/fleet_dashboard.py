"""The fleet dashboard's queries (helm/bookie-operator/files/bookie-dashboard.json), with the dashboard's
``$cluster`` variable replaced by a test's own selector."""

from __future__ import annotations

import json
from typing import Any

from tests.metrics.alerts import CHART

DASHBOARD = CHART / "files" / "bookie-dashboard.json"
CLUSTER_VARIABLE = 'cluster=~"$cluster"'


def queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel."""
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p["targets"]]


def panel_queries(title: str, selector: str) -> list[str]:
    """The queries of one panel, ``selector`` in place of the cluster variable."""
    found = [expr.replace(CLUSTER_VARIABLE, selector) for t, expr in queries() if t == title]
    assert found, f"no panel {title!r} in {DASHBOARD}"
    return found
