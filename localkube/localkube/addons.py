"""Cluster add-ons every kubeadm or kind cluster has, as API objects: cluster DNS (CoreDNS).

``cluster_dns_objects(dns_ip, domain)`` builds the objects kubeadm installs for CoreDNS: a ServiceAccount, the
``system:coredns`` ClusterRole and binding, the ``coredns`` ConfigMap with the Corefile, the ``coredns``
Deployment and the ``kube-dns`` Service on the cluster DNS address. The Deployment's image is mapped by the
pod runner to the CoreDNS binary built with the control plane (``runner/images.py``). No ``forward`` plugin:
pods resolve cluster names only (nothing beyond this machine is reachable from a pod anyway).
"""

from __future__ import annotations

from typing import Any

from localkube.kapi import ApiError, KubeAPI

Obj = dict[str, Any]
NAMESPACE = "kube-system"
COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.13.2"
LABELS = {"k8s-app": "kube-dns"}


def corefile(domain: str) -> str:
    return f"""\
.:53 {{
    errors
    health {{
        lameduck 5s
    }}
    ready
    kubernetes {domain} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }}
    cache 30
    loop
    reload
    loadbalance
}}
"""


def cluster_dns_objects(dns_ip: str, domain: str) -> list[tuple[str, Obj]]:
    """(collection path, object) of every CoreDNS object, in creation order."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "system:coredns"},
                 "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                            "verbs": ["list", "watch"]},
                           {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                            "verbs": ["list", "watch"]}]}
    binding: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": "system:coredns"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "system:coredns"},
                    "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": NAMESPACE}]}
    probe_http = {"scheme": "HTTP"}
    deployment: Obj = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": NAMESPACE, "labels": LABELS},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {
                    "serviceAccountName": "coredns", "priorityClassName": "system-cluster-critical",
                    "dnsPolicy": "Default",
                    "containers": [{
                        "name": "coredns", "image": COREDNS_IMAGE, "args": ["-conf", "/etc/coredns/Corefile"],
                        "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                  {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"}],
                        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}],
                        "livenessProbe": {"httpGet": {"path": "/health", "port": 8080, **probe_http},
                                          "initialDelaySeconds": 60, "timeoutSeconds": 5, "failureThreshold": 5},
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, **probe_http},
                                           "periodSeconds": 1},
                    }],
                    "volumes": [{"name": "config-volume", "configMap": {
                        "name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}]}}],
                },
            },
        },
    }
    service: Obj = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kube-dns", "namespace": NAMESPACE,
                     "labels": {**LABELS, "kubernetes.io/name": "CoreDNS"}},
        "spec": {"selector": LABELS, "clusterIP": dns_ip,
                 "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                           {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53}]},
    }
    return [
        (f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "coredns", "namespace": NAMESPACE}}),
        (f"{rbac}/clusterroles", role),
        (f"{rbac}/clusterrolebindings", binding),
        (f"/api/v1/namespaces/{NAMESPACE}/configmaps",
         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns", "namespace": NAMESPACE},
          "data": {"Corefile": corefile(domain)}}),
        (f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", deployment),
        (f"/api/v1/namespaces/{NAMESPACE}/services", service),
    ]


def install(api: KubeAPI, objects: list[tuple[str, Obj]]) -> None:
    """Create the objects that do not exist yet (a restarted cluster keeps its own, edited or not)."""
    for collection, obj in objects:
        if api.get(f"{collection}/{obj['metadata']['name']}") is not None:
            continue
        try:
            api.create(collection, obj)
        except ApiError as exc:
            if exc.status != 409:
                raise


def dns_ready(api: KubeAPI) -> bool:
    """Whether the kube-dns Service has a ready endpoint (CoreDNS answers and its EndpointSlice says so)."""
    slices = api.request("GET", f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices",
                         params={"labelSelector": "kubernetes.io/service-name=kube-dns"}).get("items", [])
    return any((e.get("conditions") or {}).get("ready") for s in slices for e in s.get("endpoints") or [])
