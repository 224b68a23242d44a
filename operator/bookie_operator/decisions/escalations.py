"""BookieCluster fields that would give whoever writes the BookieCluster more than its bookies need: the operator
runs the pods with its own rights, so a field that names another ServiceAccount, a node's file system, extra or
privileged containers, or a Secret of someone else would hand those to the spec's writer (the bookie's image is
the writer's too, and reads whatever the pod mounts). Each is refused unless the operator's settings allow its
kind (``--allow-escalation``, the chart's ``allowEscalations``).

A Secret is the cluster's own when only whoever may write that Secret made it so: it has an ownerReference to
this BookieCluster (its uid: the operator's own ``<cluster>-admin-token`` and the like), or it carries the label
``bookie-fleet.dev/cluster: <cluster>`` (set by whoever made it, or by cert-manager from a Certificate's
``secretTemplate.labels``). Never by its name: the spec's writer chooses the cluster's name, so a cluster named
``postgres`` would own ``postgres-password``. The observe step reads each referenced Secret's metadata only (never
its data) and hands ``owns``'s verdicts here.

A referenced Secret that does not exist yet is awaited (``awaited``): nothing that references it is applied, since
whoever creates it first decides whose it is, and the kubelet would mount a Secret created after the StatefulSet
before the next tick judged it. The Secrets the operator makes itself (``made_by_operator``, created with an
ownerReference to the cluster later in the same tick) are not awaited. A Secret that was the cluster's own and
is no longer (its label removed, or replaced by someone else's) is refused like any foreign one. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bookie_operator import builders, models
from bookie_operator.builders import CLUSTER_LABEL
from bookie_operator.decisions.tls import CA, CERT, KEY
from bookie_operator.models import BookieClusterSpec

SERVICE_ACCOUNT = "serviceAccountName"
HOST_PATH = "hostPath"
SIDECARS = "sidecars"
PRIVILEGED = "privileged"
FOREIGN_SECRETS = "foreignSecrets"
KINDS = (SERVICE_ACCOUNT, HOST_PATH, SIDECARS, PRIVILEGED, FOREIGN_SECRETS)
ENV = "BOOKIE_OPERATOR_ALLOW_ESCALATIONS"   # how __main__ hands --allow-escalation to the handlers
# Secret name -> True: the cluster's own, False: someone else's, None: it does not exist. A name left out is
# someone else's: what was not read is not trusted.
Ownership = Mapping[str, bool | None]


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


def refused(cluster: str, spec: BookieClusterSpec, allowed: frozenset[str], secrets: Ownership) -> list[str]:
    """One message per field the settings do not allow, naming the field and the allowance."""
    return [f"{e.field}: {e.why}; refused unless the operator allows {e.kind} (--allow-escalation {e.kind})"
            for e in escalations(cluster, spec, secrets) if e.kind not in allowed]


def awaited(cluster: str, spec: BookieClusterSpec, secrets: Ownership) -> list[str]:
    """One message per referenced Secret that was looked up and does not exist yet, naming the field; the
    operator's own Secrets are left out (it creates them, owned by the cluster, before anything references them)."""
    made = made_by_operator(cluster, spec)
    keys = wanted_keys(spec)
    return [f"{where}: Secret {name} does not exist yet{_create_with(keys.get(where, ()))}"
            for where, name in secret_references(spec)
            if name in secrets and secrets[name] is None and name not in made]


def _create_with(keys: tuple[str, ...]) -> str:
    if not keys:
        return ""
    return f"; create it with the key{'s' if len(keys) > 1 else ''} {', '.join(keys)}"


def wanted_keys(spec: BookieClusterSpec) -> dict[str, tuple[str, ...]]:
    """field -> the keys the Secret it names must hold, for the fields whose keys the bookies or the operator
    read (a volume mounts whatever its Secret holds: none are named for it)."""
    wanted: dict[str, tuple[str, ...]] = {}
    if spec.admin_api.token_secret_name:
        wanted["spec.adminApi.tokenSecretName"] = (builders.ADMIN_TOKEN_KEY,)
    if spec.admin_api.metrics_token_secret_name:
        wanted["spec.adminApi.metricsTokenSecretName"] = (builders.ADMIN_TOKEN_KEY,)
    if spec.metadata_service.digest_secret is not None:
        wanted["spec.metadataService.digestSecret.secretName"] = (spec.metadata_service.digest_secret.key,)
    if spec.tls is not None:
        for purpose in spec.tls.checked_secrets():
            wanted[f"spec.tls.{purpose}.secretName"] = (CERT, KEY, CA)
    for i, var in enumerate(spec.env):
        key = _name(var.value_from, "secretKeyRef", "key")
        if key is not None:
            wanted[f"spec.env[{i}].valueFrom.secretKeyRef.name"] = (key,)
    return wanted


def made_by_operator(cluster: str, spec: BookieClusterSpec) -> frozenset[str]:
    """The Secrets the operator creates for the cluster when they are missing, each with an ownerReference to it:
    the admin token unless the spec names its own, the audit's token and the bookies' token hashes."""
    made = {builders.audit_token_secret_name(cluster), builders.token_hashes_secret_name(cluster)}
    if not spec.admin_api.token_secret_name:
        made.add(builders.admin_token_secret_name(cluster))
    return frozenset(made)


def owns(cluster: str, uid: str, metadata: Mapping[str, Any]) -> bool:
    """Whether a Secret's metadata makes it this cluster's own: an ownerReference to this very BookieCluster (its
    uid, so not a deleted namesake's) or the cluster's label. Its name says nothing."""
    labels = metadata.get("labels") or {}
    if isinstance(labels, dict) and labels.get(CLUSTER_LABEL) == cluster:
        return True
    return bool(uid) and any(
        isinstance(ref, dict) and ref.get("kind") == models.KIND and ref.get("name") == cluster
        and ref.get("uid") == uid and str(ref.get("apiVersion", "")).partition("/")[0] == models.GROUP
        for ref in metadata.get("ownerReferences") or [])


def escalations(cluster: str, spec: BookieClusterSpec, secrets: Ownership) -> list[Escalation]:
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
    found += [Escalation(FOREIGN_SECRETS, where, f"Secret {name} is not the cluster's own (neither owned by "
                         f"{models.KIND} {cluster} nor labelled {CLUSTER_LABEL}={cluster})")
              for where, name in secret_references(spec) if secrets.get(name, False) is False]
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
