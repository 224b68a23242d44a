"""Pod volumes as directories on this machine, bind-mounted into containers by podexec.

emptyDir, configMap, secret, downwardAPI, projected (serviceAccountToken, configMap, secret, downwardAPI),
persistentVolumeClaim (the bound PV's hostPath/local path; a volume with a filesystem of its own is mounted
there first, see ``filesystems``) and hostPath. File contents are refreshed while
the pod runs, like the kubelet does (not for subPath mounts, like the kubelet).
"""

from __future__ import annotations

import base64
import contextlib
import os
import time
from pathlib import Path
from typing import Any

from localkube.kapi import KubeAPI
from localkube.runner import filesystems
from localkube.runner.envvars import expand, field_value, resource_value

Obj = dict[str, Any]
_MANIFEST = ".localkube-files"


class VolumeNotReady(RuntimeError):
    """The volume cannot be set up yet (claim not bound, ConfigMap missing): retried, pod stays Pending."""


class VolumeError(RuntimeError):
    """The volume can never be set up by this runner (unsupported type)."""


def _write_files(directory: Path, files: dict[str, tuple[bytes, int]]) -> None:
    """Make ``directory`` hold exactly ``files`` (relative path -> (content, mode)) among those it manages."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = directory / _MANIFEST
    old = set(manifest.read_text().split("\n")) - {""} if manifest.exists() else set()
    for rel, (content, mode) in files.items():
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            same = target.read_bytes() == content and (target.stat().st_mode & 0o777) == mode
        except OSError:
            same = False
        if same:
            continue
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(content)
        tmp.chmod(mode)
        tmp.replace(target)
    for rel in old - set(files):
        with contextlib.suppress(OSError):
            (directory / rel).unlink()
    manifest.write_text("\n".join(sorted(files)))


class VolumeManager:
    """Volumes of one pod under ``pod_dir/volumes``."""

    def __init__(self, api: KubeAPI, pod: Obj, pod_dir: Path, node_capacity: dict[str, str]) -> None:
        self.api = api
        self.pod = pod
        self.pod_dir = pod_dir
        self.node_capacity = node_capacity
        self.paths: dict[str, Path] = {}
        self._tokens: dict[str, tuple[bytes, float]] = {}   # key -> (token, refresh at)
        self._owned_files: list[tuple[str, int | None, int | None]] = []   # token files and their owner

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"]["namespace"])

    def _get(self, kind: str, name: str) -> Obj | None:
        plural = "configmaps" if kind == "configMap" else "secrets"
        return self.api.get(f"/api/v1/namespaces/{self.namespace}/{plural}/{name}")

    def _key_data(self, kind: str, source: Obj) -> dict[str, bytes] | None:
        obj = self._get(kind, source["name"])
        if obj is None:
            if source.get("optional"):
                return None
            raise VolumeNotReady(f'{kind} "{source["name"]}" not found')
        if kind == "configMap":
            data = {k: v.encode() for k, v in obj.get("data", {}).items()}
            data.update({k: base64.b64decode(v) for k, v in obj.get("binaryData", {}).items()})
            return data
        return {k: base64.b64decode(v) for k, v in obj.get("data", {}).items()}

    def _keyed_files(self, kind: str, source: Obj, default_mode: int) -> dict[str, tuple[bytes, int]]:
        data = self._key_data(kind, source)
        if data is None:
            return {}
        items = source.get("items")
        if not items:
            return {k: (v, default_mode) for k, v in data.items()}
        files = {}
        for item in items:
            if item["key"] not in data:
                if source.get("optional"):
                    continue
                raise VolumeNotReady(f'key "{item["key"]}" not found in {kind} "{source["name"]}"')
            files[item["path"]] = (data[item["key"]], int(item.get("mode", default_mode)))
        return files

    def _downward_files(self, source: Obj, default_mode: int) -> dict[str, tuple[bytes, int]]:
        files = {}
        for item in source.get("items", []):
            if "fieldRef" in item:
                value = field_value(self.pod, item["fieldRef"]["fieldPath"])
            else:
                ref = item["resourceFieldRef"]
                container = next(c for c in self.pod["spec"]["containers"] if c["name"] == ref.get("containerName"))
                value = resource_value(container, ref, self.node_capacity)
            files[item["path"]] = (value.encode(), int(item.get("mode", default_mode)))
        return files

    def _token_file(self, key: str, source: Obj) -> bytes:
        cached = self._tokens.get(key)
        if cached and time.time() < cached[1]:
            return cached[0]
        meta, spec = self.pod["metadata"], self.pod["spec"]
        account = spec.get("serviceAccountName") or "default"
        expiration = int(source.get("expirationSeconds", 3607))
        body: Obj = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                     "spec": {"expirationSeconds": expiration,
                              "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                                 "uid": meta["uid"]}}}
        if source.get("audience"):
            body["spec"]["audiences"] = [source["audience"]]
        review = self.api.create(f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token", body)
        token = str(review["status"]["token"]).encode()
        self._tokens[key] = (token, time.time() + 0.8 * expiration)
        return token

    def _volume_files(self, volume: Obj) -> dict[str, tuple[bytes, int]] | None:
        """Files of a content volume, or None if ``volume`` is not a content volume."""
        name = volume["name"]
        for kind in ("configMap", "secret"):
            if kind in volume:
                source = dict(volume[kind])
                if kind == "secret":
                    source["name"] = source.get("secretName", "")
                return self._keyed_files(kind, source, int(source.get("defaultMode", 0o644)))
        if "downwardAPI" in volume:
            return self._downward_files(volume["downwardAPI"], int(volume["downwardAPI"].get("defaultMode", 0o644)))
        if "projected" in volume:
            projected = volume["projected"]
            mode = int(projected.get("defaultMode", 0o644))
            files: dict[str, tuple[bytes, int]] = {}
            for i, source in enumerate(projected.get("sources", [])):
                if "serviceAccountToken" in source:
                    sat = source["serviceAccountToken"]
                    # As the kubelet: the token is 0600 and owned by the pod's user when every container runs
                    # as the same user (or the pod has an fsGroup), else the volume's mode (0644 by default).
                    fs_user, fs_group = self._token_owner()
                    token_mode = 0o600 if fs_user is not None or fs_group is not None else mode
                    if fs_user is None and fs_group is not None:
                        token_mode = 0o640
                    files[sat["path"]] = (self._token_file(f"{name}/{i}", sat), token_mode)
                    self._owned_files.append((sat["path"], fs_user, fs_group))
                elif "configMap" in source:
                    files.update(self._keyed_files("configMap", source["configMap"], mode))
                elif "secret" in source:
                    files.update(self._keyed_files("secret", source["secret"], mode))
                elif "downwardAPI" in source:
                    files.update(self._downward_files(source["downwardAPI"], mode))
                elif "clusterTrustBundle" in source or "podCertificate" in source:
                    raise VolumeError(f"volume {name}: projected source {sorted(source)} is not supported")
            return files
        return None

    def _token_owner(self) -> tuple[int | None, int | None]:
        """(fsUser, fsGroup) of the pod: the runAsUser all its containers share, if they do, and its fsGroup."""
        spec = self.pod["spec"]
        pod_sc = spec.get("securityContext") or {}
        users = {(c.get("securityContext") or {}).get("runAsUser", pod_sc.get("runAsUser"))
                 for c in [*spec.get("initContainers", []), *spec.get("containers", [])]}
        fs_user = next(iter(users)) if len(users) == 1 else None
        fs_group = pod_sc.get("fsGroup")
        return (int(fs_user) if fs_user is not None else None, int(fs_group) if fs_group is not None else None)

    def prepare(self) -> dict[str, Path]:
        """Set up every volume; raises VolumeNotReady (retry later) or VolumeError (never)."""
        root = self.pod_dir / "volumes"
        for volume in self.pod["spec"].get("volumes", []):
            name = volume["name"]
            if self._write_volume(root, volume):
                self.paths[name] = root / name
            elif "emptyDir" in volume:
                (root / name).mkdir(parents=True, exist_ok=True)
                (root / name).chmod(0o777)   # as the kubelet creates it: any container user may write
                self.paths[name] = root / name
            elif "hostPath" in volume:
                path = Path(volume["hostPath"]["path"])
                if volume["hostPath"].get("type") in ("DirectoryOrCreate", None, "") and not path.exists():
                    path.mkdir(parents=True, exist_ok=True)
                self.paths[name] = path
            elif "persistentVolumeClaim" in volume:
                self.paths[name] = self._claim_path(volume["persistentVolumeClaim"]["claimName"])
            elif "ephemeral" in volume:
                claim = f"{self.pod['metadata']['name']}-{name}"
                self.paths[name] = self._claim_path(claim)
            else:
                kinds = sorted(k for k in volume if k != "name")
                raise VolumeError(f"volume {name}: type {kinds} is not supported by localkube")
        return self.paths

    def refresh(self) -> None:
        root = self.pod_dir / "volumes"
        for volume in self.pod["spec"].get("volumes", []):
            with contextlib.suppress(VolumeNotReady):
                self._write_volume(root, volume)

    def _write_volume(self, root: Path, volume: Obj) -> bool:
        """Write a content volume's files (and give the token files their owner); False: not such a volume."""
        self._owned_files = []
        files = self._volume_files(volume)
        if files is None:
            return False
        _write_files(root / volume["name"], files)
        for rel, user, group in self._owned_files:
            os.chown(root / volume["name"] / rel, -1 if user is None else user, -1 if group is None else group)
        return True

    def _claim_path(self, claim: str) -> Path:
        pvc = self.api.get(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{claim}")
        if pvc is None:
            raise VolumeNotReady(f'persistentvolumeclaim "{claim}" not found')
        if pvc.get("status", {}).get("phase") != "Bound":
            raise VolumeNotReady(f'persistentvolumeclaim "{claim}" is not bound')
        pv = self.api.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
        if pv is None:
            raise VolumeNotReady(f'persistentvolume "{pvc["spec"]["volumeName"]}" not found')
        source = pv["spec"].get("hostPath") or pv["spec"].get("local")
        if not source:
            raise VolumeError(f"persistentvolume {pv['metadata']['name']} has no hostPath/local path")
        path = Path(source["path"])
        if filesystems.has_image(path):
            try:
                filesystems.ensure_mounted(path)   # a filesystem of its own (after a runner restart: again)
            except filesystems.FilesystemError as exc:
                raise VolumeNotReady(f"persistentvolume {pv['metadata']['name']}: {exc}") from None
        else:
            path.mkdir(parents=True, exist_ok=True)
        return path


def container_mounts(container: Obj, paths: dict[str, Path], env: dict[str, str]) -> list[Obj]:
    mounts = []
    for mount in container.get("volumeMounts", []):
        if mount["name"] not in paths:
            raise VolumeError(f"volumeMount {mount['name']!r} names no volume of the pod")
        source = paths[mount["name"]]
        sub = mount.get("subPath") or (expand(mount["subPathExpr"], env) if mount.get("subPathExpr") else "")
        if sub:
            source = source / sub
            if not source.exists():
                source.mkdir(parents=True, exist_ok=True)
        mounts.append({"source": str(source), "target": os.path.normpath(mount["mountPath"]),
                       "readonly": bool(mount.get("readOnly"))})
    # Parents before children, so a mount at /a/b lands inside a mount at /a.
    mounts.sort(key=lambda m: m["target"].count("/"))
    return mounts
