"""A pod's /etc/resolv.conf from dnsPolicy and dnsConfig, with the kubelet's rules (pure logic)."""

from __future__ import annotations

from typing import Any

from localkube.runner.dns import ClusterDNS, Resolv, resolv_conf

CLUSTER = ClusterDNS("10.96.0.10", "cluster.local")
NODE = Resolv.parse("# the node's\nnameserver 192.0.2.53\nsearch corp.example\noptions timeout:2\n")


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "team"}, "spec": spec}


def test_cluster_first_is_the_default() -> None:
    assert resolv_conf(_pod(), CLUSTER, NODE) == (
        "nameserver 10.96.0.10\n"
        "search team.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "options ndots:5\n")


def test_host_network_pods_get_the_nodes_resolver_unless_they_ask_for_cluster_dns() -> None:
    assert resolv_conf(_pod(hostNetwork=True), CLUSTER, NODE) == NODE.render()
    assert resolv_conf(_pod(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"), CLUSTER, NODE).startswith(
        "nameserver 10.96.0.10\n")
    assert resolv_conf(_pod(dnsPolicy="Default"), CLUSTER, NODE) == NODE.render()


def test_dns_config_adds_to_the_policy_and_none_takes_only_it() -> None:
    config = {"nameservers": ["192.0.2.1"], "searches": ["svc.cluster.local", "extra.example"],
              "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}
    assert resolv_conf(_pod(dnsConfig=config), CLUSTER, NODE) == (
        "nameserver 10.96.0.10\nnameserver 192.0.2.1\n"
        "search team.svc.cluster.local svc.cluster.local cluster.local corp.example extra.example\n"
        "options ndots:2 edns0\n")
    assert resolv_conf(_pod(dnsPolicy="None", dnsConfig=config), CLUSTER, NODE) == (
        "nameserver 192.0.2.1\nsearch svc.cluster.local extra.example\noptions ndots:2 edns0\n")


def test_at_most_three_nameservers() -> None:
    config = {"nameservers": ["192.0.2.1", "192.0.2.2", "192.0.2.3"]}
    assert resolv_conf(_pod(dnsConfig=config), CLUSTER, NODE).count("nameserver") == 3
