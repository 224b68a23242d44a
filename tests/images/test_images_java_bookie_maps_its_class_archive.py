"""The Java bookie image starts its JVMs from the class-data archive its build wrote: the classes a bookie of the
image loaded from its start to serving adds and reads (``entrypoint.py archive-classes``, a RUN of the
Dockerfile). The image's bookie, run under runc as a restricted pod runs it, maps the archive (``-Xshare:on``
makes a JVM that cannot map it fail) and takes its own classes from it, not from the jars. The jars are named in
sorted order, the one the archive was written with, whatever order the directory lists them in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from bookie_operator import builders, models

from tests.support import oci

FROM_THE_ARCHIVE = "source: shared objects file (top)"


def test_the_jars_are_named_in_sorted_order_and_the_archive_only_once_written(
        java_bookie_entrypoint: ModuleType, tmp_path: Path) -> None:
    ep = java_bookie_entrypoint
    for name in ("zookeeper-3.9.5.jar", "bookkeeper-server-4.18.0.jar", "netty-common-4.1.jar", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    assert ep.classpath(tmp_path) == ":".join(
        str(tmp_path / n) for n in ("bookkeeper-server-4.18.0.jar", "netty-common-4.1.jar", "zookeeper-3.9.5.jar"))
    archive = tmp_path / "bookie.jsa"
    assert ep.archive_options(archive) == [], "no archive yet: the build is writing it"
    archive.write_bytes(b"")
    assert ep.archive_options(archive)[-1] == f"-XX:SharedArchiveFile={archive}"


def test_the_archives_bookie_runs_the_classes_the_operator_configures(java_bookie_entrypoint: ModuleType) -> None:
    spec = models.parse_spec({"metadataService": {"zkServers": "zk:2181"}, "implementation": "apache-bookkeeper",
                              "image": "bookie-fleet/apache-bookkeeper:4.18.0", "replicas": 1, "ensembleSize": 1})
    config = builders.bookie_config(spec)
    classes = java_bookie_entrypoint.OPERATOR_CLASSES
    assert classes == {key: config[key] for key in classes}


def test_the_images_bookie_takes_its_classes_from_the_archive(
        images: dict[str, oci.Image], rootfs: Callable[[str], Path], tmp_path: Path) -> None:
    img = images["apache-bookkeeper"]
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)  # the image's user writes the class log there
    options = "-Xshare:on -Xlog:class+load=info:file=/out/classes.log"
    runtime = {**img.runtime, "Env": [*(img.runtime.get("Env") or []), f"BOOKIE_EXTRA_OPTS={options}"]}
    with_env = oci.Image(img.layout, img.ref, img.manifest, {**img.config, "config": runtime})
    result = oci.run(with_env, rootfs("apache-bookkeeper"), tmp_path / "run", ["bookie", "--help"],
                     binds={"/out": out})
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "--conf" in output, f"the bookie did not start: {output[-3000:]}"
    loaded = (out / "classes.log").read_text().splitlines()
    main = [line for line in loaded if " org.apache.bookkeeper.server.Main " in line]
    assert main and FROM_THE_ARCHIVE in main[0], main or loaded[-20:]
    archived = [line for line in loaded if FROM_THE_ARCHIVE in line]
    from_jars = [line for line in loaded if "source: file:" in line or "source: jar:" in line]
    print(f"{len(archived)} classes from the image's archive, {len(from_jars)} from its jars")
    assert len(archived) >= 100 and len(from_jars) <= len(archived) // 10, (len(archived), from_jars[:20])
