"""A PodMonitor as Prometheus reads it once prometheus-operator has turned it into scrape jobs: one job per
``podMetricsEndpoints`` entry over the pods of the monitor's namespaces, kept when their labels match the selector
and the container port has the endpoint's name, with the operator's ``namespace``/``pod``/``container`` target
labels, then the monitor's own relabelings; an ``authorization`` credential read from its Secret. Prometheus
applies all of that itself. Only the discovery is done here: Debian's Prometheus is built without Kubernetes
service discovery, so the pods are listed from the API server and given as static targets carrying the
``__meta_kubernetes_pod_*`` labels Prometheus' ``pod`` role would give them (one target per declared container
port). Only what the chart's PodMonitor uses is translated, and anything else is refused by name, so a chart change
this cannot follow fails loudly instead of scraping less."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

ENDPOINT_KEYS = {"port", "path", "interval", "scheme", "authorization", "relabelings"}
RELABEL_KEYS = {"sourceLabels": "source_labels", "targetLabel": "target_label", "regex": "regex",
                "replacement": "replacement", "action": "action", "separator": "separator"}


def _label(name: str) -> str:
    """A Kubernetes label name as the pod role's meta label suffix."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _namespaces(monitor: dict[str, Any]) -> list[str] | None:
    selector = monitor["spec"].get("namespaceSelector") or {}
    if selector.get("any"):
        return None
    return list(selector.get("matchNames") or [monitor["metadata"]["namespace"]])


def _relabel(rule: dict[str, Any]) -> dict[str, Any]:
    unknown = set(rule) - set(RELABEL_KEYS)
    if unknown:
        raise ValueError(f"relabeling keys not translated: {sorted(unknown)}")
    return {RELABEL_KEYS[k]: v for k, v in rule.items()}


def pod_targets(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Static targets as Prometheus' ``pod`` role discovers them: one per declared container port of each running
    pod with an IP, with its ``__meta_kubernetes_*`` labels."""
    targets = []
    for pod in pods:
        ip = pod.get("status", {}).get("podIP")
        if not ip or pod.get("status", {}).get("phase") != "Running":
            continue
        meta = pod["metadata"]
        labels = {"__meta_kubernetes_namespace": meta["namespace"], "__meta_kubernetes_pod_name": meta["name"],
                  "__meta_kubernetes_pod_ip": ip}
        for key, value in (meta.get("labels") or {}).items():
            labels[f"__meta_kubernetes_pod_label_{_label(key)}"] = value
            labels[f"__meta_kubernetes_pod_labelpresent_{_label(key)}"] = "true"
        for container in pod["spec"]["containers"]:
            for port in container.get("ports", []):
                targets.append({"targets": [f"{ip}:{port['containerPort']}"], "labels": {
                    **labels, "__meta_kubernetes_pod_container_name": container["name"],
                    "__meta_kubernetes_pod_container_port_name": port.get("name", ""),
                    "__meta_kubernetes_pod_container_port_number": str(port["containerPort"])}})
    return targets


def scrape_jobs(monitor: dict[str, Any], pods: Callable[[str], list[dict[str, Any]]],
                secret_value: Callable[[str, str, str], str]) -> list[dict[str, Any]]:
    """The scrape jobs of ``monitor``; ``pods(namespace)`` lists a namespace's pods from the API server,
    ``secret_value(namespace, name, key)`` reads a credential's Secret."""
    meta, spec = monitor["metadata"], monitor["spec"]
    selector = spec["selector"]
    if set(selector) - {"matchLabels"}:
        raise ValueError(f"selector keys not translated: {sorted(set(selector) - {'matchLabels'})}")
    names = _namespaces(monitor)
    if names is None:
        raise ValueError("namespaceSelector any: not translated (name the namespaces)")
    targets = pod_targets([p for ns in names for p in pods(ns)])
    jobs = []
    for index, endpoint in enumerate(spec["podMetricsEndpoints"]):
        if set(endpoint) - ENDPOINT_KEYS:
            raise ValueError(f"podMetricsEndpoints keys not translated: {sorted(set(endpoint) - ENDPOINT_KEYS)}")
        relabel: list[dict[str, Any]] = [
            {"source_labels": [f"__meta_kubernetes_pod_label_{_label(k)}",
                               f"__meta_kubernetes_pod_labelpresent_{_label(k)}"],
             "regex": f"({re.escape(v)});true", "action": "keep"} for k, v in selector["matchLabels"].items()]
        relabel += [
            {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": endpoint["port"],
             "action": "keep"},
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
            {"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"},
            *(_relabel(r) for r in endpoint.get("relabelings", [])),
        ]
        job: dict[str, Any] = {
            "job_name": f"podMonitor/{meta['namespace']}/{meta['name']}/{index}",
            "static_configs": targets, "metrics_path": endpoint.get("path", "/metrics"),
            "scheme": endpoint.get("scheme", "http"), "relabel_configs": relabel}
        if "interval" in endpoint:
            job["scrape_interval"] = endpoint["interval"]
        if auth := endpoint.get("authorization"):
            ref = auth["credentials"]
            job["authorization"] = {"type": auth.get("type", "Bearer"),
                                    "credentials": secret_value(meta["namespace"], ref["name"], ref["key"])}
        jobs.append(job)
    return jobs
