"""Making names durable, not only bytes.

An fsync of a file makes its bytes survive a power cut, not its name: a new file, a rename, a hard link or
an unlink survives only once the directory holding the name is fsynced too, and a new directory only once its
parent is (POSIX; ext4 and XFS often do it on their own, but nothing promises it). Every file the bookie
relies on after a restart is created, renamed and removed through these helpers. They block: call them from
worker threads (or at start-up).
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` (creations, renames, links, unlinks) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """``mkdir -p`` whose result survives a power cut: ``path`` and each of its ancestors up to the file
    system's mount point is made durable in its parent, also those that existed already (an earlier run may
    have created them and stopped before making them durable)."""
    path.mkdir(parents=True, exist_ok=True)
    at = path.absolute()
    while at.parent != at and not os.path.ismount(at):
        fsync_dir(at.parent)
        at = at.parent


def replace(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` (already fsynced) over ``path`` durably: after a cut, ``path`` is the new file or the old
    one, never missing."""
    tmp.replace(path)
    fsync_dir(path.parent)


def write_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (write a temporary file, fsync, rename, fsync the
    directory)."""
    stage_file(path, data)
    fsync_dir(path.parent)


def stage_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, its bytes durable but not yet its name: after a power cut it
    is the new file or the old one, whole, until the next ``fsync_dir`` of its directory makes it the new one.
    For a file whose older version is still correct to find, so that one directory fsync can cover it together
    with a file written next to it."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def unlink(path: Path) -> None:
    """Remove ``path`` (if there) and make the removal durable."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)
