"""The images built by the bootstrap (scripts/bootstrap.d/images.sh) into ``$BOOKIE_FLEET_IMAGES``."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from localkube.runner.imagestore import ImageStore

from tests.support import oci

REPO = Path(__file__).resolve().parents[2]


def entrypoint_module(path: Path, name: str) -> ModuleType:
    """An image's entry point script, imported from its file (it is in no package of this repository)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def java_bookie_entrypoint() -> ModuleType:
    """hack/apache-bookkeeper/entrypoint.py, the Java bookie image's entry point."""
    return entrypoint_module(REPO / "hack" / "apache-bookkeeper" / "entrypoint.py", "java_bookie_entrypoint")


@pytest.fixture(scope="session")
def audit_entrypoint() -> ModuleType:
    """pipeline/image/entrypoint.py, the audit image's entry point."""
    return entrypoint_module(REPO / "pipeline" / "image" / "entrypoint.py", "audit_entrypoint")


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
