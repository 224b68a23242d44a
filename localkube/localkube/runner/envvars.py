"""Container environment as the kubelet builds it: service variables, envFrom, env with $(VAR) expansion,
and the downward API (fieldRef / resourceFieldRef)."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

Obj = dict[str, Any]

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class EnvError(RuntimeError):
    """A referenced ConfigMap/Secret/key is missing (and not optional): the container cannot start."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: defined names are replaced, ``$$`` gives ``$``, the rest stays."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REF.sub(sub, text)


def field_value(pod: Obj, path: str) -> str:
    meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if m:
        return str(meta.get(m.group(1), {}).get(m.group(2), ""))
    simple: dict[str, Any] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "metadata.labels": "\n".join(f'{k}="{v}"' for k, v in sorted(meta.get("labels", {}).items())),
        "metadata.annotations": "\n".join(f'{k}="{v}"' for k, v in sorted(meta.get("annotations", {}).items())),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.hostIPs": ",".join(ip["ip"] for ip in status.get("hostIPs", [])),
        "status.podIP": status.get("podIP"),
        "status.podIPs": ",".join(ip["ip"] for ip in status.get("podIPs", [])),
    }
    if path not in simple:
        raise EnvError(f"unsupported fieldRef {path!r}")
    return "" if simple[path] is None else str(simple[path])


_CPU = re.compile(r"^(\d+(?:\.\d+)?)(m?)$")
_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def quantity(value: str) -> float:
    text = str(value)
    for suffix, factor in _SUFFIX.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    if text.endswith("m"):
        return float(text[:-1]) / 1000
    return float(text)


def resource_value(container: Obj, ref: Obj, node_capacity: Mapping[str, str]) -> str:
    resource = ref["resource"]  # limits.cpu, requests.memory, ...
    kind, _, name = resource.partition(".")
    resources = container.get("resources", {})
    value = resources.get(kind, {}).get(name) or resources.get("limits", {}).get(name) or node_capacity.get(name, "0")
    divisor = quantity(ref.get("divisor", "1") or "1")
    return str(math.ceil(quantity(value) / divisor))


def container_env(pod: Obj, container: Obj, base: Mapping[str, str], *,
                  get_configmap: Callable[[str, str], Obj | None], get_secret: Callable[[str, str], Obj | None],
                  node_capacity: Mapping[str, str]) -> dict[str, str]:
    namespace = pod["metadata"]["namespace"]
    env: dict[str, str] = dict(base)

    def source_data(kind: str, name: str, optional: bool) -> dict[str, str] | None:
        obj = get_configmap(namespace, name) if kind == "configMap" else get_secret(namespace, name)
        if obj is None:
            if optional:
                return None
            raise EnvError(f'{kind} "{name}" not found')
        if kind == "configMap":
            return {**obj.get("data", {}), **{k: base64.b64decode(v).decode(errors="replace")
                                              for k, v in obj.get("binaryData", {}).items()}}
        return {k: base64.b64decode(v).decode(errors="replace") for k, v in obj.get("data", {}).items()}

    for source in container.get("envFrom", []):
        prefix = source.get("prefix", "")
        for kind, key in (("configMap", "configMapRef"), ("secret", "secretRef")):
            if key in source:
                data = source_data(kind, source[key]["name"], bool(source[key].get("optional")))
                for k, v in (data or {}).items():
                    env[prefix + k] = v
    for var in container.get("env", []):
        name = var["name"]
        if "value" in var:
            env[name] = expand(var["value"], env)
            continue
        value_from = var.get("valueFrom")
        if not value_from:
            env[name] = ""
            continue
        if "fieldRef" in value_from:
            env[name] = field_value(pod, value_from["fieldRef"]["fieldPath"])
        elif "resourceFieldRef" in value_from:
            env[name] = resource_value(container, value_from["resourceFieldRef"], node_capacity)
        else:
            for kind, key in (("configMap", "configMapKeyRef"), ("secret", "secretKeyRef")):
                if key in value_from:
                    ref = value_from[key]
                    data = source_data(kind, ref["name"], bool(ref.get("optional")))
                    if data is None:
                        break
                    if ref["key"] not in data:
                        if ref.get("optional"):
                            break
                        raise EnvError(f'key "{ref["key"]}" not found in {kind} "{ref["name"]}"')
                    env[name] = data[ref["key"]]
    return env
