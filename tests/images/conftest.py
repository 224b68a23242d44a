"""The images built by the bootstrap (scripts/bootstrap.d/images.sh) into ``$BOOKIE_FLEET_IMAGES``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import oci


@pytest.fixture(scope="session")
def images() -> dict[str, oci.Image]:
    """Every product image by role (bookie, operator, apache-bookkeeper), read from the layout."""
    return {role: oci.image(ref) for role, ref in oci.product_refs().items()}


@pytest.fixture(scope="session")
def rootfs(images: dict[str, oci.Image], tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``rootfs(role)``: the image's root filesystem, unpacked once per session."""
    oci.have_tools()
    unpacked: dict[str, Path] = {}

    def get(role: str) -> Path:
        if role not in unpacked:
            unpacked[role] = oci.unpack(images[role], tmp_path_factory.mktemp(f"rootfs-{role}"))
        return unpacked[role]

    return get
