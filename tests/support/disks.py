"""Small real filesystems for tests that fill a disk on purpose: a size-limited tmpfs mounted under the test's
own directory and unmounted (lazily, so a process still holding a file cannot keep it) when the test ends."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def tmpfs(mount: Path, size_mb: int) -> Iterator[Path]:
    mount.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def used_fraction(path: Path) -> float:
    """How full the filesystem holding ``path`` is, as the bookie's disk checker sees it."""
    st = os.statvfs(path)
    return 1.0 - st.f_bavail / st.f_blocks
