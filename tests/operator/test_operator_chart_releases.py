"""The chart's releases (helm/releases, a Helm chart repository made by ``scripts/release-chart``): the index lists
every package with its digest and version, the working chart never differs from a release of its own version
(a changed chart gets a newer version), and the release script refuses to package a version twice."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "bookie-operator"
RELEASES = REPO / "helm" / "releases"


def index() -> dict[str, Any]:
    return yaml.safe_load((RELEASES / "index.yaml").read_text())


def packaged_files(package: Path) -> dict[str, bytes]:
    """A package's files by their path inside the chart (without the chart's own folder name)."""
    with tarfile.open(package) as tar:
        return {member.name.split("/", 1)[1]: tar.extractfile(member).read()  # type: ignore[union-attr]
                for member in tar.getmembers() if member.isfile()}


def chart_files(chart: Path) -> dict[str, bytes]:
    return {str(path.relative_to(chart)): path.read_bytes() for path in sorted(chart.rglob("*")) if path.is_file()}


def chart_version(files: dict[str, bytes]) -> Version:
    return Version(str(yaml.safe_load(io.BytesIO(files["Chart.yaml"]))["version"]))


def test_the_index_lists_every_package_with_its_digest_and_version() -> None:
    entries = index()["entries"]["bookie-operator"]
    packages = sorted(RELEASES.glob("bookie-operator-*.tgz"))
    assert packages, "no released chart in helm/releases"
    assert sorted(url for entry in entries for url in entry["urls"]) == sorted(p.name for p in packages)
    for entry in entries:
        package = RELEASES / entry["urls"][0]
        assert entry["digest"] == hashlib.sha256(package.read_bytes()).hexdigest(), package.name
        assert package.name == f"bookie-operator-{entry['version']}.tgz"
        assert str(chart_version(packaged_files(package))) == entry["version"]


def test_the_working_chart_is_newer_than_every_release_it_differs_from() -> None:
    working = chart_files(CHART)
    for package in sorted(RELEASES.glob("bookie-operator-*.tgz")):
        released = packaged_files(package)
        if released == working:
            continue
        assert chart_version(working) > chart_version(released), (
            f"helm/bookie-operator differs from the release {package.name} but its version "
            f"({chart_version(working)}) is not newer: bump version in its Chart.yaml")


@pytest.fixture
def repository_copy(tmp_path: Path) -> Path:
    """The release script and the chart with its releases, in a repository of their own."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "release-chart", tmp_path / "scripts" / "release-chart")
    shutil.copytree(REPO / "helm", tmp_path / "helm")
    return tmp_path


def set_version(chart: Path, version: str) -> None:
    path = chart / "Chart.yaml"
    lines = [f"version: {version}" if line.startswith("version:") else line
             for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def test_a_version_is_released_once_and_the_index_keeps_the_earlier_ones(repository_copy: Path) -> None:
    script = repository_copy / "scripts" / "release-chart"
    chart = repository_copy / "helm" / "bookie-operator"
    releases = repository_copy / "helm" / "releases"
    earlier = {e["version"]: e["created"] for e in index()["entries"]["bookie-operator"]}
    newest = max(earlier, key=Version)
    set_version(chart, newest)
    refused = subprocess.run([str(script)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, refused.stderr
    assert f"bookie-operator {newest} is released already" in refused.stderr
    assert "bump version" in refused.stderr

    following = f"{Version(newest).major}.{Version(newest).minor + 1}.0"
    set_version(chart, following)
    released = subprocess.run([str(script)], capture_output=True, text=True, timeout=120)
    assert released.returncode == 0, released.stderr
    assert (releases / f"bookie-operator-{following}.tgz").is_file()
    entries = yaml.safe_load((releases / "index.yaml").read_text())["entries"]["bookie-operator"]
    created = {e["version"]: e["created"] for e in entries}
    assert set(created) == set(earlier) | {following}
    assert all(created[v] == earlier[v] for v in earlier)    # the earlier releases' entries untouched
