"""journalRemoveFromPageCache (on by default, as in Apache BookKeeper): once synced, the journal's pages leave the
page cache in whole 8 MiB steps, and a rolled journal file leaves it entirely; with the key off they stay. The
journal is read only on replay, so its pages would only push the entry logs' out of memory.

What is in the page cache is read with mincore(2) over a read-only mapping of the file, which does not fault
pages in."""

from __future__ import annotations

import asyncio
import ctypes
import mmap
import os
from pathlib import Path

from bookie.storage.journal import Journal, JournalSettings

from tests.support.raw_client import entry

MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def resident_bytes(path: Path) -> int:
    """Bytes of ``path`` in the page cache."""
    length = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap of {path}")
        try:
            pages = (ctypes.c_ubyte * ((length + PAGE - 1) // PAGE))()
            if _libc.mincore(address, length, pages) != 0:
                raise OSError(ctypes.get_errno(), f"mincore of {path}")
        finally:
            _libc.munmap(address, length)
    finally:
        os.close(fd)
    return sum(page & 1 for page in pages) * PAGE


async def _write(directory: Path, settings: JournalSettings, mib: int) -> list[Path]:
    """``mib`` MiB of 256 KiB entries, every one durable; the journal files, oldest first."""
    journal = Journal(directory, settings)
    journal.start()
    try:
        body = b"j" * (256 * 1024)
        await asyncio.gather(*(journal.append(entry(7, i, body)) for i in range(mib * 4)))
    finally:
        await asyncio.to_thread(journal.close)
    return sorted(journal.current_dir.glob("*.txn"), key=lambda p: int(p.stem, 16))


async def test_synced_journal_pages_leave_the_page_cache_in_8_mib_steps(tmp_path: Path) -> None:
    [journal_file] = await _write(tmp_path, JournalSettings(max_group_wait_s=0.001), 20)
    assert resident_bytes(journal_file) < 8 * MIB + 1 * MIB  # at most the tail short of a whole step


async def test_with_the_key_off_the_synced_pages_stay(tmp_path: Path) -> None:
    [journal_file] = await _write(tmp_path, JournalSettings(max_group_wait_s=0.001, remove_from_page_cache=False), 20)
    assert resident_bytes(journal_file) > 19 * MIB


async def test_a_rolled_journal_file_leaves_the_page_cache(tmp_path: Path) -> None:
    files = await _write(tmp_path, JournalSettings(max_group_wait_s=0.001, max_size_bytes=6 * MIB), 14)
    assert len(files) >= 2
    assert [resident_bytes(f) for f in files[:-1]] == [0] * (len(files) - 1)
