"""Each image's config as a container runtime reads it from the OCI layout: a numeric non-root user (so
runAsNonRoot can be verified), the entry point, the OCI labels (the license the project's pyproject.toml states;
Apache BookKeeper's own is the same) and the environment for a read-only root."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.support import oci

LABELS = ("org.opencontainers.image.title", "org.opencontainers.image.description",
          "org.opencontainers.image.version", "org.opencontainers.image.base.name",
          "org.opencontainers.image.licenses")
PROJECT_LICENSE = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
    "license"]
ENTRYPOINTS = {
    "bookie": ["/opt/venv/bin/bookie"],
    "operator": ["/opt/venv/bin/python", "-m", "bookie_operator"],
    "apache-bookkeeper": ["/opt/bookkeeper/bin/entrypoint"],
    "audit": ["/opt/bookie-fleet/entrypoint"],
}


@pytest.mark.parametrize("role", sorted(ENTRYPOINTS))
def test_image_runs_as_a_numeric_non_root_user(images: dict[str, oci.Image], role: str) -> None:
    user, _, group = str(images[role].runtime.get("User", "")).partition(":")
    assert user.isdigit() and int(user) != 0, f"{role}: USER {user!r} is not a numeric non-root uid"
    assert group.isdigit() and int(group) != 0, f"{role}: USER has no numeric non-root group ({group!r})"


@pytest.mark.parametrize("role", sorted(ENTRYPOINTS))
def test_image_entrypoint_and_labels(images: dict[str, oci.Image], role: str) -> None:
    img = images[role]
    assert img.runtime.get("Entrypoint") == ENTRYPOINTS[role]
    labels = img.runtime.get("Labels") or {}
    missing = [label for label in LABELS if not labels.get(label)]
    assert not missing, f"{role}: labels missing {missing}"
    assert labels["org.opencontainers.image.version"] == img.ref.rsplit(":", 1)[1]
    assert labels["org.opencontainers.image.licenses"] == PROJECT_LICENSE


@pytest.mark.parametrize("role", ["bookie", "operator", "audit"])
def test_python_images_write_no_bytecode_and_use_their_venv(images: dict[str, oci.Image], role: str) -> None:
    env = images[role].env
    assert env.get("PYTHONDONTWRITEBYTECODE") == "1"
    assert env["PATH"].split(":")[0] == "/opt/venv/bin"
    assert env.get("HOME") == "/tmp"


def test_java_image_declares_tmp_a_volume(images: dict[str, oci.Image]) -> None:
    """The entry point writes the bookie's configuration to /tmp: a volume, so a read-only root still works."""
    assert "/tmp" in (images["apache-bookkeeper"].runtime.get("Volumes") or {})
