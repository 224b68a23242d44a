"""Removing a large file without stalling the other writers of its file system.

Unlinking a file of gigabytes frees all of its blocks in one file-system transaction. On ext4 every fsync waits
for the transaction being committed, and with online discard (the ``discard`` mount option, common on cloud
disks) the commit waits for the device to discard the freed blocks as well. Measured on a 2-core machine of
this project whose disk is mounted so: unlinking one 2 GiB journal file held every fdatasync of the disk for
70 to 155 ms when the disk was otherwise quiet, and for 1.4 s under three bookies' 16 KiB adds, during which no
journal on that disk acknowledged an add. Truncating the file from its end in steps frees a few tens of MiB per
transaction instead, and the fsyncs between the steps go through: the same 2 GiB removed in 32 MiB steps held
fdatasync for 9 to 12 ms, and took 0.8 s instead of 0.6 s (``python bench/file_removal_stall.py``;
docs/benchmarks.md, "16 KiB at 3/2/2: the tail").

Every function blocks on the disk: call it from a worker thread.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

STEP_BYTES = 32 * 2**20  # freed per step: the longest fsync stall scales with it (about 0.3 ms per MiB there)
STEP_PAUSE_S = 0.005  # between steps, so that the commits of other writers' fsyncs come between them


def remove_in_steps(path: Path, stop: threading.Event, step_bytes: int = STEP_BYTES,
                    pause_s: float = STEP_PAUSE_S) -> bool:
    """Shorten ``path`` by ``step_bytes`` at a time from its end, pausing ``pause_s`` after each step, then
    unlink it. True once the file is gone (also when it was missing already); False when ``stop`` was set
    first, which leaves the file in place, shorter, for a later removal to finish. A file with other hard links
    is unlinked at once, its content untouched.

    The unlink is not made durable (no fsync of the directory): this is for files that nothing needs once they
    are doomed, such as journal files older than the checkpointed mark; one that reappears after a power cut,
    whole or shortened, is doomed again and removed again."""
    if step_bytes <= 0:
        raise ValueError(f"remove_in_steps: step_bytes must be positive, not {step_bytes}")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        status = os.fstat(fd)
        # A file with another name (a damaged journal kept in <journal>/corrupt/ is a hard link) is only
        # unlinked: its blocks stay in use, and truncating would empty the other name too.
        size = status.st_size if status.st_nlink == 1 else 0
        while size > step_bytes:
            if stop.is_set():
                return False
            size -= step_bytes
            os.ftruncate(fd, size)
            stop.wait(pause_s)
    finally:
        os.close(fd)
    if stop.is_set():
        return False
    path.unlink(missing_ok=True)
    return True
