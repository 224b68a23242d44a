"""The power-loss file system keeps after a cut exactly what fsync and directory fsync made durable, like a disk
whose page cache was lost: the other power-loss tests are only as strong as this."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.powerloss.mount import PowerLossFs


@pytest.fixture
def zone(powerloss_fs: PowerLossFs) -> Iterator[tuple[PowerLossFs, str, Path]]:
    name = f"semantics-{uuid.uuid4().hex[:8]}"
    yield powerloss_fs, name, powerloss_fs.zone(name)


def _write(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_unsynced_bytes_are_lost_synced_ones_kept(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    _write(top / "f", b"durable", sync=True)
    _sync_dir(top)
    with open(top / "f", "ab") as f:
        f.write(b" and volatile")
    report = fs.cut(name)
    assert (top / "f").read_bytes() == b"durable"
    assert report["bytes_lost"] == len(b" and volatile")


def test_a_new_file_without_a_directory_fsync_is_gone_even_if_fsynced(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    _write(top / "f", b"data", sync=True)
    fs.cut(name)
    assert not (top / "f").exists()


def test_a_rename_needs_a_directory_fsync(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    _write(top / "old", b"v1", sync=True)
    _write(top / "tmp", b"v2", sync=True)
    _sync_dir(top)
    os.replace(top / "tmp", top / "old")
    fs.cut(name)
    assert (top / "old").read_bytes() == b"v1" and (top / "tmp").read_bytes() == b"v2"
    os.replace(top / "tmp", top / "old")
    _sync_dir(top)
    fs.cut(name)
    assert (top / "old").read_bytes() == b"v2" and not (top / "tmp").exists()


def test_a_directory_is_only_as_durable_as_its_entry_in_its_parent(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    (top / "d").mkdir()
    _write(top / "d" / "f", b"x", sync=True)
    _sync_dir(top / "d")  # f is durable in d, but d is not durable in top
    fs.cut(name)
    assert not (top / "d").exists()


def test_unlinks_and_hard_links_follow_the_directory(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    _write(top / "a", b"linked", sync=True)
    _sync_dir(top)
    os.link(top / "a", top / "b")
    os.unlink(top / "a")
    fs.cut(name)  # neither the link nor the unlink was made durable
    assert sorted(os.listdir(top)) == ["a"]
    os.link(top / "a", top / "b")
    os.unlink(top / "a")
    _sync_dir(top)
    fs.cut(name)
    assert sorted(os.listdir(top)) == ["b"] and (top / "b").read_bytes() == b"linked"


def test_size_changes_follow_fsync(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    _write(top / "f", b"0123456789", sync=True)
    _sync_dir(top)
    os.truncate(top / "f", 4)
    fs.cut(name)
    assert (top / "f").read_bytes() == b"0123456789"
    fd = os.open(top / "f", os.O_RDWR)
    os.posix_fallocate(fd, 0, 4096)
    os.fdatasync(fd)
    os.close(fd)
    fs.cut(name)
    assert (top / "f").read_bytes() == b"0123456789" + bytes(4086)


def test_a_cut_in_one_zone_leaves_the_others_alone(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, _ = zone
    other = fs.zone(f"{name}-other")
    _write(other / "f", b"unsynced", sync=False)
    fs.cut(name)
    assert (other / "f").read_bytes() == b"unsynced"


def test_an_armed_cut_kills_the_writer_before_the_chosen_operation(zone: tuple[PowerLossFs, str, Path]) -> None:
    fs, name, top = zone
    _sync_dir(top)
    # A writer that creates a file, makes it durable, then appends and fsyncs records one by one.
    script = ("import os, sys\n"
              "p = sys.argv[1]\n"
              "fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644); os.fsync(fd)\n"
              "d = os.open(os.path.dirname(p), os.O_RDONLY); os.fsync(d)\n"
              "for i in range(100):\n"
              "    os.write(fd, b'%03d' % i); os.fsync(fd)\n")
    writer = subprocess.Popen([sys.executable, "-c", script, str(top / "records")], start_new_session=True)
    try:
        # Changes to "records": its creation and first fsync, then a write and an fsync per record. The cut
        # comes before the fsync of record 10: records 0-9 are durable, record 10 was written and is lost.
        fs.arm(name, after=2 + 2 * 10 + 2, pid=writer.pid, match="records")
        assert writer.wait(30) == -signal.SIGKILL
    finally:
        if writer.poll() is None:
            writer.kill()
    armed = fs.armed(name)
    assert armed["fired"] and armed["at"].endswith("/records")
    fs.cut(name)
    assert (top / "records").read_bytes() == b"".join(b"%03d" % i for i in range(10))
