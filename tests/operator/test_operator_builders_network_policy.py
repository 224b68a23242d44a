"""The bookies' NetworkPolicy, as the builders make it from the spec: the bookie port from the clients the spec
names (and the cluster's own bookies; no label admits a pod by itself), the admin port from the operator only,
the metrics-only ports from the monitoring namespace (never an admin API), nothing else in; ZooKeeper, DNS and
the other bookies out."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
OPERATOR = builders.operator_peer("ops", {"app.kubernetes.io/name": "bookie-operator",
                                          "app.kubernetes.io/instance": "bkop"})
BOOKIES = {"podSelector": {"matchLabels": builders.selector_labels("bk")}}
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}


def policy(**fields: Any) -> dict[str, Any]:
    obj = builders.network_policy(OWNER, spec(**fields), [OPERATOR])
    assert obj is not None
    return obj


def by_port(rules: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """(protocol, port) -> the peers admitted there (``[]``: any peer)."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rule in rules:
        assert rule["ports"], "a rule without ports would open every port"
        for port in rule["ports"]:
            out.setdefault((port["protocol"], port["port"]), []).extend(rule.get("from") or rule.get("to") or [])
    return out


def test_default_ingress_admits_each_port_only_its_own_peers() -> None:
    np = policy()
    assert np["spec"]["podSelector"] == {"matchLabels": builders.selector_labels("bk")}
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    ingress = by_port(np["spec"]["ingress"])
    assert set(ingress) == {("TCP", 3181), ("TCP", 8080), ("TCP", 8000)}   # nothing else in
    assert ingress[("TCP", 3181)] == [BOOKIES], "no client is admitted until the spec names it"
    assert ingress[("TCP", 8080)] == [{
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ops"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "bookie-operator",
                                        "app.kubernetes.io/instance": "bkop"}}}]
    assert ingress[("TCP", 8000)] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]
    ref = np["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], np["metadata"]["name"], np["metadata"]["namespace"]) == \
        ("BookieCluster", "uid-1", "bk", "ns")


def test_the_metrics_port_is_the_one_the_bookie_serves_it_on() -> None:
    sts = builders.statefulset(OWNER, spec(), 3)
    ports = {p["name"]: p["containerPort"] for p in sts["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports == {"bookie": 3181, "http": 8080, "metrics": 8000}
    conf = builders.bookie_config(spec())
    assert (conf["prometheusStatsHttpEnable"], conf["prometheusStatsHttpPort"]) == (True, 8000)
    # Apache BookKeeper's bookie serves /metrics only on its admin port while that runs, an admin API without
    # credentials: monitoring is not admitted there, only to the inspector's metrics port (8001). The
    # inspector serves its API (8081) to the operator and the audit.
    java = by_port(policy(**JAVA)["spec"]["ingress"])
    assert set(java) == {("TCP", 3181), ("TCP", 8080), ("TCP", 8081), ("TCP", 8001)}
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    assert java[("TCP", 8001)] == [monitoring]
    assert monitoring not in java[("TCP", 8080)] and monitoring not in java[("TCP", 8081)]
    assert java[("TCP", 8081)] == java[("TCP", 8080)] == [OPERATOR], "the admins alone"
    moved = by_port(policy(config={"prometheusStatsHttpPort": 9100})["spec"]["ingress"])
    assert ("TCP", 9100) in moved and ("TCP", 8000) not in moved
    # /metrics back on the admin port: monitoring gets no rule at all rather than the admin API.
    off = by_port(policy(config={"prometheusStatsHttpEnable": False})["spec"]["ingress"])
    assert set(off) == {("TCP", 3181), ("TCP", 8080)}
    assert off[("TCP", 8080)] == [OPERATOR]


def test_egress_is_zookeeper_dns_and_the_other_bookies() -> None:
    np = policy(metadataService={"zkServers": "zk-0.zk:2181,zk-1.zk:2181,zk-tls.zk:2281"})
    egress = by_port(np["spec"]["egress"])
    assert set(egress) == {("TCP", 2181), ("TCP", 2281), ("UDP", 53), ("TCP", 53), ("TCP", 3181)}
    assert egress[("TCP", 2181)] == [] and egress[("UDP", 53)] == []     # any address on those ports
    assert egress[("TCP", 3181)] == [BOOKIES]
    zk = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "zookeeper"}}}
    narrowed = by_port(policy(networkPolicy={"zookeeper": [zk]})["spec"]["egress"])
    assert narrowed[("TCP", 2181)] == [zk]


def test_peers_are_configurable_and_extra_rules_are_appended() -> None:
    team = {"namespaceSelector": {"matchLabels": {"team": "pulsar"}},
            "podSelector": {"matchExpressions": [{"key": "component", "operator": "In", "values": ["broker"]}]}}
    outside = {"ipBlock": {"cidr": "10.1.0.0/16", "except": ["10.1.2.0/24"]}}
    sidecar = {"ports": [{"protocol": "TCP", "port": 9999}]}
    np = policy(networkPolicy={"clients": [team], "operator": [outside], "monitoring": [],
                               "extraIngress": [sidecar], "extraEgress": [sidecar]})
    ingress = by_port(np["spec"]["ingress"])
    assert ingress[("TCP", 3181)] == [BOOKIES, {
        "podSelector": {"matchExpressions": [{"key": "component", "operator": "In", "values": ["broker"]}]},
        "namespaceSelector": {"matchLabels": {"team": "pulsar"}}}]
    assert ingress[("TCP", 8080)] == [outside]                      # replaces the operator's own pods
    assert ("TCP", 8000) not in ingress                             # no monitoring peers: no metrics rule
    assert ingress[("TCP", 9999)] == [] and by_port(np["spec"]["egress"])[("TCP", 9999)] == []


def test_without_an_operator_identity_the_admin_port_admits_nobody() -> None:
    """An operator outside the cluster has no pod to name: nothing is opened for it by guesswork."""
    np = builders.network_policy(OWNER, spec(), [])
    assert np is not None and ("TCP", 8080) not in by_port(np["spec"]["ingress"])


def test_disabled_it_is_not_built_and_the_reconcile_deletes_it() -> None:
    off = spec(networkPolicy={"enabled": False})
    assert builders.network_policy(OWNER, off, [OPERATOR]) is None
    assert "NetworkPolicy" not in {o["kind"] for o in builders.desired_objects(OWNER, off, 3)}
    assert builders.unwanted_objects(OWNER, off) == [("NetworkPolicy", "bk")]
    assert builders.unwanted_objects(OWNER, spec()) == []


@pytest.mark.parametrize(("peer", "message"), [
    ({}, "needs podSelector, namespaceSelector or ipBlock"),
    ({"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}, "ipBlock cannot be combined"),
])
def test_a_peer_must_say_who(peer: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec(networkPolicy={"clients": [peer]})


def test_a_scheduled_audit_admits_its_spark_pods_to_the_admin_port_only() -> None:
    audited = by_port(policy(audit={"schedule": "0 3 * * *"})["spec"]["ingress"])
    spark = {"podSelector": {"matchLabels": builders.audit_spark_selector("bk")}}
    assert audited[("TCP", 8080)] == [OPERATOR, spark]
    assert spark not in audited[("TCP", 3181)]
    assert spark not in by_port(policy()["spec"]["ingress"])[("TCP", 8080)]
