"""The image build's buildah store keeps only named images: an earlier build whose name moved to a newer one
is removed after the build, an image that still has a name stays. Runs the real shell function against a
real buildah store in a scratch directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d" / "lib" / "cache.sh"


def _store(tmp_path: Path) -> list[str]:
    return ["--root", str(tmp_path / "storage"), "--runroot", str(tmp_path / "runroot"),
            "--storage-driver", "vfs"]


def _buildah(store: list[str], *args: str) -> str:
    return subprocess.run(["buildah", *store, *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(store: list[str], name: str, label: str) -> str:
    container = _buildah(store, "from", "scratch")
    _buildah(store, "config", "--label", f"build={label}", container)
    return _buildah(store, "commit", "-q", "--rm", container, name).removeprefix("sha256:")


def _image_ids(store: list[str]) -> set[str]:
    return {i.removeprefix("sha256:") for i in _buildah(store, "images", "-q", "--no-trunc").split()}


def test_earlier_builds_of_a_name_go_and_named_images_stay(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = _commit(store, "localhost/bookie-fleet/bookie:0.1.0", "first")
    second = _commit(store, "localhost/bookie-fleet/bookie:0.1.0", "second")   # the name moves: first is unnamed
    other = _commit(store, "localhost/bookie-fleet/operator:0.1.0", "only")
    assert _image_ids(store) == {first, second, other}

    script = f'log() {{ echo "$*"; }}; source "{LIB}"; prune_unnamed_images {" ".join(store)}'
    printed = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout

    assert _image_ids(store) == {second, other}
    assert "removed 1 unnamed earlier builds" in printed


def test_a_store_without_unnamed_images_is_left_alone(tmp_path: Path) -> None:
    store = _store(tmp_path)
    only = _commit(store, "localhost/bookie-fleet/bookie:0.1.0", "only")

    script = f'log() {{ echo "$*"; }}; source "{LIB}"; prune_unnamed_images {" ".join(store)}'
    printed = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout

    assert _image_ids(store) == {only}
    assert printed == ""
