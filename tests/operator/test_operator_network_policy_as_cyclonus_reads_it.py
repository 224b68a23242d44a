"""The bookies' NetworkPolicy as cyclonus (``github.com/mattfenwick/cyclonus``, an implementation of
NetworkPolicy's semantics independent of ours and of any network plugin) reads it: its ``analyze --mode
query-traffic`` says, for each connection, whether the policies the builders produce allow it. Only the peers
the spec names reach the bookie port; a pod with the old client label does not; monitoring reaches the
metrics-only ports and never an admin API, for our bookies and Apache BookKeeper's."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

pytestmark = pytest.mark.bootstrap_part("netpolicy")


NS = "bookies"
OWNER = Owner("bk", NS, "uid-1")
OPERATOR_LABELS = {"app.kubernetes.io/name": "bookie-operator", "app.kubernetes.io/instance": "bkop"}
OPERATOR = builders.operator_peer("ops", OPERATOR_LABELS)
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}
BROKERS = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "pulsar"}},
           "podSelector": {"matchLabels": {"component": "broker"}}}
# The pods that try to connect, by name: (namespace, pod labels).
PODS: dict[str, tuple[str, dict[str, str]]] = {
    "BOOKIE": (NS, builders.selector_labels("bk")),
    "LABELLED": (NS, {"bookie-fleet.dev/client": "true"}),            # the label the policy once admitted
    "BROKER": ("pulsar", {"component": "broker"}),
    "BROKER_ELSEWHERE": ("tenant", {"component": "broker"}),         # the same labels in another namespace
    "OPERATOR": ("ops", OPERATOR_LABELS),
    "MONITORING": ("monitoring", {"app": "prometheus"}),
}


def cyclonus() -> Path:
    directory = os.environ.get("BOOKIE_FLEET_NETPOLICY_BIN", "")
    binary = Path(directory) / "cyclonus"
    assert directory and binary.is_file(), (
        f"cyclonus not found (BOOKIE_FLEET_NETPOLICY_BIN={directory!r}): build it with "
        "BOOKIE_FLEET_PARTS=netpolicy ./scripts/bootstrap and source the env file it prints")
    return binary


def _peer(pod: str, ip: str) -> dict[str, Any]:
    namespace, labels = PODS[pod]
    return {"IP": ip, "Internal": {"Namespace": namespace, "PodLabels": labels,
                                   "NamespaceLabels": {"kubernetes.io/metadata.name": namespace}}}


def allowed(tmp_path: Path, policy: dict[str, Any], queries: list[tuple[str, int]]) -> list[bool]:
    """cyclonus's answer for each (source pod, port of a bookie) connection over TCP."""
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
    traffic = [{"Source": _peer(source, f"10.0.1.{i + 1}"), "Destination": _peer("BOOKIE", "10.0.0.1"),
                "Protocol": "TCP", "ResolvedPort": port} for i, (source, port) in enumerate(queries)]
    (tmp_path / "traffic.json").write_text(json.dumps(traffic))
    result = subprocess.run([str(cyclonus()), "analyze", "--mode", "query-traffic",
                             "--policy-path", str(tmp_path / "policy.yaml"),
                             "--traffic-path", str(tmp_path / "traffic.json")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answers = re.findall(r"\|\s*IS ALLOWED\?\s*\|\s*(TRUE|FALSE)\s*\|", result.stdout)
    assert len(answers) == len(queries), result.stdout
    return [a == "TRUE" for a in answers]


def check(tmp_path: Path, policy: dict[str, Any] | None, expected: dict[tuple[str, int], bool]) -> None:
    assert policy is not None
    queries = list(expected)
    answers = dict(zip(queries, allowed(tmp_path, policy, queries), strict=True))
    wrong = {f"{src} -> {port}": answers[(src, port)] for (src, port) in queries
             if answers[(src, port)] != expected[(src, port)]}
    assert not wrong, f"cyclonus reads these differently (True: allowed): {wrong}"


def test_by_default_only_the_cluster_itself_reaches_the_bookie_port(tmp_path: Path) -> None:
    check(tmp_path, builders.network_policy(OWNER, spec(), [OPERATOR]), {
        ("BOOKIE", 3181): True, ("LABELLED", 3181): False, ("BROKER", 3181): False,
        ("OPERATOR", 8080): True, ("OPERATOR", 3181): False, ("LABELLED", 8080): False,
        ("MONITORING", 8000): True, ("MONITORING", 8080): False, ("MONITORING", 3181): False,
        ("LABELLED", 8000): False, ("LABELLED", 9999): False,
    })


def test_the_named_clients_and_no_one_else_reach_the_bookie_port_only(tmp_path: Path) -> None:
    named = spec(networkPolicy={"clients": [BROKERS]})
    check(tmp_path, builders.network_policy(OWNER, named, [OPERATOR]), {
        ("BROKER", 3181): True, ("BROKER", 8080): False, ("BROKER", 8000): False,
        ("BROKER_ELSEWHERE", 3181): False, ("LABELLED", 3181): False, ("BOOKIE", 3181): True,
    })


def test_monitoring_never_reaches_an_admin_api(tmp_path: Path) -> None:
    # Apache BookKeeper's bookie serves /metrics only on its admin API (8080, no credentials): monitoring is
    # kept off it and scrapes the inspector's metrics-only port; the inspector's own API (8081) stays closed.
    check(tmp_path, builders.network_policy(OWNER, spec(**JAVA), [OPERATOR]), {
        ("MONITORING", 8080): False, ("MONITORING", 8081): False, ("MONITORING", 8001): True,
        ("OPERATOR", 8080): True, ("OPERATOR", 8081): True,
    })
    # Our bookie with its metrics port turned off serves /metrics on the admin port: monitoring gets nothing.
    off = spec(config={"prometheusStatsHttpEnable": False})
    check(tmp_path, builders.network_policy(OWNER, off, [OPERATOR]), {
        ("MONITORING", 8080): False, ("MONITORING", 8000): False, ("OPERATOR", 8080): True,
    })
