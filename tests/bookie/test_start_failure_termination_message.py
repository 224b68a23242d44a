"""A bookie that cannot start writes why to its termination message file (Kubernetes' ``/dev/termination-log``,
here ``--termination-log`` / ``BOOKIE_TERMINATION_LOG``): ``Reason: message``, and exits non-zero. Real ``bookie
serve`` processes; full and read-only disks are real tmpfs mounts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie.metadata.store import MetadataStore
from bookie.termination import DEFAULT_PATH, MAX_BYTES, render

from tests.support.bookies import BookieFactory


def serve(conf: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bookie.cli", "serve", "--conf", str(conf), *extra],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def write_conf(tmp_path: Path, journal: Path, ledgers: Path, *lines: str) -> Path:
    conf = tmp_path / "bookie.conf"
    conf.write_text("\n".join([f"journalDirectories={journal}", f"ledgerDirectories={ledgers}",
                               "metadataServiceUri=zk+hierarchical://127.0.0.1:1/ledgers", "zkTimeout=1000",
                               *lines]) + "\n")
    return conf


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of the test's own (unmounted at the end)."""
    path = tmp_path / "tmpfs"
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_invalid_configuration_key_is_the_termination_message(tmp_path: Path) -> None:
    message = tmp_path / "termination-log"
    conf = write_conf(tmp_path, tmp_path / "journal", tmp_path / "ledgers", "jornalMaxGroupWaitMSec=1")
    result = serve(conf, "--termination-log", str(message))
    assert result.returncode == 2
    text = message.read_text()
    assert text.startswith("InvalidConfig: invalid bookie configuration in ")
    assert "jornalMaxGroupWaitMSec: unknown configuration key (did you mean journalMaxGroupWaitMSec?)" in text


def test_the_path_comes_from_the_environment_too(tmp_path: Path) -> None:
    message = tmp_path / "from-env"
    conf = write_conf(tmp_path, tmp_path / "journal", tmp_path / "ledgers", "diskUsageThreshold=1.5")
    result = serve(conf, env={"BOOKIE_TERMINATION_LOG": str(message)})
    assert result.returncode == 2
    assert message.read_text().startswith("InvalidConfig: ")
    assert "diskUsageThreshold" in message.read_text()


def test_a_pod_built_for_apache_bookkeeper_is_wrong_image_before_any_configuration(tmp_path: Path) -> None:
    # The operator's pod for Java bookies mounts no configuration where ours reads it: the image is the cause.
    message = tmp_path / "termination-log"
    result = serve(tmp_path / "no-such.conf", "--termination-log", str(message),
                   env={"BOOKIE_FLEET_IMPLEMENTATION": "apache-bookkeeper"})
    assert result.returncode == 1
    assert message.read_text().startswith("WrongImage: this image runs bookie-fleet's bookie, but the pod is built "
                                          "for apache-bookkeeper")
    assert "set spec.image to an image of apache-bookkeeper's bookie" in message.read_text()


def test_a_pod_built_for_bookie_fleet_starts_as_before(tmp_path: Path) -> None:
    message = tmp_path / "termination-log"
    conf = write_conf(tmp_path, tmp_path / "journal", tmp_path / "ledgers", "bookiePort=70000")
    result = serve(conf, "--termination-log", str(message), env={"BOOKIE_FLEET_IMPLEMENTATION": "bookie-fleet"})
    assert result.returncode == 2 and message.read_text().startswith("InvalidConfig: ")


def test_nothing_is_written_outside_a_container(tmp_path: Path) -> None:
    assert not os.path.exists(DEFAULT_PATH), "this machine is not a container with a termination log"
    conf = write_conf(tmp_path, tmp_path / "journal", tmp_path / "ledgers", "bookiePort=70000")
    result = serve(conf, env={"BOOKIE_TERMINATION_LOG": ""})
    assert result.returncode == 2 and "bookiePort" in result.stderr
    assert not os.path.exists(DEFAULT_PATH)


def test_read_only_directory_is_directory_not_writable(tmp_path: Path, tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    message = tmp_path / "termination-log"
    conf = write_conf(tmp_path, tmp_path / "journal", tmpfs)
    result = serve(conf, "--termination-log", str(message))
    assert result.returncode == 1
    text = message.read_text()
    assert text.startswith(f"DirectoryNotWritable: directory {tmpfs} is not writable (Read-only file system)"), text
    assert "DirectoryNotWritable" in result.stderr


def test_full_disk_at_start_is_disk_full(tmp_path: Path, tmpfs: Path) -> None:
    with contextlib.suppress(OSError), open(tmpfs / "ballast", "wb") as f:
        while True:
            f.write(b"\xa5" * 65536)
    message = tmp_path / "termination-log"
    conf = write_conf(tmp_path, tmpfs / "journal", tmp_path / "ledgers")
    result = serve(conf, "--termination-log", str(message))
    assert result.returncode == 1
    text = message.read_text()
    assert text.startswith(f"DiskFull: directory {tmpfs / 'journal'}: no space left"), text


def test_unreachable_zookeeper_is_metadata_unreachable(tmp_path: Path) -> None:
    message = tmp_path / "termination-log"
    conf = write_conf(tmp_path, tmp_path / "journal", tmp_path / "ledgers")
    result = serve(conf, "--termination-log", str(message))
    assert result.returncode == 1
    assert message.read_text().startswith("MetadataUnreachable: metadata service 127.0.0.1:1/ledgers: ")


async def test_volumes_of_another_instance_are_cookie_mismatch_naming_both_ids(
        bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = bookie_factory(1)[0]
    bookie.stop()
    old_root = bookie.ledgers_root
    async with MetadataStore(bookie.zk_connect, old_root) as store:
        old_id = await store.instance_id()
    # The same directories against a fresh metadata root: another BookKeeper instance.
    bookie.ledgers_root = f"/fresh-{uuid.uuid4().hex[:8]}/ledgers"
    bookie.write_conf()
    message = tmp_path / "termination-log"
    command = [*bookie.command(), "--termination-log", str(message)]
    result = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    async with MetadataStore(bookie.zk_connect, bookie.ledgers_root) as store:
        new_id = await store.instance_id()
        assert await store.read_cookie(bookie.bookie_id) is None, "a refused bookie registers no cookie"
    text = message.read_text()
    assert text.startswith("CookieMismatch: cookie check failed: "), text
    assert re.search(rf"instance id '{new_id}' != '{old_id}'", text), text
    assert f"belongs to BookKeeper instance '{old_id}'" in text


def test_long_messages_are_cut_to_what_the_kubelet_reads() -> None:
    data = render("StartupFailed", "é" * 5000)
    assert len(data) <= MAX_BYTES
    assert data.decode().startswith("StartupFailed: éé") and data.endswith(b"...")
