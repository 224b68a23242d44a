"""Volumes with a real capacity: an XFS filesystem in a sparse image file, loop-mounted at the volume directory.

A StorageClass of the ``localkube.io/local-path`` provisioner whose parameters name ``fsType: xfs`` (or
``csi.storage.k8s.io/fstype: xfs``) gets these instead of plain directories, so a claim holds what it asked
for and no more, and it can grow while mounted, as a cloud disk does:

- the *controller* part of an expansion grows the block device: the image file is extended and the loop
  device told its new size (``losetup --set-capacity``);
- the *node* part grows the filesystem on it, online, with ``xfs_growfs`` on the mount point: every
  process that has the volume mounted (a bookie in its container) sees the new free space at once.

XFS because it grows online with CAP_SYS_ADMIN alone; an online ext4 resize also needs CAP_SYS_RESOURCE,
which containers running this runner often lack. mkfs.xfs refuses filesystems under 300 MiB, so smaller
claims get 300 MiB, reported as the volume's capacity (cloud disks round up to their minimum the same way).
The image is sparse: a volume takes the machine's disk only for what is written to it.

The mount (``mount -o loop``, so the loop device is freed on unmount) is made when the volume is provisioned
and again whenever a pod needs it after the runner restarted; ``unmount_all`` (runner start, ``cluster down``)
and ``remove`` (a deleted volume) undo it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

FS_TYPE = "xfs"
FS_TYPE_PARAMETERS = ("csi.storage.k8s.io/fstype", "fsType")
IMAGE_SUFFIX = ".xfs"
MIN_BYTES = 300 * 2**20       # mkfs.xfs: "Filesystem must be larger than 300MB"
MiB = 2**20
TOOLS = ("mkfs.xfs", "xfs_growfs", "losetup", "mount", "umount")

_lock = threading.Lock()      # mounts and growth of any volume: one at a time


class FilesystemError(RuntimeError):
    """A command on a volume's image failed; the message has its output."""


def wants_filesystem(storage_class: dict[str, Any]) -> bool:
    params = storage_class.get("parameters") or {}
    return any(str(params.get(key, "")).lower() == FS_TYPE for key in FS_TYPE_PARAMETERS)


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def image_of(directory: Path) -> Path:
    return directory.with_name(directory.name + IMAGE_SUFFIX)


def has_image(directory: Path) -> bool:
    return image_of(directory).is_file()


def device_bytes(requested: float) -> int:
    """The image size for a request: whole MiB, at least the smallest filesystem mkfs.xfs makes."""
    return max(MIN_BYTES, -(-int(requested) // MiB) * MiB)


def _run(*cmd: str) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise FilesystemError(f"{' '.join(cmd)}: exit {result.returncode}: {(result.stderr or result.stdout).strip()}")
    return result.stdout


def create(directory: Path, requested: float) -> int:
    """Make the volume: a sparse image of ``device_bytes(requested)``, an XFS on it, mounted at ``directory``
    with a root any container user may write (as the directory volumes). Returns the device size."""
    size = device_bytes(requested)
    image = image_of(directory)
    with open(image, "wb") as f:
        f.truncate(size)
    _run("mkfs.xfs", "-q", "-f", str(image))
    directory.mkdir(parents=True, exist_ok=True)
    with _lock:
        _mount(directory)
    directory.chmod(0o777)
    return size


def _mount(directory: Path) -> None:
    if not os.path.ismount(directory):
        directory.mkdir(parents=True, exist_ok=True)
        _run("mount", "-o", "loop", str(image_of(directory)), str(directory))


def ensure_mounted(directory: Path) -> None:
    """Mount the volume's filesystem at its directory unless it is already (e.g. after a runner restart)."""
    with _lock:
        _mount(directory)


def filesystem_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_blocks * st.f_frsize


def grow_device(directory: Path, size: int) -> int:
    """The controller's part: extend the image to ``size`` bytes (never shrink it) and tell its loop device."""
    image = image_of(directory)
    with _lock:
        if image.stat().st_size < size:
            with open(image, "r+b") as f:
                f.truncate(size)
        for line in _run("losetup", "--noheadings", "--output", "NAME", "--associated", str(image)).splitlines():
            if line.strip():
                _run("losetup", "--set-capacity", line.strip())
        return image.stat().st_size


def grow_filesystem(directory: Path) -> int:
    """The node's part: grow the mounted filesystem to its device, online. Returns the filesystem's size."""
    with _lock:
        _mount(directory)
        _run("xfs_growfs", str(directory))
    return filesystem_bytes(directory)


def remove(directory: Path) -> None:
    """Unmount a deleted volume and delete its image (the caller removes the directory)."""
    with _lock:
        if os.path.ismount(directory):
            _run("umount", str(directory))
        image_of(directory).unlink(missing_ok=True)


def unmount_all(volumes: Path) -> list[Path]:
    """Unmount every volume filesystem under ``volumes`` (their images stay): the runner stops or starts."""
    done: list[Path] = []
    if not volumes.is_dir():
        return done
    with _lock:
        for image in sorted(volumes.glob(f"*{IMAGE_SUFFIX}")):
            directory = image.with_name(image.name.removesuffix(IMAGE_SUFFIX))
            if os.path.ismount(directory):
                subprocess.run(["umount", "-l", str(directory)], capture_output=True, check=False)
                done.append(directory)
    return done
