"""Where the control-plane binaries are: ``$BOOKIE_FLEET_KUBE_BIN`` (written by scripts/bootstrap.d/kube.sh) or PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

BIN_ENV = "BOOKIE_FLEET_KUBE_BIN"
REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-proxy", "coredns")


class MissingBinaryError(RuntimeError):
    """A control-plane binary is not installed; the message says how to get it."""


def find_binary(name: str, bin_dir: Path | None = None) -> Path:
    directory = bin_dir or (Path(os.environ[BIN_ENV]) if os.environ.get(BIN_ENV) else None)
    if directory is not None:
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    where = f"${BIN_ENV}={directory}" if directory else f"${BIN_ENV} is not set and PATH"
    raise MissingBinaryError(
        f"'{name}' not found ({where} has no such executable). Build the local Kubernetes binaries with "
        f"./scripts/bootstrap (needs a Go toolchain >= 1.24 and the Go module proxy; it runs "
        f"scripts/bootstrap.d/kube.sh), then `source` the env file it prints.")


def find_binaries(bin_dir: Path | None = None) -> dict[str, Path]:
    return {name: find_binary(name, bin_dir) for name in REQUIRED}
