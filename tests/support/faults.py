"""Faults put on real processes' disks, for the scenarios of tests/faults/ (docs/reliability.md).

``small_disk_over(dir, size_mb)``: a size-limited tmpfs (a real file system that answers ENOSPC) mounted
over a stopped bookie's directory, with the directory's files copied in first, so a bookie of either
implementation restarts on it with its cookie and data; on exit the files are copied back and the mount
removed, whatever happened. ``fill(dir, leave)`` fills it up to ``leave`` free bytes, ``free(filler)``
gives the space back. ``flip_bit(file, offset, bit)``: damage at rest.

A fault that cannot be set up here (no permission to mount, say) raises ``FaultSetupError`` naming what was
tried and why it failed: scenarios fail with it, they never skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path


class FaultSetupError(RuntimeError):
    """The fault could not be put in place on this machine; the message says which and why."""


def _run(what: str, command: list[str]) -> None:
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise FaultSetupError(f"{what}: {command[0]} is not installed ({exc})") from None
    except subprocess.CalledProcessError as exc:
        raise FaultSetupError(f"{what}: `{' '.join(command)}` failed ({exc.returncode}): "
                              f"{exc.stderr.strip() or exc.stdout.strip()}") from None


@contextlib.contextmanager
def small_disk_over(directory: Path, size_mb: int) -> Iterator[Path]:
    """Mount a ``size_mb`` tmpfs over ``directory`` (its process stopped), keeping the directory's files."""
    if size_mb < 1:
        raise ValueError(f"a small disk needs at least 1 MiB, not {size_mb}")
    directory.mkdir(parents=True, exist_ok=True)
    aside = directory.with_name(f"{directory.name}.before-small-disk")
    shutil.copytree(directory, aside, symlinks=True)
    _run(f"mounting a {size_mb} MiB tmpfs over {directory}",
         ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(directory)])
    try:
        shutil.copytree(aside, directory, symlinks=True, dirs_exist_ok=True)
        yield directory
    finally:
        # What the process wrote on the small disk goes back to the real directory, for the checks after.
        kept = directory.with_name(f"{directory.name}.on-small-disk")
        with contextlib.suppress(OSError):
            shutil.copytree(directory, kept, symlinks=True)
        subprocess.run(["umount", "-l", str(directory)], check=False, capture_output=True)
        if kept.exists():
            shutil.rmtree(directory, ignore_errors=True)
            kept.rename(directory)
        shutil.rmtree(aside, ignore_errors=True)


def fill(directory: Path, leave: int) -> Path:
    """Fill the file system of ``directory`` until ``leave`` bytes stay free; returns the filler file."""
    filler = directory / f"filler-{uuid.uuid4().hex[:8]}"
    free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
    size = max(0, free - leave)
    with open(filler, "wb") as f:
        chunk = bytes(1 << 20)
        while size > 0:
            try:
                size -= f.write(chunk[:min(size, len(chunk))])
            except OSError:
                break  # the process on this disk took the last bytes meanwhile: full is what we want
    return filler


def free(filler: Path) -> None:
    filler.unlink(missing_ok=True)


def free_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def flip_bit(path: Path, offset: int, bit: int) -> bytes:
    """Flip one bit of ``path`` at byte ``offset`` (bit 0 to 7); returns the byte before the flip."""
    if not 0 <= bit < 8:
        raise ValueError(f"a byte has bits 0 to 7, not {bit}")
    size = path.stat().st_size
    if not 0 <= offset < size:
        raise ValueError(f"offset {offset} is outside {path} ({size} bytes)")
    with open(path, "r+b") as f:
        f.seek(offset)
        before = f.read(1)
        f.seek(offset)
        f.write(bytes([before[0] ^ (1 << bit)]))
        f.flush()
        os.fsync(f.fileno())
    return before
