"""A version pair that is not supported is refused at start with the versions named: the Java bookie image, in a
pod the operator built (which names the Apache BookKeeper lines it manages, BOOKIE_FLEET_BOOKKEEPER_VERSIONS),
starts only an Apache BookKeeper of one of those lines. Any other stops before the JVM with an
``UnsupportedVersion`` termination message naming the version found and the supported ones, which the operator
turns into Degraded naming the bookie and its image.

The image runs under runc as a restricted pod runs it. The version the image really holds (4.18.0) is supported
by this operator, so the refusal is shown with the set of an operator that would manage 4.17 only: the operator's
own set starts the bookie. The version itself is read from the bookkeeper-server jar, checked here on the real
jars of both versions of the compatibility matrix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from bookie_operator import builders, java_config, models
from bookie_operator.decisions import start_failures

from tests.support import oci
from tests.support.java_client import VERSIONS

SPEC = {"metadataService": {"zkServers": "zk:2181"}, "implementation": "apache-bookkeeper",
        "image": "bookie-fleet/apache-bookkeeper:4.18.0", "replicas": 1, "ensembleSize": 1}


def operator_env() -> dict[str, str]:
    """The bookie container's plain environment variables, as the operator builds its StatefulSet."""
    sts = builders.statefulset(builders.Owner("jb", "ns", "uid"), models.parse_spec(SPEC), 1)
    [container] = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "bookie"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def test_the_image_and_the_operator_name_the_same_variable_and_reason(java_bookie_entrypoint: ModuleType) -> None:
    assert java_bookie_entrypoint.VERSIONS_ENV == models.BOOKKEEPER_VERSIONS_ENV
    assert java_bookie_entrypoint.UNSUPPORTED_VERSION == start_failures.UNSUPPORTED_VERSION
    assert operator_env()[models.BOOKKEEPER_VERSIONS_ENV] == "4.17,4.18"
    assert java_config.SUPPORTED_LINES == ("4.17", "4.18")


@pytest.mark.parametrize(("which", "version"), [("pinned", "4.17.3"), ("other", "4.18.0")])
def test_both_versions_of_the_matrix_are_read_from_their_jars_and_supported(
        java_bookie_entrypoint: ModuleType, which: str, version: str) -> None:
    lib = VERSIONS[which].lib
    assert java_bookie_entrypoint.bookkeeper_version(lib) == version
    assert java_bookie_entrypoint.unsupported(lib, operator_env()) is None


def test_a_classpath_without_bookkeeper_is_refused_and_an_unset_variable_checks_nothing(
        java_bookie_entrypoint: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "bookkeeper-server-4.18.0.jar").write_bytes(b"not a jar")
    why = java_bookie_entrypoint.unsupported(tmp_path, operator_env())
    assert why is not None and why.startswith("the image runs no Apache BookKeeper bookie (no bookkeeper-server "
                                              f"jar in {tmp_path}), the operator supports Apache BookKeeper "
                                              "4.17, 4.18"), why
    assert java_bookie_entrypoint.unsupported(tmp_path, {}) is None, "outside the operator's pods nothing is checked"


def run_bookie(images: dict[str, oci.Image], rootfs: Callable[[str], Path], bundle: Path,
               env: dict[str, str], args: list[str]) -> tuple[int, str, str]:
    """The Java bookie image's entrypoint with ``env`` added; (exit status, output, its termination message)."""
    img = images["apache-bookkeeper"]
    out = bundle / "out"
    out.mkdir(parents=True)
    out.chmod(0o777)  # the image's user writes the termination message there
    env = {**env, "BOOKIE_TERMINATION_LOG": "/out/termination-log"}
    runtime = {**img.runtime, "Env": [*(img.runtime.get("Env") or []), *(f"{k}={v}" for k, v in env.items())]}
    with_env = oci.Image(img.layout, img.ref, img.manifest, {**img.config, "config": runtime})
    result = oci.run(with_env, rootfs("apache-bookkeeper"), bundle / "run", args, binds={"/out": out})
    message = out / "termination-log"
    return result.returncode, result.stdout + result.stderr, message.read_text() if message.exists() else ""


def test_an_unsupported_version_stops_with_the_versions_named_and_the_operator_degrades(
        images: dict[str, oci.Image], rootfs: Callable[[str], Path], tmp_path: Path) -> None:
    env = operator_env()
    code, output, message = run_bookie(images, rootfs, tmp_path / "supported", env, ["bookie", "--help"])
    assert "--conf" in output and not message, f"the operator's own set starts the bookie: {output[-2000:]}"

    code, output, message = run_bookie(images, rootfs, tmp_path / "unsupported",
                                       {**env, models.BOOKKEEPER_VERSIONS_ENV: "4.17"}, ["bookie"])
    assert code == 1, output[-2000:]
    assert message == ("UnsupportedVersion: the image runs Apache BookKeeper 4.18.0, the operator supports Apache "
                       "BookKeeper 4.17 (BOOKIE_FLEET_BOOKKEEPER_VERSIONS): set spec.image to an image of one of "
                       "those versions"), message
    assert message.removeprefix("UnsupportedVersion: ") in output, "said on stderr too"
    assert "org.apache.bookkeeper" not in output and "java" not in output.lower(), "refused before the JVM"

    # What the operator makes of it, once the kubelet has put the file into the pod's status.
    pod = {"metadata": {"name": "jb-0"}, "status": {"containerStatuses": [{
        "name": "bookie", "ready": False, "restartCount": 2,
        "lastState": {"terminated": {"exitCode": code, "message": message, "finishedAt": "2026-01-01T00:00:00Z"}}}]}}
    failures = start_failures.observe("jb", [pod])
    degraded = start_failures.degraded(failures, "jb", models.parse_spec(SPEC), None)
    assert degraded is not None and degraded.reason == "UnsupportedVersion"
    assert degraded.message == ("jb-0 cannot start (UnsupportedVersion): the image runs Apache BookKeeper 4.18.0, "
                                "the operator supports Apache BookKeeper 4.17 (BOOKIE_FLEET_BOOKKEEPER_VERSIONS): set "
                                "spec.image to an image of one of those versions (spec.image "
                                "bookie-fleet/apache-bookkeeper:4.18.0)"), degraded.message
