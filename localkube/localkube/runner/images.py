"""The explicit table of images that still run as host commands, each mapped to a local command.

Images built from this repository's Dockerfiles (``bookie-fleet/*``) are not here: they run as containers
from the OCI layout of ``$BOOKIE_FLEET_IMAGES`` (see ``imagestore``). For the others a container's image
picks an entry of ``IMAGES`` by repository name (any
registry prefix, tag or digest), and the entry says what ENTRYPOINT, CMD and PATH stand for, as the
image's Dockerfile would. ``command`` and ``args`` of the container override them as in Kubernetes.
An image with no entry leaves its pod Pending with an ``ErrImagePull`` waiting state and a Warning Event.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


@dataclass(frozen=True)
class ImageEntry:
    """What an image would run: ``entrypoint`` + ``cmd``, command names looked up in ``path``."""

    description: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()
    path: tuple[str, ...] = (str(VENV_BIN), *SYSTEM_PATH)
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"


IMAGES: dict[str, ImageEntry] = {
    # Small general-purpose images for test pods and probes.
    "python": ImageEntry("this machine's Python (the project's virtualenv)", entrypoint=("python3",)),
    "busybox": ImageEntry("this machine's shell and coreutils", entrypoint=(), cmd=("sh",)),
    "registry.k8s.io/pause": ImageEntry("a process that sleeps forever", entrypoint=("sleep", "infinity")),
    # Cluster DNS (the add-on LocalCluster installs): CoreDNS built with the control plane.
    "registry.k8s.io/coredns/coredns": ImageEntry(
        "CoreDNS built with the local Kubernetes binaries", entrypoint=("/coredns",),
        path=tuple(filter(None, (os.environ.get("BOOKIE_FLEET_KUBE_BIN"), *SYSTEM_PATH)))),
}


def repository(image: str) -> str:
    """``docker.io/library/python:3.11@sha256:..`` -> ``docker.io/library/python``."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return name


def lookup(image: str) -> ImageEntry | None:
    repo = repository(image)
    for key in sorted(IMAGES, key=len, reverse=True):
        if repo == key or repo.endswith("/" + key) or repo == f"docker.io/library/{key}":
            return IMAGES[key]
    return None


class CommandError(RuntimeError):
    """The container's command cannot be resolved on this machine."""


def resolve_argv(entry: ImageEntry, command: list[str] | None, args: list[str] | None) -> list[str]:
    """Kubernetes' rule: command replaces ENTRYPOINT (and drops CMD), args replace CMD."""
    if command:
        argv = [*command, *(args or [])]
    else:
        argv = [*entry.entrypoint, *(args if args is not None and args else entry.cmd)]
    if not argv:
        raise CommandError("the container has no command: the image has no ENTRYPOINT/CMD and the pod gives none")
    argv[0] = resolve_executable(argv[0], entry.path)
    return argv


def resolve_executable(name: str, path: tuple[str, ...]) -> str:
    if "/" in name:
        if os.access(name, os.X_OK):
            return name
        # An absolute path inside the image (/usr/local/bin/python3): the same name on this machine.
        name = Path(name).name
    found = shutil.which(name, path=os.pathsep.join(path))
    if found is None:
        raise CommandError(f"executable {name!r} not found in the image's PATH {':'.join(path)}")
    return found


def known_images() -> str:
    return ", ".join(sorted(IMAGES))
