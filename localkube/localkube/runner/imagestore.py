"""OCI images on this machine: found by name in OCI image layouts, unpacked once per manifest digest.

Nothing is pulled. The runner looks a pod's image up (registry prefix ignored: ``docker.io/``,
``docker.io/library/``, ``localhost/``, any ``host.domain[:port]/``; tag ``latest`` if none) among the refs
(``org.opencontainers.image.ref.name``, e.g. ``bookie-fleet/bookie:0.4.0``) of

1. the node's own layout ``<runner state>/images`` (images loaded into this cluster, like ``kind load``),
2. the layout named by ``$BOOKIE_FLEET_IMAGES`` (the images the bootstrap builds from our Dockerfiles).

An image's root filesystem is unpacked with ``umoci raw unpack`` the first time a container needs it and
shared read-only by every container of that image (each writable one gets an overlay over it). An image of the
bootstrap's layout is unpacked beside that layout, ``<layout>/../rootfs/<digest>``, once for every cluster and
every run on this machine that uses the layout, and removed with it when the bootstrap prunes old layouts: an
unpack costs 5 to 30 s of CPU (the audit image, Spark and its Python, the most), once per cluster before. An image
loaded into one cluster is unpacked into ``<runner state>/rootfs/<digest>``, and goes with the cluster.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
REF_ANNOTATION = "org.opencontainers.image.ref.name"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ImageError(RuntimeError):
    """An image that is there but cannot be used (a broken layout, a failed unpack)."""


@dataclass(frozen=True)
class Image:
    """An image of a layout: where it is, its manifest digest and its config (ENTRYPOINT, CMD, ...)."""

    name: str            # as the pod names it
    layout: Path
    ref: str
    digest: str          # of the manifest: sha256:...
    config: Obj

    @property
    def entrypoint(self) -> list[str]:
        return list(self.config.get("Entrypoint") or [])

    @property
    def cmd(self) -> list[str]:
        return list(self.config.get("Cmd") or [])

    @property
    def env(self) -> dict[str, str]:
        pairs = (e.partition("=") for e in self.config.get("Env") or [])
        return {k: v for k, _, v in pairs}

    @property
    def workdir(self) -> str:
        return str(self.config.get("WorkingDir") or "/")

    @property
    def user(self) -> str:
        return str(self.config.get("User") or "")


def normalise(image: str) -> str:
    """``docker.io/library/busybox`` -> ``busybox:latest``; ``reg.example:5000/a/b:1`` -> ``a/b:1``;
    digests are kept (``a/b@sha256:...``)."""
    name, at, digest = image.partition("@")
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if len(parts) > 1 and parts[0] == "library":
        parts = parts[1:]
    name = "/".join(parts)
    if at:
        return f"{name.rsplit(':', 1)[0] if ':' in parts[-1] else name}@{digest}"
    return name if ":" in parts[-1] else f"{name}:latest"


def _blob(layout: Path, digest: str) -> Obj:
    algorithm, _, hexdigest = digest.partition(":")
    with open(layout / "blobs" / algorithm / hexdigest) as f:
        data: Obj = json.load(f)
    return data


def _manifest_digest(layout: Path, descriptor: Obj) -> str:
    """The image manifest of an index entry (a multi-platform index picks this machine's platform)."""
    if "index" not in str(descriptor.get("mediaType", "")):
        return str(descriptor["digest"])
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    for entry in _blob(layout, descriptor["digest"]).get("manifests", []):
        if entry.get("platform", {}).get("architecture") in (arch, None):
            return _manifest_digest(layout, entry)
    raise ImageError(f"{layout}: index {descriptor['digest']} has no image for linux/{arch}")


class ImageStore:
    def __init__(self, state_root: Path, extra_layouts: list[Path] | None = None,
                 shared_cache: Path | None = None) -> None:
        """``shared_cache``: where the images of ``extra_layouts`` are unpacked (default: beside the node's own)."""
        self.local_layout = state_root / "images"
        self.cache = state_root / "rootfs"
        self.shared_cache = shared_cache or self.cache
        self.layouts = [self.local_layout, *(extra_layouts or [])]
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls, state_root: Path) -> ImageStore:
        built = os.environ.get("BOOKIE_FLEET_IMAGES")
        if not built:
            return cls(state_root)
        return cls(state_root, [Path(built)], shared_cache=Path(built).parent / "rootfs")

    def find(self, image: str) -> Image | None:
        """The image a pod names, or None when no layout has it."""
        if not image:
            return None
        wanted = normalise(image)
        name, _, digest = wanted.partition("@")
        for layout in self.layouts:
            try:
                index = json.loads((layout / "index.json").read_text())
            except (OSError, ValueError):
                continue
            for descriptor in index.get("manifests", []):
                ref = descriptor.get("annotations", {}).get(REF_ANNOTATION, "")
                if not ref or not (ref == wanted or (digest and ref.rsplit(":", 1)[0] == name
                                                     and descriptor.get("digest") == digest)):
                    continue
                try:
                    manifest_digest = _manifest_digest(layout, descriptor)
                    config = _blob(layout, _blob(layout, manifest_digest)["config"]["digest"])
                except (OSError, ValueError, KeyError) as exc:
                    raise ImageError(f"image {image} in {layout} is unreadable: {exc}") from exc
                return Image(image, layout, ref, manifest_digest, dict(config.get("config") or {}))
        return None

    def known(self) -> list[str]:
        refs = []
        for layout in self.layouts:
            try:
                index = json.loads((layout / "index.json").read_text())
            except (OSError, ValueError):
                continue
            refs += [d.get("annotations", {}).get(REF_ANNOTATION, "") for d in index.get("manifests", [])]
        return sorted(r for r in refs if r)

    def rootfs(self, image: Image) -> Path:
        """The image's unpacked root filesystem, unpacked now if no container used it before. Several
        runners (or threads, or clusters) asking at once unpack it once: a file lock per digest."""
        cache = self.cache if image.layout == self.local_layout else self.shared_cache
        target = cache / image.digest.replace(":", "-")
        rootfs = target / "rootfs"
        if (target / ".complete").exists():
            return rootfs
        cache.mkdir(parents=True, exist_ok=True)
        with self._lock, open(cache / f"{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (target / ".complete").exists():
                return rootfs
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            result = subprocess.run(["umoci", "raw", "unpack", "--image", f"{image.layout}:{image.ref}",
                                     str(rootfs)], capture_output=True, text=True)
            if result.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                raise ImageError(f"unpacking {image.name} ({image.layout}:{image.ref}) failed: "
                                 f"{result.stderr.strip()[-500:]}")
            (target / ".complete").touch()
        return rootfs
