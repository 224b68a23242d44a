"""Adopting a running bookie StatefulSet (apache/pulsar-helm-chart's shape): what was found, whether it can be taken
over without losing a disk or a bookie id, what approving would change, and the phase that comes next.

The checks here are the ones that must hold before anything changes: a take-over that renamed a claim, moved a
directory or changed a bookie id would start bookies whose cookies no longer match (or on empty disks).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import yaml

from bookie_operator import models
from bookie_operator.models import BOOKIE_PORT, AdoptedVolume, AdoptionFound, AdoptionPhase, AdoptionStatus

Obj = dict[str, Any]

# Phases from which the StatefulSet is built with the adopted names and paths.
KEPT: tuple[AdoptionPhase, ...] = ("Replacing", "Rolling", "Adopted")
# How Pulsar's image (PULSAR_PREFIX_<key>, or a plain <key>) and Apache BookKeeper's (BK_<key>) take their
# configuration from environment variables.
PREFIXES = ("PULSAR_PREFIX_", "BK_")


@dataclass(frozen=True)
class Refusal:
    reason: str       # CamelCase, the condition's and the Event's reason
    message: str


def kept_layout(state: AdoptionStatus | None) -> AdoptionFound | None:
    """The adopted names and paths, once the take-over began (before it, nothing of them is used)."""
    return state.found if state is not None and state.phase in KEPT and state.found is not None else None


def next_phase(previous: AdoptionPhase | None, approve: bool, refused: bool, live_is_ours: bool | None,
               rolled: bool) -> AdoptionPhase:
    """``live_is_ours``: the StatefulSet of that name is the cluster's own (None: there is none); ``rolled``: every
    pod runs the operator's template and is ready."""
    if previous == "Replacing":
        return "Rolling" if live_is_ours is not False else "Replacing"
    if previous == "Rolling":
        return "Adopted" if rolled and live_is_ours else "Rolling"
    if previous == "Adopted":
        return "Adopted"
    if refused:
        return "Refused"
    return "Replacing" if approve else "AwaitingApproval"


# ------------------------------------------------------------------------------------- what is there
def config_key(variable: str) -> str | None:
    """The bookie configuration key an environment variable sets, if any: upper-case names are the images' own
    (BOOKIE_MEM, PULSAR_GC...)."""
    for prefix in PREFIXES:
        if variable.startswith(prefix):
            return variable[len(prefix):] or None
    return variable if variable[:1].islower() else None


def configmap_names(sts: Obj) -> list[str]:
    """The ConfigMaps the pod template's containers take variables from (envFrom)."""
    names = []
    for c in _containers(sts):
        for source in c.get("envFrom") or []:
            ref = source.get("configMapRef") or {}
            if ref.get("name") and ref["name"] not in names:
                names.append(ref["name"])
    return names


def container_config(container: Obj, configmaps: dict[str, dict[str, str] | None]) -> dict[str, str]:
    """The bookie configuration a container is given: its envFrom ConfigMaps, then its env values (later ones win,
    as in the kubelet; a prefixed key wins over a plain one, as the images apply them last)."""
    variables: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        name = (source.get("configMapRef") or {}).get("name")
        prefix = source.get("prefix") or ""
        for k, v in ((configmaps.get(name) if name else None) or {}).items():
            variables[prefix + k] = str(v)
    for var in container.get("env") or []:
        if "value" in var:
            variables[var["name"]] = str(var["value"])
    config: dict[str, str] = {}
    for variable in sorted(variables, key=lambda v: v.startswith(PREFIXES)):
        key = config_key(variable)
        if key is not None:
            config[key] = variables[variable]
    return config


def _containers(sts: Obj) -> list[Obj]:
    return list(((sts.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [])


def read_statefulset(cluster: str, namespace: str, spec: models.BookieClusterSpec, sts: Obj | None,
                     configmaps: dict[str, dict[str, str] | None]) -> AdoptionFound | Refusal:
    """What the StatefulSet of ``spec.adopt`` is, or why it cannot be taken over (nothing is changed then)."""
    assert spec.adopt is not None
    name = spec.adopt.stateful_set_name
    if name != cluster:
        return Refusal("AdoptionNameMismatch", f"spec.adopt.statefulSetName {name}: must be the BookieCluster's own "
                       f"name ({cluster}), as its pods and their bookie ids are named after it; create the "
                       f"BookieCluster as {name}")
    if sts is None:
        return Refusal("AdoptionNotFound", f"StatefulSet {name}: not found in namespace {namespace}")
    if spec.implementation != "apache-bookkeeper":
        return Refusal("AdoptionNeedsApacheBookKeeper", f"StatefulSet {name}: adopted bookies keep running Apache "
                       "BookKeeper's bookie: set spec.implementation to apache-bookkeeper (switch implementations "
                       "once the fleet is adopted)")
    found = [(c, container_config(c, configmaps)) for c in _containers(sts)]
    bookies = [(c, conf) for c, conf in found if "journalDirectories" in conf and "ledgerDirectories" in conf]
    if len(bookies) != 1:
        return Refusal("NotBookies", f"StatefulSet {name}: its pods are not bookies: "
                       + ("no container is" if not bookies else "more than one container is")
                       + " given a bookie configuration (journalDirectories and ledgerDirectories as BK_*, "
                       "PULSAR_PREFIX_* or plain keys of its env or envFrom ConfigMaps "
                       f"{', '.join(configmap_names(sts)) or '(none)'})")
    container, conf = bookies[0]
    sts_spec = sts.get("spec") or {}
    replicas = int(sts_spec.get("replicas", 1))
    problem = (_identity_problem(name, container, conf) or _metadata_problem(name, spec, conf)
               or _shape_problem(name, spec, sts_spec, replicas, conf))
    if problem is not None:
        return problem
    volumes = _volumes(name, sts_spec, container, conf)
    if isinstance(volumes, Refusal):
        return volumes
    service = str(sts_spec["serviceName"])
    kept = dict(sorted(conf.items())[:models.ADOPTION_CONFIG_MAX_KEYS])
    return AdoptionFound(
        stateful_set_name=name, uid=str(sts["metadata"].get("uid", "")), service_name=service, replicas=replicas,
        image=str(container.get("image", "")),
        pod_labels=dict(((sts_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}),
        journals=volumes[0], ledgers=volumes[1], config=kept,
        bookie_id=f"{name}-0.{service}.{namespace}.svc.{spec.cluster_domain}:{BOOKIE_PORT}")


def _identity_problem(name: str, container: Obj, conf: dict[str, str]) -> Refusal | None:
    """The bookie ids must be the pods' stable host names, which the operator's pods give them again."""
    if conf.get("useHostNameAsBookieID", "false").strip().lower() != "true":
        return Refusal("IpBookieIds", f"StatefulSet {name}: its bookie ids are the pods' IP addresses "
                       "(useHostNameAsBookieID is not true), which change when a pod restarts: the restarted "
                       "bookie's cookie would no longer match and its ledgers would need re-replication. Only a "
                       "fleet with host-name bookie ids can be adopted in place; move this one with a second "
                       "BookieCluster and decommissions instead")
    for key in ("bookieId", "advertisedAddress"):
        if conf.get(key):
            return Refusal("FixedBookieIds", f"StatefulSet {name}: {key}={conf[key]} sets its bookie ids; the "
                           "operator adopts host-name bookie ids only (useHostNameAsBookieID=true)")
    if conf.get("useShortHostName", "false").strip().lower() == "true":
        return Refusal("FixedBookieIds", f"StatefulSet {name}: useShortHostName=true gives bookie ids without "
                       "the Service's domain; the operator keeps <pod>.<service>.<namespace>.svc ids only")
    port = conf.get("bookiePort", str(BOOKIE_PORT)).strip()
    ports = {p.get("containerPort") for p in container.get("ports") or []}
    if port != str(BOOKIE_PORT) or (ports and BOOKIE_PORT not in ports):
        return Refusal("FixedBookieIds", f"StatefulSet {name}: its bookies listen on port {port}, part of their "
                       f"ids; the operator's bookies use {BOOKIE_PORT}")
    return None


def _metadata_problem(name: str, spec: models.BookieClusterSpec, conf: dict[str, str]) -> Refusal | None:
    """The bookies must already be in the cluster the spec names: adopting must not move them to another."""
    ms = spec.metadata_service
    uri = conf.get("metadataServiceUri", "").strip()
    zk = conf.get("zkServers", "").strip()
    root = conf.get("zkLedgersRootPath", "/ledgers").strip()
    if uri:
        same = uri == ms.uri
        theirs = uri
    elif zk:
        same = zk == ms.zk_servers and root == ms.ledgers_root
        theirs = f"{zk}{root}"
    else:
        return Refusal("NotBookies", f"StatefulSet {name}: its bookie configuration names no metadata service "
                       "(metadataServiceUri or zkServers)")
    if same:
        return None
    return Refusal("OtherMetadataService", f"StatefulSet {name}: its bookies use the metadata service {theirs}, "
                   f"spec.metadataService says {ms.uri}: set spec.metadataService to theirs")


def _shape_problem(name: str, spec: models.BookieClusterSpec, sts_spec: Obj, replicas: int,
                   conf: dict[str, str]) -> Refusal | None:
    if not sts_spec.get("serviceName"):
        return Refusal("FixedBookieIds", f"StatefulSet {name}: has no serviceName, so its pods have no stable host "
                       "names")
    if replicas != spec.replicas:
        return Refusal("ReplicasDiffer", f"StatefulSet {name}: runs {replicas} bookies, spec.replicas is "
                       f"{spec.replicas}: set spec.replicas to {replicas} (scale once adopted)")
    index = conf.get("indexDirectories", "").strip()
    if index and index != conf["ledgerDirectories"].strip():
        return Refusal("UnsupportedLayout", f"StatefulSet {name}: indexDirectories={index} differs from "
                       "ledgerDirectories; the operator keeps the index on the ledger volumes")
    return None


def _volumes(name: str, sts_spec: Obj, container: Obj, conf: dict[str, str]) \
        -> tuple[list[AdoptedVolume], list[AdoptedVolume]] | Refusal:
    """Each journal and ledger directory on a claim template mounted exactly there (the operator mounts the claim
    at the directory, so the cookie's directories stay)."""
    templates = {(t.get("metadata") or {}).get("name"): t for t in sts_spec.get("volumeClaimTemplates") or []}
    mounts = {str(m.get("mountPath", "")).rstrip("/"): m for m in container.get("volumeMounts") or []}
    kinds: list[list[AdoptedVolume]] = [[], []]
    for slot, key in enumerate(("journalDirectories", "ledgerDirectories")):
        for directory in (d.strip().rstrip("/") for d in conf[key].split(",") if d.strip()):
            mount = mounts.get(directory) or {}
            template = None if mount.get("subPath") else templates.get(mount.get("name"))
            if template is None:
                return Refusal("UnsupportedLayout", f"StatefulSet {name}: {key} {directory} is not a "
                               "volumeClaimTemplate mounted at that path; the operator keeps such directories only")
            claim = template.get("spec") or {}
            kinds[slot].append(AdoptedVolume(
                claim=str(mount["name"]), path=directory,
                size=str(((claim.get("resources") or {}).get("requests") or {}).get("storage", "")),
                storage_class_name=claim.get("storageClassName")))
    return kinds[0], kinds[1]


# ---------------------------------------------------------------------------------------- the diff
# Fields the API server fills in with these values when they are not given: dropped from both sides, so the diff
# shows what the operator changes, not how each side was written.
_POD_DEFAULTS: dict[str, Any] = {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                                 "schedulerName": "default-scheduler", "securityContext": {}}
_CONTAINER_DEFAULTS: dict[str, Any] = {"terminationMessagePath": "/dev/termination-log",
                                       "terminationMessagePolicy": "File"}
_PROBE_DEFAULTS: dict[str, Any] = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                   "failureThreshold": 3}


def _without_defaults(template: Obj) -> Obj:
    t = yaml.safe_load(yaml.safe_dump(template))      # a deep copy of plain data
    meta = t.get("metadata") or {}
    meta.pop("creationTimestamp", None)
    pod = t.get("spec") or {}
    for k, v in _POD_DEFAULTS.items():
        if pod.get(k) == v:
            pod.pop(k)
    for c in pod.get("containers") or []:
        for k, v in _CONTAINER_DEFAULTS.items():
            if c.get(k) == v:
                c.pop(k)
        for port in c.get("ports") or []:
            if port.get("protocol") == "TCP":
                port.pop("protocol")
        for probe in (c.get(p) for p in ("readinessProbe", "livenessProbe", "startupProbe")):
            if isinstance(probe, dict):
                for k, v in _PROBE_DEFAULTS.items():
                    if probe.get(k) == v:
                        probe.pop(k)
                if (probe.get("httpGet") or {}).get("scheme") == "HTTP":
                    probe["httpGet"].pop("scheme")
    return t


def _config_lines(config: dict[str, Any]) -> list[str]:
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}\n" for k, v in sorted(config.items())]


def diff(name: str, live_template: Obj, desired_template: Obj, live_config: dict[str, str],
         desired_config: dict[str, Any], limit: int = models.ADOPTION_DIFF_MAX) -> str:
    """What approving changes, as ``kubectl diff`` shows it (a unified diff of the pod template), then the bookie
    configuration key by key; cut at a line boundary to ``limit`` characters, saying how much was left out."""
    def dump(obj: Obj) -> list[str]:
        return yaml.safe_dump(_without_defaults(obj), sort_keys=True, default_flow_style=False).splitlines(True)
    lines = list(difflib.unified_diff(dump(live_template), dump(desired_template),
                                      f"live/StatefulSet/{name}/spec/template",
                                      f"desired/StatefulSet/{name}/spec/template"))
    lines += difflib.unified_diff(_config_lines(live_config), _config_lines(desired_config),
                                  f"live/{name}/bookie-configuration", f"desired/{name}/bk_server.conf")
    return bounded(lines, limit)


def summary(diff_text: str) -> str:
    """``+A -B lines`` of a diff (its file headers not counted), for an Event, which holds 1 KiB."""
    lines = [line for line in diff_text.splitlines() if not line.startswith(("+++ ", "--- "))]
    return f"+{sum(1 for x in lines if x.startswith('+'))} -{sum(1 for x in lines if x.startswith('-'))} lines"


def bounded(lines: list[str], limit: int) -> str:
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        marker = f"... {len(lines) - i} more lines (the diff is cut at {limit} characters)\n"
        if size + len(line) + len(marker) > limit:
            out.append(marker)
            break
        out.append(line)
        size += len(line)
    return "".join(out)


def rolled(sts: Obj | None, pods: list[Obj], replicas: int) -> bool:
    """Every pod of the operator's StatefulSet is on its update revision and ready."""
    revision = ((sts or {}).get("status") or {}).get("updateRevision")
    if revision is None or len(pods) != replicas:
        return False
    return all((p["metadata"].get("labels") or {}).get("controller-revision-hash") == revision and _ready(p)
               for p in pods)


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])
