"""The images built by the bootstrap (scripts/bootstrap.d/images.sh) into ``$BOOKIE_FLEET_IMAGES``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from localkube.runner.imagestore import ImageStore

from tests.support import oci


@pytest.fixture(scope="session")
def images() -> dict[str, oci.Image]:
    """Every product image by role (bookie, operator, apache-bookkeeper), read from the layout."""
    return {role: oci.image(ref) for role, ref in oci.product_refs().items()}


@pytest.fixture(scope="session")
def rootfs(images: dict[str, oci.Image], tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``rootfs(role)``: the image's root filesystem, read-only, as localkube's runner unpacks it: once on this
    machine, beside the layout (localkube/localkube/runner/imagestore.py)."""
    oci.have_tools()
    store = ImageStore.from_environment(tmp_path_factory.mktemp("runner-state"))

    def get(role: str) -> Path:
        image = store.find(images[role].ref)
        assert image is not None, f"{images[role].ref} not in {store.layouts}"
        return store.rootfs(image)

    return get
