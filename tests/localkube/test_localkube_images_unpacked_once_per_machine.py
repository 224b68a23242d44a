"""An image of the bootstrap's layout (``$BOOKIE_FLEET_IMAGES``) is unpacked once on this machine, beside that
layout, and every cluster's runner uses that one root filesystem; an image loaded into one cluster is unpacked
into that cluster's own state, and an unpack left incomplete (a runner killed mid-way) is done again.

Real umoci and a real OCI layout (tests/support/ociimage.py's small busybox image standing in for the built one).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from localkube.runner.imagestore import ImageStore

from tests.support.ociimage import SHELL_IMAGE, load_shell_images


@pytest.fixture
def built_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A layout as the bootstrap leaves one, ``<cache>/images-<hash>/oci``, named by ``$BOOKIE_FLEET_IMAGES``."""
    builder = tmp_path / "builder"
    load_shell_images(builder, tmp_path / "scratch")
    layout = tmp_path / "cache" / "images-0123" / "oci"
    layout.parent.mkdir(parents=True)
    shutil.move(builder / "images", layout)
    monkeypatch.setenv("BOOKIE_FLEET_IMAGES", str(layout))
    return layout


def _unpacked(store: ImageStore) -> Path:
    image = store.find(SHELL_IMAGE)
    assert image is not None, f"{SHELL_IMAGE} not found in {store.layouts}"
    return store.rootfs(image)


def test_two_clusters_share_one_unpack_beside_the_built_layout(built_layout: Path, tmp_path: Path) -> None:
    first = _unpacked(ImageStore.from_environment(tmp_path / "cluster-a"))
    assert first.parent.parent == built_layout.parent / "rootfs", first
    assert (first / "bin" / "busybox").is_file()
    unpacked_at = (first.parent / ".complete").stat().st_mtime_ns

    second = _unpacked(ImageStore.from_environment(tmp_path / "cluster-b"))
    assert second == first
    assert (first.parent / ".complete").stat().st_mtime_ns == unpacked_at, "unpacked a second time"
    assert not (tmp_path / "cluster-b" / "rootfs").exists()


def test_an_image_loaded_into_one_cluster_is_unpacked_into_that_cluster(built_layout: Path, tmp_path: Path) -> None:
    load_shell_images(tmp_path / "cluster-a", tmp_path / "scratch-a")  # the node's own layout, looked up first
    rootfs = _unpacked(ImageStore.from_environment(tmp_path / "cluster-a"))
    assert rootfs.parent.parent == tmp_path / "cluster-a" / "rootfs", rootfs
    assert not (built_layout.parent / "rootfs").exists()


def test_an_unpack_left_incomplete_is_done_again(built_layout: Path, tmp_path: Path) -> None:
    rootfs = _unpacked(ImageStore.from_environment(tmp_path / "cluster-a"))
    (rootfs.parent / ".complete").unlink()
    (rootfs / "left-by-a-killed-unpack").write_text("partial\n")
    again = _unpacked(ImageStore.from_environment(tmp_path / "cluster-b"))
    assert again == rootfs and (again.parent / ".complete").exists()
    assert not (again / "left-by-a-killed-unpack").exists()
    assert (again / "bin" / "busybox").is_file()
