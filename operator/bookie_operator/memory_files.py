"""Secret material as anonymous memory files (memfd, close-on-exec): Python's ssl, and kazoo through it, load
certificates and keys by path only, and a key the operator read from a Secret must never reach a disk. The file
is readable at ``/proc/self/fd/<fd>`` until the caller closes the descriptor."""

from __future__ import annotations

import os
from pathlib import Path


def memory_file(name: str, data: bytes) -> int:
    """A memfd holding ``data``; the caller closes it."""
    fd = os.memfd_create(name)
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    return fd


def path_of(fd: int) -> Path:
    return Path(f"/proc/self/fd/{fd}")
