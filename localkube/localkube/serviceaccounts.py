"""Kubeconfigs for ServiceAccounts (the operator's), on any cluster reachable with an admin ``KubeAPI``."""

from __future__ import annotations

from pathlib import Path

from localkube.kapi import KubeAPI
from localkube.kubeconfig import write_kubeconfig


def service_account_kubeconfig(api: KubeAPI, ca_pem: bytes, namespace: str, name: str, path: Path, *,
                               cluster_role: str | None = None, expiration_seconds: int = 365 * 86400) -> Path:
    """Create ``namespace`` and ServiceAccount ``name`` if missing, optionally bind it cluster-wide to
    ``cluster_role``, mint a token (TokenRequest) and write a kubeconfig using it to ``path``."""
    if api.get(f"/api/v1/namespaces/{namespace}") is None:
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    if api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}") is None:
        api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                   {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    if cluster_role:
        binding = f"localkube:{namespace}:{name}:{cluster_role}"
        if api.get(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{binding}") is None:
            api.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": binding},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
                "subjects": [{"kind": "ServiceAccount", "namespace": namespace, "name": name}],
            })
    review = api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": expiration_seconds},
    })
    return write_kubeconfig(path, server=api.server, ca_pem=ca_pem, user=f"system:serviceaccount:{namespace}:{name}",
                            token=str(review["status"]["token"]), namespace=namespace,
                            context=f"{namespace}-{name}")
