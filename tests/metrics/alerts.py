"""The chart's alert rules as ``helm template`` renders them, written as a Prometheus rule file."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "helm" / "bookie-operator"


def render_chart(*sets: str) -> list[dict[str, Any]]:
    args = ["helm", "template", "bk", str(CHART)]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def rule_file(path: Path, **alerts: str) -> Path:
    """The PrometheusRule's groups with ``monitoring.alerts.<key>=<value>`` overrides, as a rule file."""
    docs = render_chart("monitoring.prometheusRule.enabled=true",
                        *(f"monitoring.alerts.{k}={v}" for k, v in alerts.items()))
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    path.write_text(yaml.safe_dump(rule["spec"]))
    return path
