"""The chart's monitoring objects: off by default; when enabled, a PodMonitor on the bookie pods with the
labels the BookKeeper dashboards select on, a ServiceMonitor on the operator, and a PrometheusRule whose
rules pass ``promtool check rules`` with the chart's values in place."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.metrics.alerts import render_chart, rule_file

MONITORING_KINDS = {"PodMonitor", "ServiceMonitor", "PrometheusRule"}


def test_monitoring_objects_are_off_by_default() -> None:
    assert not {d["kind"] for d in render_chart()} & MONITORING_KINDS


def test_pod_and_service_monitors() -> None:
    docs = {d["kind"]: d for d in render_chart("monitoring.podMonitor.enabled=true",
                                                "monitoring.serviceMonitor.enabled=true")}
    pods = docs["PodMonitor"]["spec"]
    assert pods["selector"]["matchLabels"] == {"app.kubernetes.io/name": "bookie",
                                               "app.kubernetes.io/managed-by": "bookie-operator"}
    ours, java = pods["podMetricsEndpoints"]
    assert (ours["port"], ours["path"]) == ("metrics", "/metrics")      # bookie-fleet's dedicated port
    assert (java["port"], java["path"]) == ("http", "/metrics")         # Apache BookKeeper's admin port ...
    keep = [r for r in java["relabelings"] if r.get("action") == "keep"]
    assert keep == [{"sourceLabels": ["__meta_kubernetes_pod_label_bookie_fleet_dev_implementation"],
                     "regex": "apache-bookkeeper", "action": "keep"}]  # ... of Java bookie pods only
    for endpoint in (ours, java):
        labels = {r["targetLabel"] for r in endpoint["relabelings"] if "targetLabel" in r}
        assert labels == {"job", "kubernetes_pod_name", "cluster"}
        assert "authorization" not in endpoint, "no credential unless a token Secret is named"
    service = docs["ServiceMonitor"]["spec"]
    assert service["endpoints"][0]["port"] == "metrics"


def test_the_pod_monitor_presents_the_metrics_token_to_our_bookies() -> None:
    docs = {d["kind"]: d for d in render_chart("monitoring.podMonitor.enabled=true",
                                                "monitoring.podMonitor.tokenSecret=bookie-metrics-token")}
    ours, java = docs["PodMonitor"]["spec"]["podMetricsEndpoints"]
    assert ours["authorization"] == {"type": "Bearer", "credentials": {"name": "bookie-metrics-token", "key": "token"}}
    assert "authorization" not in java, "Apache BookKeeper's admin port takes no token"


def test_the_pod_monitor_looks_where_the_operator_watches() -> None:
    def selector(*sets: str) -> dict[str, object]:
        docs = render_chart("monitoring.podMonitor.enabled=true", *sets)
        (monitor,) = [d for d in docs if d["kind"] == "PodMonitor"]
        return dict(monitor["spec"]["namespaceSelector"])

    assert selector() == {"matchNames": ["default"]}         # the release's namespace (helm template's: default)
    assert selector("watchNamespaces={team-a,team-b}") == {"matchNames": ["team-a", "team-b"]}
    assert selector("clusterWide=true") == {"any": True}


def test_alert_rules_pass_promtool(tmp_path: Path) -> None:
    path = rule_file(tmp_path / "rules.yaml")
    check = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "7 rules found" in check.stdout
    assert "1209600" in path.read_text(), "the age limit is written as a plain number"
