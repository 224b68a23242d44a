"""What the API server checks of a BookieCluster's status against the CRD's OpenAPI schema, for the fake API
server of the reconcile's unit tests: the keywords our generated schema uses (types, required, enum, pattern,
lengths, ranges, date-time, and list-map keys unique), each error naming its path as the API server does."""

from __future__ import annotations

import datetime as dt
import re
from functools import cache
from typing import Any

import yaml
from bookie_operator import crd

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,),
                                       "integer": (int,), "number": (int, float), "boolean": (bool,)}


@cache
def status_schema() -> dict[str, Any]:
    """From the checked-in CRD: what a cluster has installed (test_operator_crd_is_current keeps it current)."""
    doc = yaml.safe_load(crd.OUTPUTS[0].read_text())
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]


def status_errors(status: Any) -> list[str]:
    """The reasons the API server would refuse this status (empty: it accepts it)."""
    return errors(status, status_schema(), "status")


def errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    if schema.get("x-kubernetes-int-or-string") and isinstance(value, (int, str)):
        return []
    kind = schema.get("type")
    if kind and (not isinstance(value, _TYPES[kind]) or (kind != "boolean" and isinstance(value, bool))):
        return [f"{path}: Invalid value: must be of type {kind}"]
    found = _scalar_errors(value, schema, path)
    if isinstance(value, dict):
        found += [f"{path}.{key}: Required value" for key in schema.get("required", []) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                found += errors(value[key], sub, f"{path}.{key}")
    if isinstance(value, list):
        for i, item in enumerate(value):
            found += errors(item, schema.get("items", {}), f"{path}[{i}]")
        found += _list_map_errors(value, schema, path)
    return found


def _scalar_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    found = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: Unsupported value: {value!r}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            found.append(f"{path}: Invalid value: should match '{schema['pattern']}'")
        if len(value) > schema.get("maxLength", len(value)) or len(value) < schema.get("minLength", 0):
            found.append(f"{path}: Too long or too short: {len(value)} characters")
        if schema.get("format") == "date-time" and not _rfc3339(value):
            found.append(f"{path}: Invalid value: not an RFC 3339 date-time")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append(f"{path}: Invalid value: should be greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            found.append(f"{path}: Invalid value: should be less than or equal to {schema['maximum']}")
    return found


def _list_map_errors(value: list[Any], schema: dict[str, Any], path: str) -> list[str]:
    if schema.get("x-kubernetes-list-type") != "map":
        return []
    keys = schema["x-kubernetes-list-map-keys"]
    seen: set[tuple[Any, ...]] = set()
    found = []
    for i, item in enumerate(value):
        key = tuple(item.get(k) for k in keys) if isinstance(item, dict) else (item,)
        if key in seen:
            found.append(f"{path}[{i}]: Duplicate value: {dict(zip(keys, key, strict=True))}")
        seen.add(key)
    return found


def _rfc3339(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return "T" in text and (text.endswith("Z") or text[-6] in "+-")
