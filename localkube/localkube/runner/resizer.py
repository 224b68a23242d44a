"""Volume expansion as a cluster with a CSI driver does it, written to the same API objects.

The API server's own ``PersistentVolumeClaimResize`` admission (on by default) lets a claim grow only when it
is bound and its StorageClass has ``allowVolumeExpansion: true``; kube-controller-manager's expand
controller then leaves a CSI-style volume to "an external controller". This module is that controller and
the kubelet's part of it, for the volumes of ``filesystems`` (an XFS per claim):

controller (external-resizer), when a claim asks for more than its ``status.capacity`` and its PV has less:
  1. claim status: condition ``Resizing``, ``allocatedResources.storage`` = the request,
     ``allocatedResourceStatuses.storage`` = ``ControllerResizeInProgress``; Event ``Resizing``;
  2. the block device grows (``filesystems.grow_device``);
  3. the PV: ``spec.capacity.storage`` = the new size, annotation
     ``volume.alpha.kubernetes.io/pre-resize-capacity`` = the old one;
  4. claim status: condition ``FileSystemResizePending`` and ``NodeResizePending``; Event
     ``FileSystemResizeRequired``. On failure: condition ``ControllerResizeError``, Event ``VolumeResizeFailed``.
kubelet, when the PV's capacity exceeds the claim's ``status.capacity`` and a pod of this node uses the claim:
  5. ``NodeResizeInProgress``, then the filesystem grows online (``filesystems.grow_filesystem``);
  6. claim status: ``capacity.storage`` = the PV's, the storage key gone from ``allocatedResourceStatuses``,
     the resize conditions removed; Event ``FileSystemResizeSuccessful`` on the pod. On failure: condition
     ``NodeResizeError``, Event ``FileSystemResizeFailed``.
A claim no running pod uses stays ``FileSystemResizePending`` until one starts, as on a real node.

Every write to a claim's status is a merge patch carrying the resourceVersion it was computed from, so a
concurrent change makes it fail (409) and the next pass starts from the new object.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from localkube.kapi import ApiError, KubeAPI
from localkube.runner import filesystems
from localkube.runner.envvars import quantity

Obj = dict[str, Any]
log = logging.getLogger("localkube.runner.resizer")

RESIZE_CONDITIONS = ("Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError")
PRE_RESIZE_ANNOTATION = "volume.alpha.kubernetes.io/pre-resize-capacity"
PENDING_MESSAGE = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
COMPONENT = "external-resizer localkube.io/local-path"

# (kind: "Warning"/"Normal", object, reason, message, component) -> posts an Event
EventSink = Callable[[Obj, str, str, str, str], None]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def mebibytes(size: int) -> str:
    return f"{size // filesystems.MiB}Mi"


def _storage(obj: Mapping[str, Any] | None) -> float:
    value = (obj or {}).get("storage")
    return quantity(value) if value else 0.0


def _conditions(pvc: Obj, *add: Obj) -> list[Obj]:
    kept = [c for c in (pvc.get("status") or {}).get("conditions") or [] if c.get("type") not in RESIZE_CONDITIONS]
    return kept + list(add)


def _condition(type_: str, message: str = "") -> Obj:
    cond: Obj = {"type": type_, "status": "True", "lastTransitionTime": _now()}
    if message:
        cond["message"] = message
    return cond


class VolumeResizer:
    def __init__(self, api: KubeAPI, provisioner: str, volumes: Path, emit: EventSink, node_name: str) -> None:
        self.api = api
        self.provisioner = provisioner
        self.volumes = volumes
        self.emit = emit
        self.node_name = node_name

    def _directory(self, pv: Obj) -> Path | None:
        """The volume directory of a PV of ours with a filesystem image, else None (nothing to expand)."""
        meta = pv["metadata"]
        if (meta.get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") != self.provisioner:
            return None
        path = Path((pv["spec"].get("hostPath") or {}).get("path", ""))
        if not path.is_relative_to(self.volumes) or not filesystems.has_image(path):
            return None
        return path

    def sync(self, users: Mapping[tuple[str, str], Obj], claims: list[Obj], volumes: list[Obj]) -> None:
        """One pass over every claim (``claims``, with the ``volumes`` they may be bound to, as the runner's caches
        hold them); ``users`` maps (namespace, claim) to a pod of this node using it."""
        pvs = {pv["metadata"]["name"]: pv for pv in volumes}
        for pvc in claims:
            pv = pvs.get(pvc["spec"].get("volumeName") or "")
            if pv is None or (pv["spec"].get("claimRef") or {}).get("uid") != pvc["metadata"]["uid"]:
                continue
            directory = self._directory(pv)
            if directory is None or (pvc.get("status") or {}).get("phase") != "Bound":
                continue
            requested = _storage(pvc["spec"].get("resources", {}).get("requests"))
            have = _storage(pvc["status"].get("capacity"))
            pv_size = _storage(pv["spec"].get("capacity"))
            try:
                if requested > have and requested > pv_size:
                    self.expand_controller(pvc, pv, directory)
                elif pv_size > have:
                    user = users.get((pvc["metadata"]["namespace"], pvc["metadata"]["name"]))
                    if user is not None:
                        self.expand_node(pvc, pv, directory, user)
            except ApiError as exc:   # a conflict: someone changed the claim; the next pass sees it
                log.info("resize of %s/%s: %s", pvc["metadata"]["namespace"], pvc["metadata"]["name"], exc)

    def _patch_status(self, pvc: Obj, status: Obj) -> Obj:
        meta = pvc["metadata"]
        updated = self.api.merge_patch(
            f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/{meta['name']}/status",
            {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status})
        updated.setdefault("kind", "PersistentVolumeClaim")
        updated.setdefault("apiVersion", "v1")
        return updated

    def expand_controller(self, pvc: Obj, pv: Obj, directory: Path) -> None:
        request = pvc["spec"]["resources"]["requests"]["storage"]
        pv_name = pv["metadata"]["name"]
        pvc = self._patch_status(pvc, {
            "conditions": _conditions(pvc, _condition("Resizing")),
            "allocatedResources": {"storage": request},
            "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"},
        })
        self.emit(pvc, "Normal", "Resizing", f"External resizer is resizing volume {pv_name}", COMPONENT)
        try:
            size = filesystems.grow_device(directory, filesystems.device_bytes(quantity(request)))
        except (OSError, filesystems.FilesystemError) as exc:
            self._patch_status(pvc, {"conditions": _conditions(pvc, _condition("ControllerResizeError", str(exc)))})
            self.emit(pvc, "Warning", "VolumeResizeFailed", f"resize volume {pv_name} failed: {exc}", COMPONENT)
            return
        old = pv["spec"]["capacity"]["storage"]
        self.api.merge_patch(f"/api/v1/persistentvolumes/{pv_name}", {
            "metadata": {"annotations": {PRE_RESIZE_ANNOTATION: old}},
            "spec": {"capacity": {"storage": mebibytes(size)}}})
        self._patch_status(pvc, {
            "conditions": _conditions(pvc, _condition("FileSystemResizePending", PENDING_MESSAGE)),
            "allocatedResourceStatuses": {"storage": "NodeResizePending"},
        })
        self.emit(pvc, "Normal", "FileSystemResizeRequired", "Require file system resize of volume on node",
                  COMPONENT)
        log.info("volume %s: device grown from %s to %s; file system resize pending", pv_name, old, mebibytes(size))

    def expand_node(self, pvc: Obj, pv: Obj, directory: Path, pod: Obj) -> None:
        pv_name = pv["metadata"]["name"]
        statuses = dict((pvc.get("status") or {}).get("allocatedResourceStatuses") or {})
        pvc = self._patch_status(pvc, {"allocatedResourceStatuses": {**statuses,
                                                                     "storage": "NodeResizeInProgress"}})
        try:
            fs_size = filesystems.grow_filesystem(directory)
        except (OSError, filesystems.FilesystemError) as exc:
            self._patch_status(pvc, {"conditions": _conditions(pvc, _condition("NodeResizeError", str(exc)))})
            self.emit(pod, "Warning", "FileSystemResizeFailed",
                      f"MountVolume.NodeExpandVolume failed for volume \"{pv_name}\": {exc}", "kubelet")
            return
        statuses.pop("storage", None)
        self._patch_status(pvc, {
            "capacity": {"storage": pv["spec"]["capacity"]["storage"]},
            "allocatedResourceStatuses": statuses or None,
            "conditions": _conditions(pvc) or None,
        })
        self.emit(pod, "Normal", "FileSystemResizeSuccessful",
                  f"MountVolume.NodeExpandVolume succeeded for volume \"{pv_name}\" {self.node_name}", "kubelet")
        log.info("volume %s: file system grown online to %d bytes", pv_name, fs_size)


def claim_users(pods: list[Obj]) -> dict[tuple[str, str], Obj]:
    """(namespace, claim) -> a pod using it, for the pods this node runs (ephemeral volumes' claims included)."""
    users: dict[tuple[str, str], Obj] = {}
    for pod in pods:
        meta = pod["metadata"]
        for volume in pod["spec"].get("volumes") or []:
            if "persistentVolumeClaim" in volume:
                users[(meta["namespace"], volume["persistentVolumeClaim"]["claimName"])] = pod
            elif "ephemeral" in volume:
                users[(meta["namespace"], f"{meta['name']}-{volume['name']}")] = pod
    return users
