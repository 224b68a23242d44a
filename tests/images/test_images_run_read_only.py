"""The images' entry points run under runc as a restricted pod runs them: the image's own numeric uid, a
read-only root filesystem, no capabilities, no_new_privs, only /tmp writable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support import oci

PROBE = ("import os, sys\n"
         "print('uid', os.getuid(), os.getgid())\n"
         "for path in ('/probe', '/opt/venv/probe', '/tmp/probe'):\n"
         "    try:\n"
         "        open(path, 'w').close(); print(path, 'writable')\n"
         "    except OSError as exc:\n"
         "        print(path, 'errno', exc.errno)\n")


def test_bookie_entrypoint_runs_read_only_as_its_user(images: dict[str, oci.Image],
                                                      rootfs: Callable[[str], Path], tmp_path: Path) -> None:
    img = images["bookie"]
    result = oci.run(img, rootfs("bookie"), tmp_path / "bundle", ["--help"])
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout, result.stdout


def test_bookie_image_root_is_read_only_and_tmp_writable(images: dict[str, oci.Image],
                                                         rootfs: Callable[[str], Path], tmp_path: Path) -> None:
    img = images["bookie"]
    probe = oci.Image(img.layout, img.ref, img.manifest,
                      {**img.config, "config": {**img.runtime, "Entrypoint": ["/opt/venv/bin/python", "-c"]}})
    result = oci.run(probe, rootfs("bookie"), tmp_path / "bundle", [PROBE])
    assert result.returncode == 0, result.stderr
    user, _, group = img.runtime["User"].partition(":")
    lines = result.stdout.splitlines()
    assert lines[0] == f"uid {user} {group}"
    assert "/probe errno 30" in lines and "/opt/venv/probe errno 30" in lines, lines  # EROFS
    assert "/tmp/probe writable" in lines, lines


def test_java_bookie_entrypoint_runs_read_only(images: dict[str, oci.Image], rootfs: Callable[[str], Path],
                                               tmp_path: Path) -> None:
    """The entry point writes its configuration to /tmp and starts BookKeeper's Main from the image's JRE
    and classpath (``--help`` prints the server's usage and exits)."""
    result = oci.run(images["apache-bookkeeper"], rootfs("apache-bookkeeper"), tmp_path / "bundle",
                     ["bookie", "--help"])
    output = result.stdout + result.stderr
    assert "ClassNotFoundException" not in output and "NoClassDefFoundError" not in output, output[-2000:]
    assert "bookie" in output.lower() and "--conf" in output, output[-2000:]


def test_operator_entrypoint_runs_read_only_as_its_user(images: dict[str, oci.Image],
                                                        rootfs: Callable[[str], Path], tmp_path: Path) -> None:
    result = oci.run(images["operator"], rootfs("operator"), tmp_path / "bundle", ["--help"])
    assert result.returncode == 0, result.stderr
    assert "--all-namespaces" in result.stdout, result.stdout
