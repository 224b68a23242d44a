"""Each Apache BookKeeper classpath the compatibility tests run has one Netty line, and the other version's is the
Netty of the Java bookie image (hack/apache-bookkeeper/jars.lock).

Netty 4.2 moved most of ``netty-codec`` into ``netty-codec-base``; a classpath resolved without BookKeeper's own
dependency management gets Vert.x's 4.1 codecs next to BookKeeper's 4.2 (the same classes twice, whichever jar
comes first wins), which is not what BookKeeper ships or tests. The jars are identified by the Maven coordinates
they carry (``META-INF/maven/io.netty/<artifact>/pom.properties``), not by their file names. netty-tcnative and
the io_uring incubator have release lines of their own (2.0.x, 0.0.x): only Netty's 4.x artifacts count."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.java_client import VERSIONS

REPO = Path(__file__).resolve().parents[2]
IMAGE = REPO / "hack" / "apache-bookkeeper"
sys.path.insert(0, str(IMAGE))

import jars  # noqa: E402  (hack/apache-bookkeeper/jars.py, not a package)

NETTY = "io.netty"


def netty_versions(lib: Path) -> dict[str, set[str]]:
    """Netty 4 artifact -> the versions of it in ``lib``'s jars."""
    found: dict[str, set[str]] = {}
    for jar in sorted(lib.glob("*.jar")):
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if name.startswith(f"META-INF/maven/{NETTY}/") and name.endswith("/pom.properties"):
                    props = dict(line.split("=", 1) for line in z.read(name).decode().splitlines()
                                 if "=" in line and not line.startswith("#"))
                    if props.get("version", "").startswith("4."):
                        found.setdefault(props["artifactId"], set()).add(props["version"])
    return found


def minor_line(version: str) -> str:
    return ".".join(version.split(".")[:2])


@pytest.mark.parametrize("which", sorted(VERSIONS))
def test_the_classpath_has_one_netty_line(which: str) -> None:
    lib = VERSIONS[which].lib
    found = netty_versions(lib)
    assert {"netty-common", "netty-buffer", "netty-transport", "netty-handler"} <= found.keys(), \
        f"{lib}: the Netty jars are not recognised ({sorted(found)})"
    lines = {minor_line(v) for versions in found.values() for v in versions}
    mixed = {artifact: sorted(versions) for artifact, versions in sorted(found.items())}
    assert len(lines) == 1, f"{lib} mixes Netty lines {sorted(lines)}: {mixed}"


def test_the_other_versions_netty_is_the_java_bookie_images() -> None:
    image = {j.version for j in jars.parse_lock((IMAGE / "jars.lock").read_text())
             if j.group == NETTY and j.version.startswith("4.")}
    assert len(image) == 1, f"the image's jars.lock has several Netty versions: {sorted(image)}"
    lib = VERSIONS["other"].lib
    found = {v for versions in netty_versions(lib).values() for v in versions}
    assert found == image, f"{lib} has Netty {sorted(found)}, the Java bookie image {sorted(image)}"
