"""BookieCluster fields that would give whoever writes the BookieCluster more than its bookies need: the operator
runs the pods with its own rights, so a field that names another ServiceAccount, a node's file system, extra or
privileged containers, or a Secret of someone else would hand those to the spec's writer (the bookie's image is
the writer's too, and reads whatever the pod mounts). Each is refused unless the operator's settings allow its
kind (``--allow-escalation``, the chart's ``allowEscalations``).

A Secret is the cluster's own when its name is the cluster's or starts with ``<cluster>-`` (the operator's own
``<cluster>-admin-token`` and the like; name Secrets made for a cluster so). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bookie_operator.models import BookieClusterSpec

SERVICE_ACCOUNT = "serviceAccountName"
HOST_PATH = "hostPath"
SIDECARS = "sidecars"
PRIVILEGED = "privileged"
FOREIGN_SECRETS = "foreignSecrets"
KINDS = (SERVICE_ACCOUNT, HOST_PATH, SIDECARS, PRIVILEGED, FOREIGN_SECRETS)
ENV = "BOOKIE_OPERATOR_ALLOW_ESCALATIONS"   # how __main__ hands --allow-escalation to the handlers


@dataclass(frozen=True)
class Escalation:
    kind: str    # one of KINDS: the allowance that admits it
    field: str   # the spec field, as the user wrote it
    why: str


def parse_allowed(text: str) -> frozenset[str]:
    """``a,b`` -> {a, b}; an unknown kind is refused with the known ones."""
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise ValueError(f"unknown escalation {', '.join(unknown)}: the kinds are {', '.join(KINDS)}")
    return kinds


def refused(cluster: str, spec: BookieClusterSpec, allowed: frozenset[str]) -> list[str]:
    """One message per field the settings do not allow, naming the field and the allowance."""
    return [f"{e.field}: {e.why}; refused unless the operator allows {e.kind} (--allow-escalation {e.kind})"
            for e in escalations(cluster, spec) if e.kind not in allowed]


def escalations(cluster: str, spec: BookieClusterSpec) -> list[Escalation]:
    found = []
    if spec.service_account_name:
        found.append(Escalation(SERVICE_ACCOUNT, "spec.serviceAccountName",
                                "the bookie pods would run with that ServiceAccount's rights"))
    for i, volume in enumerate(spec.extra_volumes):
        if (volume.model_extra or {}).get("hostPath") is not None:
            found.append(Escalation(HOST_PATH, f"spec.extraVolumes[{i}].hostPath",
                                    "a node's file system in the bookie pods"))
    for i, sidecar in enumerate(spec.sidecars):
        found.append(Escalation(SIDECARS, f"spec.sidecars[{i}]", "a container of your choosing in the bookie pods"))
        found += _privileges(f"spec.sidecars[{i}].securityContext", (sidecar.model_extra or {}).get("securityContext"))
    found += [Escalation(FOREIGN_SECRETS, where, f"Secret {name} is not the cluster's own (named {cluster} or "
                         f"{cluster}-*)") for where, name in secret_references(spec) if not _own(cluster, name)]
    return found


def _privileges(where: str, context: Any) -> list[Escalation]:
    """What a container's securityContext asks beyond the restricted profile."""
    if not isinstance(context, dict):
        return []
    found = []
    if context.get("privileged"):
        found.append(Escalation(PRIVILEGED, f"{where}.privileged", "a privileged container (the node's devices)"))
    if (context.get("capabilities") or {}).get("add"):
        found.append(Escalation(PRIVILEGED, f"{where}.capabilities.add", "added capabilities"))
    if context.get("allowPrivilegeEscalation"):
        found.append(Escalation(PRIVILEGED, f"{where}.allowPrivilegeEscalation", "setuid binaries may gain root"))
    if context.get("runAsUser") == 0:
        found.append(Escalation(PRIVILEGED, f"{where}.runAsUser", "a container running as root"))
    return found


def _own(cluster: str, secret: str) -> bool:
    return secret == cluster or secret.startswith(cluster + "-")


def secret_references(spec: BookieClusterSpec) -> Iterator[tuple[str, str]]:
    """(field, Secret name) of every Secret the spec makes the pods or the operator read. Image pull Secrets are
    not among them: the kubelet uses those, the pod never sees them."""
    if spec.admin_api.token_secret_name:
        yield "spec.adminApi.tokenSecretName", spec.admin_api.token_secret_name
    if spec.admin_api.metrics_token_secret_name:
        yield "spec.adminApi.metricsTokenSecretName", spec.admin_api.metrics_token_secret_name
    if spec.metadata_service.digest_secret is not None:
        yield "spec.metadataService.digestSecret.secretName", spec.metadata_service.digest_secret.secret_name
    if spec.tls is not None:
        for purpose, name in spec.tls.checked_secrets().items():
            yield f"spec.tls.{purpose}.secretName", name
    for i, var in enumerate(spec.env):
        yield from _env_secret(f"spec.env[{i}]", var.value_from)
    for i, volume in enumerate(spec.extra_volumes):
        yield from _volume_secrets(f"spec.extraVolumes[{i}]", volume.model_extra or {})
    for i, sidecar in enumerate(spec.sidecars):
        extra = sidecar.model_extra or {}
        for k, var in enumerate(extra.get("env") or []):
            if isinstance(var, dict):
                yield from _env_secret(f"spec.sidecars[{i}].env[{k}]", var.get("valueFrom"))
        for k, source in enumerate(extra.get("envFrom") or []):
            secret = _name(source, "secretRef", "name")
            if secret is not None:
                yield f"spec.sidecars[{i}].envFrom[{k}].secretRef.name", secret


def _env_secret(where: str, value_from: Any) -> Iterator[tuple[str, str]]:
    name = _name(value_from, "secretKeyRef", "name")
    if name is not None:
        yield f"{where}.valueFrom.secretKeyRef.name", name


def _volume_secrets(where: str, volume: dict[str, Any]) -> Iterator[tuple[str, str]]:
    name = _name(volume, "secret", "secretName")
    if name is not None:
        yield f"{where}.secret.secretName", name
    projected = volume.get("projected")
    sources = projected.get("sources") if isinstance(projected, dict) else None
    for j, source in enumerate(sources or []):
        name = _name(source, "secret", "name")
        if name is not None:
            yield f"{where}.projected.sources[{j}].secret.name", name


def _name(obj: Any, key: str, name_key: str) -> str | None:
    """obj[key][name_key] when both are there (free-form Kubernetes objects)."""
    inner = obj.get(key) if isinstance(obj, dict) else None
    name = inner.get(name_key) if isinstance(inner, dict) else None
    return str(name) if name is not None else None
